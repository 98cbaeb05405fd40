"""``--sarif``: SARIF 2.1.0 of recorded and real reports, valid against the official schema,
read back by a maintained SARIF reader (sarif-tools), results at the lines the libraries
name, levels from the gates, fingerprints that survive an edit above a finding."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import ReportDict
from laya_tui.report.findings import collect_findings
from laya_tui.report.rules import RULES, gb_uri
from laya_tui.report.sarif import (
    FINGERPRINT,
    SRCROOT,
    build_sarif,
    sarif_chunks,
    sarif_schema,
    validate_sarif,
)
from laya_tui.report.sarif_types import Result, SarifLog
from laya_tui.report.sources import Sources
from tests._ci_reports import FLAGS, REGRESS, ci_workspace, run_ci
from tests._signals import site_of
from tests._tui import DEMO_REPORT, DEMO_WS, RECORDED, REPO
from tests._util import run_cli

GB_REPORT = RECORDED / "graph_break_report.json"
GB_WS = RECORDED / "gb_ws"
#: (report, workspace its relative paths are in)
RECORDED_REPORTS = {
    "demo": (DEMO_REPORT, DEMO_WS),
    "graph_breaks": (GB_REPORT, GB_WS),
    "tilelang": (RECORDED / "tilelang_report.json", REPO),
    "mlx": (RECORDED / "mlx_report.json", REPO),
    "aoti_gpu": (RECORDED / "aoti_gpu_report.json", REPO),
    "env": (RECORDED / "env_report.json", REPO),
}


def _sarif(report: ReportDict, ws: Path, **kw: Any) -> SarifLog:
    doc = build_sarif(report, Sources(str(ws), env={}), **kw)
    text = "".join(sarif_chunks(doc))
    back: SarifLog = json.loads(text)
    assert back == doc  # the chunked text is the document
    return back


def _load(name: str) -> tuple[ReportDict, Path]:
    path, ws = RECORDED_REPORTS[name]
    return json.loads(path.read_text()), ws


def _results(doc: SarifLog) -> list[Result]:
    (run,) = doc["runs"]
    return run["results"]


def _at(result: Result) -> tuple[str, int | None]:
    loc = result["locations"][0]["physicalLocation"]
    return loc["artifactLocation"]["uri"], loc.get("region", {}).get("startLine")


def _line(result: Result) -> int:
    """The result's line (asserted there)."""
    line = _at(result)[1]
    assert line is not None, result
    return line


def test_schema_file_is_the_official_one():
    schema = sarif_schema()
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]


@pytest.mark.parametrize("name", sorted(RECORDED_REPORTS))
def test_recorded_reports_validate_and_sarif_tools_reads_the_same_results(name, tmp_path):
    from sarif import loader

    report, ws = _load(name)
    doc = _sarif(report, ws)
    validate_sarif(doc)
    path = tmp_path / f"{name}.sarif"
    path.write_text("".join(sarif_chunks(doc)))
    read = loader.load_sarif_file(str(path))
    results = _results(doc)
    assert read.get_result_count() == len(results)
    records = read.get_records()
    assert [(r["Code"], r["Severity"], r["Location"], str(r["Line"])) for r in records] == [
        (r["ruleId"], r["level"], _at(r)[0], str(_at(r)[1] or 1)) for r in results]
    # every finding with a file in the tree is a result; the rest are counted
    findings = collect_findings(report, Sources(str(ws), env={}))
    props = doc["runs"][0]["properties"]
    assert props["results"] + props["withoutLocation"] == len(findings)
    assert all(r["locations"] for r in results)  # code scanning rejects a result without one


def test_demo_results_at_their_sites_and_levels_from_the_gates():
    report, ws = _load("demo")
    results = _results(_sarif(report, ws))
    by_rule: dict[str, list[Result]] = {}
    for r in results:
        by_rule.setdefault(r["ruleId"], []).append(r)
    # the report's signal sites, relative to %SRCROOT%
    fallbacks = {(r["properties"]["subject"], _at(r)) for r in by_rule["laya/fallback/cpu-op"]}
    expected = {(s["subject"], (site_of(s)["file"], site_of(s)["line"]))
                for p in report["probes"] for s in p["signals"] if s["kind"] == "fallback"}
    assert fallbacks == expected
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"]
               == SRCROOT for r in results)
    assert [_at(r) for r in by_rule["laya/host-bounce/d2d"]] == [("model.py", 7)]
    # error exactly for what the failed gates name
    errors = {(r["ruleId"], r["properties"]["probe"]) for r in results if r["level"] == "error"}
    assert errors == {("laya/tolerance", "explain/tiny_modernbert_forward"),
                      ("laya/probe/crashed", "faults/segfault"),
                      ("laya/probe/timeout", "faults/hangs"),
                      ("laya/probe/raised", "faults/raises")}
    gated = {g["name"] for g in report["gates"] if not g["passed"]}
    assert {n for r in results for n in r["properties"].get("gates", [])} == gated
    raised = by_rule["laya/probe/raised"][0]
    assert _at(raised) == ("probes/demo_faults.py", 35)  # where the probe raised
    assert {r["level"] for r in results if r["level"] != "error"} == {"warning", "note"}
    assert not any("baselineState" in r for r in results)  # no baseline, no states


