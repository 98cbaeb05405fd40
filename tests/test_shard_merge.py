"""``--shard K/N`` and ``laya-tui merge`` end to end: the real CLI on the ``ci`` workspace."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from laya_tui.report.document import validate_report
from tests._ci_reports import FLAGS, REGRESS, ci_workspace, run_ci, set_scenario
from tests._util import run_cli


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return ci_workspace(tmp_path_factory.mktemp("shard"))


def probe_facts(report: dict) -> dict:
    """Per probe: status and signal count per kind (timing aside)."""
    out = {}
    for p in report["probes"]:
        kinds: dict[str, int] = {}
        for s in p["signals"]:
            kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
        out[p["id"]] = (p["family"], p["status"], p.get("reason"), kinds)
    return out


def gate_facts(report: dict, drop: tuple[str, ...] = ()) -> dict:
    return {g["name"]: (g["passed"], len(g.get("failures", [])))
            for g in report["gates"] if g["name"] not in drop}


def gate_failures(report: dict, drop: tuple[str, ...] = ()) -> dict:
    """Every gate's failures, order aside (a merge lists probes in id order)."""
    return {g["name"]: sorted(json.dumps(f, sort_keys=True) for f in g.get("failures", []))
            for g in report["gates"] if g["name"] not in drop}


def merge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("merge", *args, cwd=cwd, timeout=120)


def test_three_shards_merged_equal_one_full_run(ws, tmp_path):
    set_scenario(ws, REGRESS)  # failing gates too, so the comparison means something
    full_path = tmp_path / "full.json"
    proc = run_ci(ws, "--json", str(full_path), *FLAGS)
    assert proc.returncode == 1, proc.stderr
    full = json.loads(full_path.read_text())
    parts = []
    for k in (1, 2, 3):
        out = tmp_path / f"part{k}.json"
        proc = run_ci(ws, "--shard", f"{k}/3", "--json", str(out), *FLAGS)
        assert proc.returncode in (0, 1), proc.stderr
        doc = json.loads(out.read_text())
        validate_report(doc)
        assert doc["shard"]["index"] == k and doc["shard"]["count"] == 3
        assert doc["shard"]["selected"] == len(full["probes"])
        assert doc["shard"]["cells"] == len(doc["probes"]) > 0
        parts.append(doc)
    ids = [p["id"] for doc in parts for p in doc["probes"]]
    assert len(ids) == len(set(ids)) and set(ids) == {p["id"] for p in full["probes"]}
    assert len({doc["shard"]["plan"] for doc in parts}) == 1

    out = tmp_path / "merged.json"
    junit, md = tmp_path / "merged.xml", tmp_path / "merged.md"
    proc = merge(*(str(tmp_path / f"part{k}.json") for k in (3, 1, 2)), "--json", str(out),
                 "--junit", str(junit), "--markdown", str(md), *FLAGS, cwd=ws)
    assert proc.returncode == 1, proc.stderr  # the same gates fail as in the full run
    merged = json.loads(out.read_text())
    validate_report(merged)
    assert probe_facts(merged) == probe_facts(full)
    assert gate_facts(merged, drop=("shards",)) == gate_facts(full)
    assert gate_failures(merged, drop=("shards",)) == gate_failures(full)
    assert gate_facts(merged)["shards"] == (True, 0)
    assert merged["summary"]["status"] == full["summary"]["status"]
    assert merged["summary"]["signals"] == full["summary"]["signals"]
    assert merged["summary"]["passed"] is False
    assert [r["shard"]["index"] for r in merged["merged"]["inputs"]] == [3, 1, 2]
    assert {p["host"] for p in merged["probes"]} == set(merged["hosts"])
    assert "<testsuites" in junit.read_text() and "laya-tui: ❌ FAIL" in md.read_text()
    assert "gate ok   shards" in proc.stderr


