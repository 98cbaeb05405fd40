"""``laya-tui import`` / ``show TRACE_DIR``: a TORCH_TRACE log written by torch in this test
(two graph breaks, two input shapes, a failed torch.export) read back and checked against
what TORCH_LOGS printed for the same run; the report works in the dashboard, HTML, baseline
and diff; a truncated log, a garbled line and an unknown record type lose only themselves."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from laya_tui.core.tracelog import LogStats, read_records, trace_files
from laya_tui.report.document import validate_report
from laya_tui.report.trace_import import trace_report
from tests._signals import detail_of
from tests._torch_trace import run_model_a, torch_logs_graph_breaks, torch_logs_recompiles
from tests._util import run_cli

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    return run_model_a(tmp_path_factory.mktemp("model_a"))


@pytest.fixture(scope="module")
def report_a(run_a):
    report = trace_report(str(run_a["trace"]))
    validate_report(report)
    return report


def _signals(report, kind, subject=None):
    return [(p["id"], s) for p in report["probes"] for s in p["signals"]
            if s["kind"] == kind and (subject is None or s.get("subject") == subject)]


def _line(path, n):
    return Path(path).read_text().splitlines()[n - 1].strip()


def test_graph_breaks_are_the_ones_torch_logs_printed(run_a, report_a):
    at, ids = torch_logs_graph_breaks(run_a["stderr"])
    assert sum(at.values()) == run_a["graph_break_reasons"] == 4  # 2 breaks x 2 shapes
    breaks = _signals(report_a, "fallback", "graph break")
    got_at: Counter[tuple[str, int]] = Counter()
    got_ids: Counter[str] = Counter()
    for _, s in breaks:
        got_at[(s["site"]["file"], s["site"]["line"])] += s["count"]
        got_ids[s["detail"]["graph_break_id"]] += s["count"]
        assert s["site"]["func"] == "f"
        assert s["detail"]["documentation"].endswith(
            f"gb{s['detail']['graph_break_id'][2:]}.html")
        assert len(s["detail"]["compile_ids"]) == s["count"]
    assert got_at == at
    assert got_ids == ids
    by_line = {s["site"]["line"]: s for _, s in breaks}
    assert by_line[9]["reason"] == "Data-dependent branching"
    assert by_line[11]["reason"] == "Failed to trace builtin operator"
    assert "if y.sum() > 0" in _line(run_a["script"], 9)


def test_recompiles_carry_the_failing_guard_and_where_it_was_installed(run_a, report_a):
    logged = torch_logs_recompiles(run_a["stderr"])
    assert len(logged) == 3  # f and its two resume functions, each on the second shape
    recs = _signals(report_a, "recompile")
    assert sorted(s["detail"]["compile_id"] for _, s in recs) == sorted(
        r["compile_id"] for r in logged)
    by_cid = {s["detail"]["compile_id"]: s for _, s in recs}
    for r in logged:
        s = by_cid[r["compile_id"]]
        failed, _, guard = r["guards"][0].partition(": ")
        assert s["reason"] == guard
        assert s["detail"]["failed_compile_id"] == failed
        assert s["subject"].startswith(r["function"] + " (")
        origin = s["detail"]["guard_origin"]
        assert origin["file"] == run_a["script"]  # resolved from torch's shortened name
        assert origin["code"] == _line(run_a["script"], origin["line"]).split("  #")[0]
        assert s["site"] == {k: origin[k] for k in ("file", "line", "func")}
    # f's guard on x was installed by its first use of x
    assert by_cid["0/1"]["site"]["line"] == 8 and "x.sin()" in _line(run_a["script"], 8)
    # a frame that recompiled is a finding (never "ran, nothing failed"), with its guard;
    # exactly the frames torch logged recompiling
    cells = {p["id"]: p for p in report_a["probes"]}
    recompiled = {probe for probe, _ in recs}
    for probe in recompiled:
        assert cells[probe]["status"] == "failed"
        assert cells[probe]["reason"].startswith("recompiled 1 time(s): ")
    assert all(p["status"] == "ok" for pid, p in cells.items()
               if "/frame" in pid and pid not in recompiled)
    assert len(recompiled) == len({r["function"] + r["compile_id"].split("/")[0]
                                  for r in logged})


def test_compiles_carry_dynamos_seconds_per_frame(run_a, report_a):
    seconds = {m["compile_id"]: m["seconds"] for m in run_a["metrics"]}
    got = {s["detail"]["compile_id"]: s["seconds"]
           for _, s in _signals(report_a, "compile") + _signals(report_a, "recompile")}
    assert got == {k: round(v, 6) for k, v in seconds.items()}
    firsts = _signals(report_a, "compile")
    assert sorted(s["detail"]["compile_id"] for _, s in firsts) == ["0/0", "1/0", "2/0"]
    cells = {p["id"] for p in report_a["probes"]}
    assert {"trace/proc0", "trace/proc0/frame0", "trace/proc0/frame1", "trace/proc0/frame2",
            "trace/proc0/export"} == cells
    frame0 = next(p for p in report_a["probes"] if p["id"] == "trace/proc0/frame0")
    assert frame0["file"] == run_a["script"] and frame0["params"]["frame_id"] == 0
    assert frame0["seconds"] == pytest.approx(seconds["0/0"] + seconds["0/1"], abs=1e-5)


def test_a_failed_export_is_a_failed_cell_at_the_line_torch_blames(run_a, report_a):
    err = run_a["export_error"]
    assert err["type"] == "GuardOnDataDependentSymNode"
    # torch's message: "The following call raised this error:\n  File "...", line 22, in forward"
    blamed = err["message"].split("The following call raised this error:")[1].splitlines()[1]
    cell = next(p for p in report_a["probes"] if p["id"] == "trace/proc0/export")
    assert cell["status"] == "failed"
    (sig,) = cell["signals"]
    assert f'File "{sig["site"]["file"]}", line {sig["site"]["line"]}, in forward' in blamed
    assert sig["detail"]["export_call"]["code"].startswith("torch.export.export(M()")
    assert cell["reason"].startswith("torch.export failed")


def test_the_log_cell_counts_what_was_read(run_a, report_a):
    cell = report_a["probes"][0]
    assert cell["id"] == "trace/proc0"
    records = next(s for s in cell["signals"] if s.get("subject") == "records")
    stats = LogStats("x")
    n = sum(1 for _ in read_records(trace_files(str(run_a["trace"]))[0], stats))
    assert records["detail"]["records"] == stats.records == n + stats.by_type["str"]
    assert records["detail"]["unknown"] == {} and records["detail"]["bad"] == 0
    env = next(s for s in cell["signals"] if s["kind"] == "environment")
    import torch

    assert env["value"] == torch.__version__
    assert report_a["imported"]["files"][0]["torch"] == torch.__version__


# -- the CLI, and everything downstream working unchanged ---------------------------------

def test_import_show_html_baseline_and_diff(run_a, tmp_path):
    trace = str(run_a["trace"])
    out = run_cli("import", trace, "--json", str(tmp_path / "a.json"), "--junit",
                  str(tmp_path / "a.xml"), "--html", str(tmp_path / "a.html"), "--markdown",
                  str(tmp_path / "a.md"), "--trace", str(tmp_path / "timeline.json"))
    assert out.returncode == 0, out.stderr
    report = json.loads((tmp_path / "a.json").read_text())
    validate_report(report)
    assert "graph break" in (tmp_path / "a.html").read_text()
    assert 'name="proc0/frame0" classname="trace"' in (tmp_path / "a.xml").read_text()
    timeline = json.loads((tmp_path / "timeline.json").read_text())
    assert any(e.get("name") == "trace/proc0/frame0" for e in timeline["traceEvents"])
    gated = run_cli("import", trace, "--fail-on", "recompile")
    assert gated.returncode == 1 and "fail-on:recompile" in gated.stderr
    again = run_cli("import", trace, "--baseline", str(tmp_path / "a.json"), "--json",
                    str(tmp_path / "b.json"))
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "b.json").read_text())["baseline"]["regressions"] == []
    diff = run_cli("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert diff.returncode == 0, diff.stderr
    # the call sites are in the traced program's folder: that is the workspace here
    sarif = run_cli("import", trace, "--sarif", str(tmp_path / "a.sarif"), "--workspace",
                    str(Path(run_a["script"]).parent))
    assert sarif.returncode == 0, sarif.stderr
    results = json.loads((tmp_path / "a.sarif").read_text())["runs"][0]["results"]
    lines = {r["ruleId"]: (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                           r["locations"][0]["physicalLocation"]["region"]["startLine"])
             for r in results if "graph-break" in r["ruleId"]}
    assert lines == {"laya/graph-break/GB0170": ("model_a.py", 9),
                     "laya/graph-break/GB0059": ("model_a.py", 11)}
    shown = run_cli("show", trace, "--headless")
    assert shown.returncode == 0 and shown.stdout.startswith(f"TORCH_TRACE {trace}")


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.log").write_text("not a trace\n")
    for args in (["import", str(tmp_path / "missing")], ["import", str(tmp_path / "empty")],
                 ["import", str(tmp_path / "junk")], ["show", str(tmp_path / "empty"),
                                                     "--headless"]):
        out = run_cli(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


@pytest.mark.asyncio
async def test_the_dashboard_shows_every_cell_and_signal(run_a, report_a, tmp_path):
    """What ``laya-tui show TRACE_DIR`` runs on a terminal: the folder read after the first
    frame, every cell and signal shown, the label naming the logs."""
    from laya_tui.cli.show import build_lazy_app, load_trace

    app = build_lazy_app(str(run_a["trace"]), workspace=str(tmp_path), load=load_trace)
    assert app.report_info["report"] is None
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.app.settled()
        await pilot.pause()
        assert app.exit_error is None
        assert list(app.model.probes) == [p["id"] for p in report_a["probes"]]
        assert len(app.model.rows) == sum(len(p["signals"]) for p in report_a["probes"])
        assert app.model.probes["trace/proc0/export"].status == "failed"
        assert app.model.source.startswith(f"TORCH_TRACE {run_a['trace']}: 1 log(s) (proc0)")


# -- damaged logs ---------------------------------------------------------------------------

def _copy_log(run_a, dest: Path) -> Path:
    dest.mkdir()
    src = trace_files(str(run_a["trace"]))[0]
    target = dest / Path(src).name
    shutil.copy(src, target)
    return target


def _counts(report):
    return Counter((s["kind"], s.get("subject") if s["kind"] != "compile" else "",
                    s.get("reason")) for p in report["probes"] for s in p["signals"]
                   if s["kind"] in ("compile", "recompile", "fallback"))


def _lines(path: Path) -> list[bytes]:
    """The log's lines as the reader sees them (split on newlines only)."""
    return io.BytesIO(path.read_bytes()).readlines()


