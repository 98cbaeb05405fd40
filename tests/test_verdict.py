"""The verdict tells the truth (issue 28): cells built but not run are counted apart, a
tolerance gate with nothing compared says so, and findings no gate reads are explained in
the summary, the markdown and the JUnit file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import ReportDict, ResultDict
from laya_tui.report.document import build_report, human_summary, validate_report
from laya_tui.report.gates import GateSettings, evaluate_all
from laya_tui.report.junit import build_junit
from laya_tui.report.markdown import build_markdown
from laya_tui.report.verdict import finding_kind, not_run, ungated
from tests._ci_reports import ci_workspace, run_ci, set_scenario
from tests._xml import child


def _cell(i: int, outcome: str, status: str = "ok", **detail: Any) -> ResultDict:
    passed = outcome not in ("lower-failed", "build-failed", "run-failed")
    return {"id": f"tilelang/k{i}[cuda,fp16,gpu]", "family": "tilelang", "status": status,
            "reason": None if passed else "lowering k: bad layout", "seconds": 1.0,
            "cached": False, "deps": [], "log_tail": "",
            "signals": [{"kind": "lowering", "probe": f"tilelang/k{i}[cuda,fp16,gpu]",
                         "subject": f"k{i}", "passed": passed,
                         "detail": {"outcome": outcome, **detail}}]}


def _aoti_failed(i: int) -> ResultDict:
    return {"id": f"aoti/m{i}", "family": "aoti", "status": "failed", "seconds": 2.0,
            "reason": "export failed: torch._dynamo.exc.Unsupported", "cached": False,
            "deps": [], "log_tail": "",
            "signals": [{"kind": "log", "probe": f"aoti/m{i}", "subject": "export",
                         "reason": "Unsupported"}]}


def _report(probes: list[ResultDict], settings: GateSettings | None = None) -> ReportDict:
    gates, extra = evaluate_all(probes, settings)
    report = build_report(probes, seconds=12.0, gates=gates, extra=extra or None)
    validate_report(report)
    return report


def test_built_not_run_cells_are_counted_apart_everywhere():
    probes = [_cell(i, "built", not_run="no GPU") for i in range(9)] + [
        _cell(9, "ran"), _cell(10, "lowered", not_run="no nvcc")]
    assert not_run(probes[0]) == "no GPU" and not_run(probes[9]) is None
    report = _report(probes)
    s = report["summary"]
    assert s["status"]["ok"] == 11  # still ok: every stage it reached passed
    assert s["not_run"] == {"count": 10, "why": {"no GPU": 9, "no nvcc": 1}}
    text = human_summary(report)
    # issue 42: a cell built but not run is never "ok"
    assert "1 ok, 0 findings, 10 built, not run, 0 could not be examined" in text
    assert "verdict: PASS · 0 findings · 10 built, not run (no GPU 9, no nvcc 1)" in text
    assert "gate ok   tolerance (nothing compared)" in text
    tol = next(g for g in report["gates"] if g["name"] == "tolerance")
    assert tol["passed"] and tol["compared"] == 0
    assert tol["description"].endswith(": nothing was compared")
    md = build_markdown(report)
    assert "PASS · 0 findings · 10 built, not run (no GPU 9, no nvcc 1)" in md
    assert "10 ◐ built, not run, 1 ✓ ok" in md
    assert "| `tolerance` | ✅ pass | nothing compared |" in md
    root = ET.fromstring(build_junit(report))
    skipped = [child(c, "skipped").get("message") for c in root.iter("testcase")
               if c.find("skipped") is not None]
    assert skipped.count("◐ built, not run: no GPU") == 9 and len(skipped) == 10
    assert child(root, "testsuite").get("skipped") == "10"
    # one cell that ran and compared: the gate counts it
    probes[9]["signals"].append({"kind": "tolerance", "probe": probes[9]["id"],
                                 "subject": "out", "value": 0.0, "limit": 1e-3, "passed": True})
    assert "(nothing compared)" not in human_summary(_report(probes))


def test_one_summary_line_for_a_single_cause():
    report = _report([_cell(i, "built", not_run="no GPU") for i in range(9)])
    assert "· 9 built, not run (no GPU) ·" in human_summary(report)
    assert not_run(_cell(0, "built")) == "not run"  # an older report without the cause


def test_ungated_findings_are_explained_with_the_ways_to_gate_them():
    probes = [_cell(i, "lower-failed", status="failed") for i in range(9)] + [
        _aoti_failed(i) for i in range(5)] + [_cell(20, "ran")]
    assert finding_kind(probes[0]) == "lowering" and finding_kind(probes[9]) == "aoti"
    report = _report(probes)
    assert report["summary"]["passed"] is True
    assert report["summary"]["ungated"] == {"count": 14, "kinds": {"lowering": 9, "aoti": 5}}
    text = human_summary(report)
    line = next(ln for ln in text.splitlines() if "no gate reads" in ln)
    assert line.startswith("  14 findings no gate reads (lowering 9, aoti 5): they do not "
                           "fail the run; to fail on them: --fail-on failed, or record a "
                           "baseline")
    assert text.splitlines().index(line) == len(text.splitlines()) - 2  # beside the verdict
    assert text.splitlines()[-1] == ("  verdict: PASS · 14 findings not gated · 0 could not be "
                                      "examined · gate them: --fail-on failed, or a baseline")
    md = build_markdown(report)
    assert "**14 findings no gate reads (lowering 9, aoti 5)**" in md
    assert "`--fail-on failed`" in md and "`--baseline base.json`" in md
    assert "| ✗ finding | `aoti/m0` | export failed: torch._dynamo.exc.Unsupported |" in md
    # gated: nothing is left unread
    gated = _report(probes, GateSettings(fail_on=("failed",)))
    assert "ungated" not in gated["summary"] and gated["summary"]["passed"] is False
    assert "no gate reads" not in human_summary(gated)
    some = _report(probes, GateSettings(fail_on=("lowering",)))
    assert some["summary"]["ungated"] == {"count": 5, "kinds": {"aoti": 5}}
    assert ungated(probes, [{"name": "baseline", "passed": True}]) == {}
    assert ungated(probes, [{"name": "max:failed", "passed": True}]) == {}


def test_a_real_run_says_it_beside_the_verdict(tmp_path):
    ws = ci_workspace(tmp_path)
    set_scenario(ws, {})  # one bf16 lowering fails: a finding no default gate reads
    proc = run_ci(ws, "--markdown", str(tmp_path / "s.md"))
    assert proc.returncode == 0, proc.stderr
    assert "  1 finding no gate reads (lowering 1): it does not fail the run; to fail on it: " \
        "--fail-on failed" in proc.stderr
    assert "ci/gemm_kernel[c,bf16,gpu]" in (tmp_path / "s.md").read_text()
    proc = run_ci(ws, "--fail-on", "failed")
    assert proc.returncode == 1 and "no gate reads" not in proc.stderr


def test_an_older_report_still_names_no_gpu():
    cell = _cell(0, "built", run_skipped="no CUDA device here (torch.cuda.is_available() is "
                 "False): lowered and built with nvcc, not run")
    assert not_run(cell) == "no GPU"


@pytest.mark.asyncio
async def test_the_dashboard_header_counts_them_and_the_ungated_findings():
    from tests._tui import SIZE, TILELANG_REPORT, recorded_app

    app = recorded_app(report=TILELANG_REPORT)
    async with app.run_test(size=SIZE) as pilot:
        await app.settled()
        await pilot.pause()
        main = app.main_screen
        status = str(main.query_one("#summary-status").render())
        gates = str(main.query_one("#summary-gates").render())
        from laya_tui.tui.widgets.summary import SummaryText

        text = main.query_one(SummaryText)
        verdict = text.lines[2]
        start = verdict.plain.index(" PASS ")
        style = next(sp.style for sp in verdict.spans if sp.start == start)
        warn = text.get_component_rich_style("summary--warn", partial=True)
        green = text.get_component_rich_style("summary--pass", partial=True)
    # not plain green while 14 findings are there: the warning colour
    assert style == warn and warn != green
    # the recorded run: 20 cuda cells built with nvcc on a machine without a GPU, and 14
    # failed lowerings that no default gate reads
    # issue 42: the 20 cells built but not run are not counted ok
    assert "ok 6  finding 14  built, not run 20  skipped 20" in status
    assert "PASS   ·  14 findings not gated · 20 built, not run (no GPU) · 0 could not be " \
        "examined · gate them: --fail-on failed, or a baseline" in gates


def test_the_html_page_carries_the_same_notes():
    import json

    from laya_tui.report.views.page import page_data
    from tests._tui import TILELANG_REPORT

    saved = json.loads(TILELANG_REPORT.read_text())
    report = _report(saved["probes"])  # summary rebuilt as a run writes it now
    notes = page_data(report)["header"]["notes"]
    assert notes[0] == "20 built, not run: no GPU: nothing compared for them"
    assert notes[1].startswith("14 findings no gate reads (lowering 14): they do not fail")
    js = (Path(__file__).parents[1] / "laya_tui" / "report" / "page.js").read_text()
    assert "h.notes" in js


def test_the_html_header_shows_the_notes_in_a_browser(tmp_path):
    import json

    from laya_tui.cli.main import main
    from tests._browser import INSTALL_HINT, Browser, find_chromium
    from tests._tui import REPO, TILELANG_REPORT

    chromium = find_chromium()
    if chromium is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    report = tmp_path / "r.json"
    report.write_text(json.dumps(_report(json.loads(TILELANG_REPORT.read_text())["probes"])))
    page = tmp_path / "page.html"
    assert main(["show", str(report), "--html", str(page), "--workspace", str(REPO)]) == 0
    with Browser(chromium) as b:
        b.open(page.as_uri())
        assert b.console_errors() == []
        header = b.eval("document.querySelector('header').innerText")
    assert "20 built, not run: no GPU: nothing compared for them" in header
    assert "14 findings no gate reads (lowering 14)" in header