def test_graph_breaks_use_dynamo_ids_pages_and_the_user_stack():
    torch = pytest.importorskip("torch")
    from torch._dynamo.exc import _load_gb_type_to_gb_id_map, get_gbid_documentation_link

    report, ws = _load("graph_breaks")
    doc = _sarif(report, ws)
    results = _results(doc)
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    gb_type = "Failed to trace builtin operator"
    gb_id = _load_gb_type_to_gb_id_map()[gb_type]
    (printed,) = [r for r in results if r["ruleId"] == f"laya/graph-break/{gb_id}"]
    rule = rules[printed["ruleId"]]
    assert rule["helpUri"] == get_gbid_documentation_link(gb_type) == gb_uri(gb_id)
    assert gb_type in rule["shortDescription"]["text"]
    assert doc["runs"][0]["tool"]["driver"]["rules"][printed["ruleIndex"]]["id"] == rule["id"]
    lines = (GB_WS / "gbmodel.py").read_text().splitlines()
    uri, line = _at(printed)
    assert line is not None
    assert uri == "gbmodel.py" and "print(" in lines[line - 1]
    (caller,) = printed["relatedLocations"]
    assert caller["physicalLocation"]["artifactLocation"]["uri"] == "gbmodel.py"
    assert "log_shape(y)" in lines[caller["physicalLocation"]["region"]["startLine"] - 1]
    assert "forward" in caller["message"]["text"]
    # the data-dependent branch has no id in this torch: the generic rule, at the `if`
    (branch,) = [r for r in results if r["ruleId"] == "laya/graph-break"]
    assert "if y.sum() > 0" in lines[_line(branch) - 1]
    assert "helpUri" not in rules["laya/graph-break"]
    # the compiled cell's frames inside laya-tui are not the user's stack
    assert all(loc["physicalLocation"]["artifactLocation"]["uri"] == "gbmodel.py"
               for r in results for loc in r.get("relatedLocations", []))
    assert torch.__version__


def test_fingerprints_survive_a_line_inserted_above():
    report, _ = _load("graph_breaks")
    ws_copy_report = copy.deepcopy(report)
    for p in ws_copy_report["probes"]:
        for s in p["signals"]:
            site = s.get("site")
            if isinstance(site, dict) and (line := site.get("line")):
                site["line"] = line + 1
            d = s.get("detail") or {}
            if isinstance(d, dict) and isinstance(d.get("stack"), list):  # JSON: a dict
                d["stack"] = [_shift(f) for f in d["stack"]]
    before = _results(_sarif(report, GB_WS))
    after = _results(_sarif(ws_copy_report, GB_WS))
    assert [_line(r) + 1 for r in before] == [_line(r) for r in after]
    assert [r["partialFingerprints"] for r in before] == [r["partialFingerprints"]
                                                          for r in after]
    prints = {r["partialFingerprints"][FINGERPRINT] for r in before}
    assert len(prints) == len(before)  # distinct findings, distinct fingerprints


def _shift(frame: str) -> str:
    head, _, rest = frame.rpartition(":")
    line, paren, func = rest.partition("(")
    return f"{head}:{int(line) + 1}{paren}{func}" if line.isdigit() else frame


def test_source_root_is_the_repository_under_github_actions(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_WS, repo / "sub" / "ws")
    report = json.loads(DEMO_REPORT.read_text())
    doc = build_sarif(report, Sources(str(repo / "sub" / "ws"),
                                      env={"GITHUB_WORKSPACE": str(repo)}))
    validate_sarif(doc)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"][SRCROOT]["uri"] == repo.as_uri() + "/"
    assert {_at(r)[0] for r in run["results"]} >= {"sub/ws/model.py"}
    # a workspace outside GITHUB_WORKSPACE keeps its own root
    elsewhere = build_sarif(report, Sources(str(repo / "sub" / "ws"),
                                            env={"GITHUB_WORKSPACE": str(tmp_path / "x")}))
    assert "model.py" in {_at(r)[0] for r in elsewhere["runs"][0]["results"]}


