"""Baselines that cannot be trusted are input errors: one line, exit 2, nothing runs."""

from __future__ import annotations

import json

import pytest

from laya_tui.core.errors import UsageError
from laya_tui.report.baseline import load_baseline, parse_baseline
from tests._ci_reports import ci_workspace, real_report, run_ci


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("base")
    ws = ci_workspace(d)
    out = d / "base.json"
    report = real_report(ws, out)
    return ws, out, report


def _error(text: str, tmp_path) -> str:
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(UsageError) as exc:
        load_baseline(str(path))
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_real_report_loads(base):
    _, out, report = base
    b = load_baseline(str(out))
    assert b.report == report and b.created == report["created"]


@pytest.mark.parametrize("fraction", [0.01, 0.3, 0.5, 0.9, 0.999])
def test_truncated_report(base, tmp_path, fraction):
    text = base[1].read_text().rstrip()
    cut = text[: max(1, int(len(text) * fraction))]
    assert "truncated" in _error(cut, tmp_path)


def test_empty_file(tmp_path):
    assert "empty (truncated?)" in _error("", tmp_path)
    assert "empty" in _error("  \n", tmp_path)


@pytest.mark.parametrize("text,needle", [
    ("not json at all", "not a laya-tui report (invalid JSON"),
    ("<testsuites></testsuites>", "not a laya-tui report (invalid JSON"),
    ("[1, 2, 3]", "a JSON list, not an object"),
    ('"a string"', "a JSON str, not an object"),
    ("{}", 'no "schema": "laya-tui.report/5" field'),
    ('{"schema": "pytest-report"}', "not a laya-tui report"),
    ('{"schema": "laya-tui.report/x"}', "unknown schema"),
    ('{"schema": "laya-tui.report/0", "probes": []}', "old schema laya-tui.report/0"),
    ('{"schema": "laya-tui.report/1", "tool": {"name": "other"}}', "written by 'other'"),
    ('{"schema": "laya-tui.report/1", "probes": []}', "incomplete (no environment, summary,"
                                                       " gates; truncated?)"),
])
def test_not_a_laya_report(tmp_path, text, needle):
    assert needle in _error(text, tmp_path)


def test_future_schema(base, tmp_path):
    doc = json.loads(base[1].read_text())
    doc["schema"] = "laya-tui.report/6"
    msg = _error(json.dumps(doc), tmp_path)
    assert "newer laya-tui (schema laya-tui.report/6; this laya-tui reads laya-tui.report/5)" \
        in msg


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d.update(probes={"a": 1}), '"probes" is not a list'),
    (lambda d: d["probes"][0].pop("id"), "probe #0 is malformed"),
    (lambda d: d["probes"][0].update(status="exploded"), "probe #0 is malformed"),
    (lambda d: d["probes"][0].update(signals="x"), "probe #0 is malformed"),
    (lambda d: d["probes"][0]["signals"].append({"kind": "vibes"}), "no known kind"),
    (lambda d: d["probes"][0]["signals"].append("fallback"), "no known kind"),
    (lambda d: d["probes"][0]["signals"].append({"kind": "fallback", "count": -1}),
     "count must be a whole number >= 0"),
    (lambda d: d["probes"][0]["signals"].append({"kind": "host_bounce", "bytes": "4k"}),
     "bytes must be a whole number >= 0"),
])
def test_malformed_report(base, tmp_path, mutate, needle):
    doc = json.loads(base[1].read_text())
    mutate(doc)
    assert needle in _error(json.dumps(doc), tmp_path)


def test_not_utf8_folder_missing(tmp_path):
    bad = tmp_path / "bin.json"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UsageError, match="not UTF-8"):
        load_baseline(str(bad))
    with pytest.raises(UsageError, match="is a folder"):
        load_baseline(str(tmp_path))
    with pytest.raises(UsageError, match="does not exist"):
        load_baseline(str(tmp_path / "nope.json"))
    with pytest.raises(UsageError, match="nested too deeply"):
        parse_baseline("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize("kind", ["truncated", "future", "not-laya", "missing"])
def test_cli_bad_baseline_runs_nothing_and_keeps_outputs(base, tmp_path, kind):
    ws, out, _ = base
    text = out.read_text()
    bad = tmp_path / "bad.json"
    if kind == "truncated":
        bad.write_text(text[: len(text) // 2])
    elif kind == "future":
        bad.write_text(text.replace('"laya-tui.report/5"', '"laya-tui.report/6"', 1))
    elif kind == "not-laya":
        bad.write_text('{"tests": 3}')
    marker = tmp_path / "ran"
    keep = {name: tmp_path / name for name in ("r.json", "r.xml", "r.md")}
    for p in keep.values():
        p.write_text("old")
    proc = run_ci(ws, "--baseline", str(bad), "--json", str(keep["r.json"]),
                  "--junit", str(keep["r.xml"]), "--markdown", str(keep["r.md"]),
                  env={"LAYA_CI_RAN": str(marker)})
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("laya-tui: error: baseline "), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists()  # no probe ran
    assert all(p.read_text() == "old" for p in keep.values())


def test_cli_good_baseline_runs(base, tmp_path):
    ws, out, _ = base
    marker = tmp_path / "ran"
    proc = run_ci(ws, "--baseline", str(out), env={"LAYA_CI_RAN": str(marker)})
    assert proc.returncode == 0, proc.stderr
    assert "ci/numerics" in marker.read_text().split()