def test_json_dash_stdout_is_only_the_report(ws):
    set_scenario(ws, {})
    proc = run_cli("--workspace", str(ws), "--headless", "--no-cache", "--shard", "1/2",
                   "--json", "-", cwd=ws, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # one JSON document and nothing else
    validate_report(report)
    assert report["shard"]["index"] == 1 and report["probes"]
    assert proc.stdout.lstrip().startswith("{") and proc.stdout.rstrip().endswith("}")
    # progress and the summary went to stderr
    assert any(p["id"] in proc.stderr for p in report["probes"])
    assert "verdict: PASS" in proc.stderr


def test_merge_json_dash_stdout_is_only_the_report(ws, tmp_path):
    set_scenario(ws, {})
    part = tmp_path / "p.json"
    assert run_ci(ws, "--json", str(part)).returncode == 0
    proc = merge(str(part), "--json", "-", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    validate_report(json.loads(proc.stdout))
    assert "verdict: PASS" in proc.stderr


@pytest.mark.parametrize("flags,message", [
    (["--shard", "0/3"], "--shard 0/3: K must be between 1 and N"),
    (["--shard", "4/3"], "--shard 4/3: K must be between 1 and N"),
    (["--shard", "1/0"], "K must be between 1 and N, and N at least 1"),
    (["--shard", "two"], "--shard expects K/N"),
    (["--durations", "x.json"], "--durations only applies with --shard"),
    (["--shard", "1/2", "--durations", "missing.json"], "does not exist"),
])
def test_bad_shard_flags_exit_2_running_nothing(ws, tmp_path, flags, message):
    ran = tmp_path / "ran.txt"
    proc = run_ci(ws, *flags, "--json", str(tmp_path / "r.json"), env={"LAYA_CI_RAN": str(ran)})
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not ran.exists() and not (tmp_path / "r.json").exists()


def test_an_empty_shard_writes_an_empty_report(ws, tmp_path):
    out = tmp_path / "r.json"
    proc = run_ci(ws, "--only", "ci/numerics", "--shard", "2/2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["probes"] == [] and doc["shard"]["selected"] == 1
    assert "shard 2/2 holds no cell (1 selected)" in proc.stderr


def test_durations_report_and_cache_record_balance_the_split(ws, tmp_path):
    set_scenario(ws, {})
    cache = tmp_path / "cache"
    full = tmp_path / "full.json"
    assert run_cli("--workspace", str(ws), "--headless", "-q", "--cache-dir", str(cache),
                   "--json", str(full), cwd=ws, timeout=120).returncode == 0
    assert (cache / "durations.json").exists()  # an unsharded run records durations
    recorded = json.loads((cache / "durations.json").read_text())
    digests = set()
    for k in (1, 2):
        out = tmp_path / f"c{k}.json"
        proc = run_cli("--workspace", str(ws), "--headless", "-q", "--cache-dir", str(cache),
                       "--shard", f"{k}/2", "--json", str(out), cwd=ws, timeout=120)
        assert proc.returncode == 0, proc.stderr
        shard = json.loads(out.read_text())["shard"]
        assert shard["balance"] == "cache"
        digests.add(shard["plan"])
    assert len(digests) == 1  # the second shard planned the same split as the first
    assert json.loads((cache / "durations.json").read_text()) == recorded  # shards never write
    out = tmp_path / "d.json"
    proc = run_ci(ws, "--shard", "1/2", "--durations", str(full), "--json", str(out))
    shard = json.loads(out.read_text())["shard"]
    assert shard["balance"] == "report" and shard["durations"] == str(full)
    assert run_ci(ws, "--shard", "1/2", "--json", str(out)).returncode == 0
    assert json.loads(out.read_text())["shard"]["balance"] == "counts"  # --no-cache


@pytest.fixture(scope="module")
def base_report(ws, tmp_path_factory):
    set_scenario(ws, {})
    out = tmp_path_factory.mktemp("base") / "r.json"
    assert run_ci(ws, "--json", str(out)).returncode == 0
    return json.loads(out.read_text())


def as_host(report: dict, name: str, ids: set[str] | None = None, torch: str = "2.13.0",
            created: str | None = None) -> dict:
    doc = copy.deepcopy(report)
    doc["environment"]["host"]["hostname"] = name
    doc["environment"]["versions"]["torch"] = torch
    if ids is not None:
        doc["probes"] = [p for p in doc["probes"] if p["id"] in ids]
    if created:
        doc["created"] = created
    return doc


def write(path: Path, doc: dict) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def test_merging_two_hosts_keeps_both_environments(base_report, ws, tmp_path):
    ids = sorted(p["id"] for p in base_report["probes"])
    cpu = write(tmp_path / "cpu.json", as_host(base_report, "cpu-runner", set(ids[:3])))
    gpu = write(tmp_path / "gpu.json",
                as_host(base_report, "gpu-runner", set(ids[3:]), torch="2.13.0+cu128"))
    out = tmp_path / "m.json"
    proc = merge(cpu, gpu, "--json", str(out), cwd=ws)
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(out.read_text())
    validate_report(merged)
    assert set(merged["hosts"]) == {"cpu-runner", "gpu-runner"}
    assert merged["hosts"]["gpu-runner"]["versions"]["torch"] == "2.13.0+cu128"
    assert merged["hosts"]["cpu-runner"]["versions"]["torch"] == "2.13.0"
    assert {p["id"]: p["host"] for p in merged["probes"]} == {
        **{i: "cpu-runner" for i in ids[:3]}, **{i: "gpu-runner" for i in ids[3:]}}
    assert "cpu-runner (3 probes)" in proc.stderr
    # a merged report merges again, keeping hosts and inputs
    again = tmp_path / "again.json"
    extra = write(tmp_path / "mac.json", as_host(base_report, "mac", set(ids[:1])))
    assert merge(str(out), extra, "--json", str(again), cwd=ws).returncode == 0
    doc = json.loads(again.read_text())
    assert set(doc["hosts"]) == {"cpu-runner", "gpu-runner", "mac"}
    assert [r["host"] for r in doc["merged"]["inputs"]] == ["cpu-runner", "gpu-runner", "mac"]
    assert {p["id"]: p["host"] for p in doc["probes"]}[ids[0]] == "cpu-runner"  # identical


def test_same_hostname_different_libraries_are_two_hosts(base_report, ws, tmp_path):
    a = write(tmp_path / "a.json", as_host(base_report, "box", {"ci/numerics"}))
    b = write(tmp_path / "b.json", as_host(base_report, "box", {"ci/llama_forward"}, "2.12"))
    out = tmp_path / "m.json"
    assert merge(a, b, "--json", str(out), cwd=ws).returncode == 0
    assert set(json.loads(out.read_text())["hosts"]) == {"box", "box#2"}


def test_identical_duplicates_merge_silently(base_report, ws, tmp_path):
    a = write(tmp_path / "a.json", as_host(base_report, "h1"))
    twin = as_host(base_report, "h2")
    for p in twin["probes"]:  # a re-run: other timings, paths and log lines
        p["seconds"] += 1.5
        p["log_tail"] = "another run"
        for s in p["signals"]:
            if s["kind"] == "timing":
                s["seconds"] = 9.0
    b = write(tmp_path / "b.json", twin)
    out = tmp_path / "m.json"
    proc = merge(a, b, "--json", str(out), cwd=ws)
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(out.read_text())
    assert len(merged["probes"]) == len(base_report["probes"])
    assert {p["host"] for p in merged["probes"]} == {"h1"}


def test_conflicting_duplicates_exit_2_unless_prefer_newest(base_report, ws, tmp_path):
    old = as_host(base_report, "h", created="2026-01-01T00:00:00Z")
    new = as_host(base_report, "h", created="2026-02-01T00:00:00Z")
    target = next(p for p in new["probes"] if p["id"] == "ci/llama_forward")
    target["signals"][0]["count"] += 5
    a, b = write(tmp_path / "old.json", old), write(tmp_path / "new.json", new)
    out = tmp_path / "m.json"
    proc = merge(a, b, "--json", str(out), cwd=ws)
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "ci/llama_forward" in line and a in line and b in line and "--prefer newest" in line
    assert not out.exists()
    for order in ((a, b), (b, a)):  # newest wins whatever the order
        proc = merge(*order, "--prefer", "newest", "--json", str(out), cwd=ws)
        assert proc.returncode == 0, proc.stderr
        merged = json.loads(out.read_text())
        kept = next(p for p in merged["probes"] if p["id"] == "ci/llama_forward")
        assert kept["signals"][0]["count"] == target["signals"][0]["count"]
        assert "kept" in proc.stderr and "(newer)" in proc.stderr


@pytest.mark.parametrize("schema,message", [
    ("laya-tui.report/4", "has schema laya-tui.report/4; this laya-tui merges only "
                          "laya-tui.report/5"),
    ("laya-tui.report/6", "was written by a newer laya-tui"),
    ("something/1", "is not a laya-tui report"),
])
def test_other_schema_versions_are_refused(base_report, ws, tmp_path, schema, message):
    doc = dict(base_report, schema=schema)
    a = write(tmp_path / "a.json", base_report)
    b = write(tmp_path / "b.json", doc)
    proc = merge(a, b, "--json", str(tmp_path / "m.json"), cwd=ws)
    assert proc.returncode == 2 and message in proc.stderr and b in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_bad_merge_input_exit_2(ws, tmp_path):
    (tmp_path / "bad.json").write_text("{oops")
    for args, message in [((str(tmp_path / "nope.json"),), "does not exist"),
                          ((str(tmp_path / "bad.json"),), "invalid JSON"),
                          ((), "the following arguments are required"),
                          ((str(tmp_path / "bad.json"), "--prefer", "oldest"), "invalid choice"),
                          ((str(tmp_path / "bad.json"), "--html",
                            str(tmp_path / "no-such-dir" / "r.html")), "does not exist")]:
        proc = merge(*args, cwd=ws)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)


def test_a_missing_shard_fails_the_shards_gate(ws, tmp_path):
    set_scenario(ws, {})
    for k in (1, 3):
        assert run_ci(ws, "--shard", f"{k}/3", "--json",
                      str(tmp_path / f"p{k}.json")).returncode == 0
    out, junit = tmp_path / "m.json", tmp_path / "m.xml"
    proc = merge(str(tmp_path / "p1.json"), str(tmp_path / "p3.json"), "--json", str(out),
                 "--junit", str(junit), cwd=ws)
    assert proc.returncode == 1, proc.stderr
    gate = next(g for g in json.loads(out.read_text())["gates"] if g["name"] == "shards")
    assert not gate["passed"] and "shard 2/3 missing" in gate["failures"][0]["message"]
    assert 'type="shards"' in junit.read_text()  # CI shows it among the failed cases


def test_shards_gate_names_a_different_plan():
    from laya_tui.report.merge import shards_gate

    def rec(k, plan):
        return {"file": f"p{k}.json", "host": "h",
                "shard": {"index": k, "count": 2, "plan": plan}}

    assert shards_gate([{"file": "a.json", "host": "h"}]) is None
    same = shards_gate([rec(1, "aa"), rec(2, "aa")])
    assert same is not None and same["passed"]
    gate = shards_gate([rec(1, "aa"), rec(2, "bb")])
    assert gate is not None
    assert not gate["passed"] and len(gate["failures"]) == 2
    assert "same --durations REPORT" in gate["failures"][0]["message"]


def test_merge_evaluates_the_baseline_over_the_whole(base_report, ws, tmp_path):
    ids = sorted(p["id"] for p in base_report["probes"])
    base = write(tmp_path / "base.json", base_report)
    a = write(tmp_path / "a.json", as_host(base_report, "h1", set(ids[:2])))
    b = write(tmp_path / "b.json", as_host(base_report, "h2", set(ids[2:])))
    out = tmp_path / "m.json"
    proc = merge(a, b, "--baseline", base, "--fail-on", "skipped", "--json", str(out), cwd=ws)
    merged = json.loads(out.read_text())
    gates = gate_facts(merged)
    assert gates["baseline"] == (True, 0)
    assert merged["baseline"]["probes"]["compared"] > 0
    assert gates["fail-on:skipped"][0] is False and proc.returncode == 1


def test_shard_and_merge_import_nothing_heavy():
    from tests._util import heavy_imports

    assert heavy_imports("import laya_tui.report.merge, laya_tui.core.shard; "
                         "laya_tui.core.shard.make_plan([('a/b', 'a')], 2)") == []


def test_merge_writes_the_html_page(ws, tmp_path):
    set_scenario(ws, {})
    parts = []
    for k in (1, 2):
        parts.append(str(tmp_path / f"p{k}.json"))
        assert run_ci(ws, "--shard", f"{k}/2", "--json", parts[-1]).returncode == 0
    page = tmp_path / "m.html"
    proc = merge(*parts, "--json", str(tmp_path / "m.json"), "--html", str(page), cwd=ws)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    ids = [p["id"] for p in json.loads((tmp_path / "m.json").read_text())["probes"]]
    assert text.lstrip().lower().startswith("<!doctype html") and ids
    assert all(i in text for i in ids)  # every merged probe is on the page