def test_results_past_the_limit_are_the_least_important_and_counted():
    report, ws = _load("demo")
    full = _results(_sarif(report, ws))
    doc = _sarif(report, ws, max_results=3)
    kept = _results(doc)
    assert len(kept) == 3 and all(r["level"] == "error" for r in kept)
    run = doc["runs"][0]
    assert run["properties"]["resultsLeftOut"] == len(full) - 3
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert f"{len(full) - 3} least important" in note["message"]["text"]
    validate_sarif(doc)


def test_findings_without_a_file_are_counted_not_results(tmp_path):
    report, _ = _load("demo")
    doc = _sarif(report, tmp_path)  # nothing of the demo workspace is here
    run = doc["runs"][0]
    assert run["results"] == []
    assert run["properties"]["withoutLocation"] == run["properties"]["findings"] > 0
    validate_sarif(doc)


# -- real runs: the CLI, gates, the baseline ------------------------------------------------

@pytest.fixture(scope="module")
def ci_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("sarif")
    ws = ci_workspace(d)
    base = run_ci(ws, "--json", str(d / "base.json"), "--sarif", str(d / "base.sarif"))
    assert base.returncode == 0, base.stderr
    (ws / "scenario.json").write_text(json.dumps(REGRESS))
    now = run_ci(ws, "--json", str(d / "now.json"), "--baseline", str(d / "base.json"),
                 "--sarif", str(d / "now.sarif"), *FLAGS)
    assert now.returncode == 1, now.stderr
    return d, ws


def test_cli_sarif_levels_match_the_failed_gates(ci_runs):
    d, _ = ci_runs
    now = json.loads((d / "now.json").read_text())
    doc = json.loads((d / "now.sarif").read_text())
    validate_sarif(doc)
    results = _results(doc)
    failed = {g["name"]: g for g in now["gates"] if not g["passed"]}
    assert set(failed) == {"tolerance", "fail-on:host_bounce", "max:fallback", "baseline"}
    errors = [r for r in results if r["level"] == "error"]
    assert {n for r in errors for n in r["properties"]["gates"]} == set(failed)
    # each signal regression of the baseline gate is an error result of the same identity
    regs = [i for i in failed["baseline"]["failures"] if i["kind"] != "probe"]
    err_keys = {(r["properties"]["probe"], r["properties"]["kind"],
                 r["properties"].get("subject")) for r in errors}
    assert {(i["probe"], i["kind"], i.get("subject")) for i in regs} <= err_keys
    assert all(r["level"] in ("note", "none") for r in results if r not in errors)


def test_cli_baseline_states_on_every_result(ci_runs):
    d, _ = ci_runs
    results = _results(json.loads((d / "now.sarif").read_text()))
    assert all("baselineState" in r for r in results)
    state = {(r["ruleId"], r["properties"].get("subject")): r["baselineState"]
             for r in results}
    assert state[("laya/fallback/cpu-op", "aten::neg")] == "new"
    assert state[("laya/fallback/cpu-op", "aten::mul.out")] == "updated"
    assert state[("laya/host-bounce/d2h", "d2h_copy")] == "updated"
    assert state[("laya/cast", "aten::_to_copy")] == "unchanged"
    assert state[("laya/tolerance", "logits")] == "new"  # it passed in the baseline
    absent = [r for r in results if r["baselineState"] == "absent"]
    assert {r["ruleId"] for r in absent} == {"laya/recompile", "laya/lowering"}
    for r in absent:
        assert r["level"] == "none" and r["kind"] == "pass"
        assert r["suppressions"][0]["status"] == "accepted"
    # the absent result has the fingerprint the baseline run's result had
    base = {r["partialFingerprints"][FINGERPRINT]
            for r in _results(json.loads((d / "base.sarif").read_text()))}
    assert {r["partialFingerprints"][FINGERPRINT] for r in absent} <= base


def test_table_key_and_bad_paths_are_checked_before_any_probe_runs(tmp_path):
    ws = ci_workspace(tmp_path, pyproject='[tool.laya-tui]\nsarif = "out/laya.sarif"\n')
    (ws / "out").mkdir()
    proc = run_ci(ws)
    assert proc.returncode == 0, proc.stderr
    validate_sarif(json.loads((ws / "out" / "laya.sarif").read_text()))
    ran = tmp_path / "ran.txt"
    for args, words in ((("--sarif", str(tmp_path / "nope" / "x.sarif")), "does not exist"),
                        (("--json", str(tmp_path / "r.json"), "--sarif",
                          str(tmp_path / "r.json")), "same file"),
                        (("--json", "-", "--annotations"), "--annotations")):
        proc = run_ci(ws, *args, env={"LAYA_CI_RAN": str(ran)})
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert not ran.exists()  # nothing ran


