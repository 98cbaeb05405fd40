"""Display defects found in a QA pass: each output reads the same words for the same fact."""

from __future__ import annotations

import pytest

from laya_tui.families.explain import precision_plan as pp
from laya_tui.report.views import numerics as nv
from laya_tui.report.views.detail import numerics_sections


def _plan(status: str, reason: str = "") -> dict:
    return {"status": status, "limit": 0.05, "forwards": 2, "max_forwards": 40,
            "seconds": 0.09, "reason": reason}


def test_every_plan_outcome_reads_in_words_in_the_drill_down_and_the_text():
    statuses = (pp.FOUND, pp.NOT_NEEDED, pp.NO_PLAN, pp.NOT_PRECISION, pp.BUDGET,
                pp.SKIPPED)
    for status in statuses:
        facts = dict(nv.plan_facts(_plan(status)))  # type: ignore[arg-type]
        assert facts["outcome"] == nv.PLAN_OUTCOMES[status]
        assert "_" not in facts["outcome"] and status not in ("", facts["outcome"])
        if status != pp.FOUND:  # a plan without a reason says its outcome in words
            assert nv.plan_text(_plan(status)) == nv.PLAN_OUTCOMES[status]  # type: ignore[arg-type]
    assert nv.PLAN_OUTCOMES[pp.NOT_PRECISION] == "fails in fp32 too: not a precision problem"
    sections = repr(numerics_sections({"precision_plan": _plan(pp.NO_PLAN, "why")}))
    assert "no_plan" not in sections and nv.PLAN_OUTCOMES[pp.NO_PLAN] in sections


@pytest.mark.asyncio
async def test_the_verdict_counts_show_at_80_columns_before_the_advice():
    from tests._tui import REPO, TILELANG_REPORT, recorded_app, screen_lines

    app = recorded_app(report=TILELANG_REPORT, workspace=str(REPO))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.settled()
        await pilot.pause()
        line = next(ln for ln in screen_lines(app) if " PASS " in ln)
    assert "14 findings not gated · 20 built, not run · 0 could not be examined" in line, line


def test_a_tolerance_value_reads_the_same_in_the_gate_the_annotation_and_the_summary():
    from laya_tui.api import _failure_text
    from laya_tui.report.annotations import finding_command
    from laya_tui.report.findings import collect_findings
    from laya_tui.report.sources import Sources
    from laya_tui.report.verdict import describe_failure

    sig = {"kind": "tolerance", "subject": "bf16 vs fp32 cpu output", "value": 0.90849,
           "limit": 0.05, "passed": False}
    want = "tolerance bf16 vs fp32 cpu output: 0.9085 > limit 0.05"
    assert _failure_text(sig) == want  # type: ignore[arg-type]
    assert describe_failure("tolerance", {"probe": "p", **sig}) == want
    report = {"probes": [{"id": "explain/p", "family": "explain", "status": "failed",
                          "signals": [sig]}],
              "gates": [{"name": "tolerance", "passed": False,
                         "failures": [{"probe": "explain/p", **sig}]}]}
    found = collect_findings(report, Sources(".", env={}))  # type: ignore[arg-type]
    cmds = [finding_command(f) for f in found]
    assert any(want in c for c in cmds), cmds


#: Headers whose word is broken across two lines (``coun`` / ``t``), by the characters' tops.
_BROKEN_HEADERS = r"""(() => { const out = [];
  for (const th of document.querySelectorAll('th')) {
    if (!th.checkVisibility()) continue;
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) { const tops = [];
      for (let i = 0; i < node.length; i++) {
        const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
        const rect = r.getBoundingClientRect();
        tops.push([node.data[i], Math.round(rect.top)]);
      }
    for (let i = 1; i < tops.length; i++) {
      if (/\w/.test(tops[i][0]) && /\w/.test(tops[i - 1][0]) && tops[i][1] !== tops[i - 1][1])
        out.push(th.innerText);
    } }
  }
  return out; })()"""


def test_no_table_header_breaks_inside_a_word_at_1280_px(tmp_path):
    from laya_tui.cli.main import main
    from tests._browser import INSTALL_HINT, Browser, find_chromium
    from tests._tui import RECORDED, REPO

    chromium = find_chromium()
    if chromium is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    out = tmp_path / "page.html"
    assert main(["show", str(RECORDED / "demo_report.json"), "--html", str(out), "--workspace",
                 str(REPO)]) == 0
    with Browser(chromium, width=1280) as b:
        b.open(out.as_uri())
        assert b.eval("window.innerWidth") == 1280
        assert b.eval("document.querySelectorAll('table.signals th').length") > 2
        assert b.eval(_BROKEN_HEADERS) == []


@pytest.mark.asyncio
async def test_a_cells_per_input_set_rows_differ_at_80_columns(tmp_path):
    import json

    from laya_tui.tui.widgets.table_layout import fit_cell
    from tests._tui import DEMO_REPORT, recorded_app

    report = json.loads(DEMO_REPORT.read_text())
    probe = next(p for p in report["probes"] if p["id"] == "explain/tiny_llama_forward")
    subjects = [f"set {i}/2 bfloat16 vs fp32 cpu output gap table" for i in (1, 2)]
    probe["signals"] += [{"kind": "log", "probe": probe["id"], "subject": s,
                          "reason": "gap table: 4 module call(s)"} for s in subjects]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    app = recorded_app(report=path)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.settled()
        await pilot.pause()
        app.main_screen.select_scope(("probe", probe["id"]))
        await pilot.pause()
        table = app.main_screen.table
        lines = [table.render_line(y).text for y in range(table.size.height)]
    shown = [ln for ln in lines if "table" in ln and ln.lstrip().startswith("log")]
    assert len(shown) == 2 and shown[0] != shown[1], lines
    assert "1/2 " in shown[0] and "2/2 " in shown[1]
    # the end still shows beside the tag; a subject without one is cut at its start
    assert fit_cell(subjects[0], 11, keep_end=True) == "1/2 … table"
    assert fit_cell("add_ln_kernel[c,fp32,gpu]/lower", 11, keep_end=True) == "…gpu]/lower"