def _record_lines(path: Path, name: str) -> list[int]:
    return [i for i, ln in enumerate(_lines(path), 1) if f'"name": "{name}"'.encode() in ln]


def _first_record_line(lines: list[bytes], after: int = 0) -> int:
    """The index of the first record line (not a payload line) from ``after`` on."""
    return next(i for i in range(after, len(lines)) if lines[i][:1] in b"VIWEC")


def test_a_log_cut_inside_a_payload_loses_that_record_only(run_a, report_a, tmp_path):
    log = _copy_log(run_a, tmp_path / "cut")
    lines = _lines(log)
    gb = _record_lines(log, "dynamo_graph_break_reason")[-1]  # the last graph break record
    payload = 0
    while gb + payload < len(lines) and lines[gb + payload].startswith(b"\t"):
        payload += 1
    assert payload > 2
    log.write_bytes(b"".join(lines[:gb + payload // 2]))  # the log ends mid-payload
    report = trace_report(str(log.parent))
    validate_report(report)
    files = report["imported"]["files"]
    assert files[0]["bad"] == 1
    records = next(s for s in report["probes"][0]["signals"] if s.get("subject") == "records")
    assert detail_of(records)["bad_lines"][0]["line"] == gb
    assert "md5" in detail_of(records)["bad_lines"][0]["why"]
    before = sum(s["count"] for _, s in _signals(report_a, "fallback", "graph break"))
    after = sum(s["count"] for _, s in _signals(report, "fallback", "graph break"))
    assert after == before - 1


def test_a_truncated_last_line_and_a_garbled_line_lose_only_themselves(run_a, report_a,
                                                                        tmp_path):
    log = _copy_log(run_a, tmp_path / "garbled")
    lines = _lines(log)
    chromium = next(i for i, ln in enumerate(lines) if b'{"chromium_event"' in ln)
    lines[chromium] = b"\x00\xff\xfe garbage {{{ not a record\n"  # not even UTF-8
    rec = lines[_first_record_line(lines, 1)]
    lines.append(rec[: len(rec) // 2])  # a record cut mid-line, no newline
    log.write_bytes(b"".join(lines))
    report = trace_report(str(log.parent))
    validate_report(report)
    assert report["imported"]["files"][0]["bad"] == 2
    assert _counts(report) == _counts(report_a)
    bad = detail_of(next(s for s in report["probes"][0]["signals"]
                         if s.get("subject") == "records"))["bad_lines"]
    assert [b["line"] for b in bad] == [chromium + 1, len(lines)]


def test_an_unknown_record_type_is_counted_never_fatal(run_a, report_a, tmp_path):
    log = _copy_log(run_a, tmp_path / "unknown")
    lines = _lines(log)
    at = _first_record_line(lines, 1)
    prefix = lines[at].split(b"] ", 1)[0] + b"] "
    new = [prefix + json.dumps({"future_record": {"what": "a torch from next year"},
                                "frame_id": 0, "frame_compile_id": 0, "attempt": 0,
                                "has_payload": "0" * 32}).encode() + b"\n",
           b"\tpayload text\n", prefix + json.dumps({"another_new_one": {}}).encode() + b"\n"]
    log.write_bytes(b"".join(lines[:at] + new + lines[at:]))
    report = trace_report(str(log.parent))
    validate_report(report)
    files = report["imported"]["files"]
    assert files[0]["unknown"] == 2 and files[0]["bad"] == 0
    records = next(s for s in report["probes"][0]["signals"] if s.get("subject") == "records")
    assert detail_of(records)["unknown"] == {"future_record": 1, "another_new_one": 1}
    assert records["reason"] is not None
    assert "2 of 2 record type(s) this version does not know" in records["reason"]
    assert _counts(report) == _counts(report_a)