def test_merge_writes_sarif_of_the_merged_report(ci_runs, tmp_path):
    d, ws = ci_runs
    out = tmp_path / "merged.sarif"
    proc = run_cli("merge", str(d / "base.json"), "--sarif", str(out), "--workspace", str(ws),
                   cwd=ws, env={"GITHUB_STEP_SUMMARY": ""})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    validate_sarif(doc)
    base = json.loads((d / "base.sarif").read_text())
    def ids(d: SarifLog) -> list[tuple[str, str]]:
        return sorted((r["ruleId"], r["partialFingerprints"][FINGERPRINT]) for r in _results(d))

    assert ids(doc) == ids(base)


@pytest.mark.slow
def test_real_user_model_sarif_lines_match_dynamo_and_survive_an_edit(tmp_path):
    """A real compiled run of a user's model: each graph-break result sits at the innermost
    user frame of a reason Dynamo recorded (``torch._dynamo.utils.graph_break_reasons`` of
    ``torch.compile``, what the explain cells read), its callers as related locations; a
    comment inserted at the top moves every line by one and changes no fingerprint
    (~1-2 min: two compiled runs)."""
    torch = pytest.importorskip("torch")
    ws = tmp_path / "ws"
    shutil.copytree(GB_WS, ws)
    env = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "GITHUB_STEP_SUMMARY": ""}

    def run(name: str) -> list[Result]:
        out = tmp_path / f"{name}.sarif"
        proc = run_cli("--workspace", str(ws), "--headless", "--no-cache", "-q",
                       "--only", "explain/*[compile]", "--sarif", str(out), cwd=ws, env=env,
                       timeout=600)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(out.read_text())
        validate_sarif(doc)
        return [r for r in _results(doc) if r["ruleId"].startswith("laya/graph-break")]

    before = run("before")
    import sys

    from torch._dynamo.utils import graph_break_reasons

    sys.path.insert(0, str(ws))
    try:
        import gbmodel

        torch._dynamo.reset()
        model, inputs = gbmodel.build()
        torch.compile(model, backend="eager")(*inputs)
        stacks = [[(os.path.basename(f.filename), f.lineno) for f in r.user_stack]
                  for r in graph_break_reasons]
    finally:
        sys.path.remove(str(ws))
        sys.modules.pop("gbmodel", None)
        torch._dynamo.reset()
    assert {_at(r) for r in before} == {s[-1] for s in stacks}
    callers = {_at(r): {(rel["physicalLocation"]["artifactLocation"]["uri"],
                         rel["physicalLocation"]["region"]["startLine"])
                        for rel in r.get("relatedLocations", [])} for r in before}
    for s in stacks:
        assert set(s[:-1]) <= callers[s[-1]]
    src = ws / "gbmodel.py"
    src.write_text("# a line inserted above every finding\n" + src.read_text())
    after = run("after")
    assert sorted((r["partialFingerprints"][FINGERPRINT], _line(r) + 1) for r in before) == \
        sorted((r["partialFingerprints"][FINGERPRINT], _line(r)) for r in after)


def test_every_fixed_rule_is_declared_even_without_results():
    report, ws = _load("env")
    doc = _sarif(report, ws)
    ids = [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]]
    assert ids[:len(RULES)] == list(RULES)


def test_sarif_and_annotations_take_the_flag_then_the_table_then_the_default(tmp_path):
    from laya_tui.cli.config import settings_from
    from laya_tui.cli.main import build_parser
    from laya_tui.cli.merge import build_parser as merge_parser

    def outputs(*flags: str, merge: bool = False):
        if merge:
            args = merge_parser().parse_args(["r.json", "--workspace", str(tmp_path), *flags])
            return settings_from(args, run=False).outputs
        args = build_parser().parse_args(["--workspace", str(tmp_path), *flags])
        return settings_from(args, run=False).outputs

    assert (outputs().sarif, outputs().annotations) == (None, False)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.laya-tui]\nsarif = "ci/laya.sarif"\nannotations = true\n')
    table = outputs()
    assert (table.sarif, table.annotations) == (str(tmp_path / "ci" / "laya.sarif"), True)
    assert outputs("--sarif", "x.sarif", "--no-annotations").sarif == "x.sarif"
    assert outputs("--no-annotations").annotations is False
    assert outputs("--sarif", "m.sarif", merge=True).sarif == "m.sarif"
    assert table.ci_files() and "--sarif" in table.by_flag()
    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui]\nannotations = "yes"\n')
    from laya_tui.core.errors import UsageError

    with pytest.raises(UsageError, match="annotations: expected true or false"):
        outputs()
