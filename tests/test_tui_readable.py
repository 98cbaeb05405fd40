"""The dashboard read at a glance, at 80x24 and at 160x45: what is on the screen (the
terminal's lines as composited), driven by keys like a user would. Issue 30: statuses and
the distinguishing end of subjects visible, the help and its legend on the screen, Enter on a
failing probe opening its failure, a filter that shows and clears, ``show`` saying it is
loading, control characters escaped."""

from __future__ import annotations

import json
import re

import pytest

from laya_tui.tui.screens.matrix import MatrixScreen
from laya_tui.tui.screens.signal import SignalScreen
from tests._tui import (
    DEMO_REPORT,
    DEMO_WS,
    REPO,
    TILELANG_REPORT,
    recorded_app,
    screen_lines,
    screen_text,
)

pytestmark = pytest.mark.asyncio
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 45), id="160x45")]
_CUT_STATUS = re.compile(r"\b(skippe|skipp|skip|ski|faile|fail|fai|crashe|timeou)\b(?!\w)")


async def _settled(app, pilot) -> None:
    await app.settled()
    await pilot.pause()


def _table_lines(app) -> list[str]:
    """The signal table's visible lines (header first), as drawn."""
    table = app.main_screen.table
    return [table.render_line(y).text for y in range(table.size.height)]


@pytest.mark.parametrize("size", SIZES)
async def test_statuses_and_the_end_of_each_subject_are_visible(size):
    app = recorded_app(report=TILELANG_REPORT, workspace=str(REPO))
    async with app.run_test(size=size) as pilot:
        await _settled(app, pilot)
        lines = screen_lines(app)
        assert len(lines) == size[1] and all(len(line) <= size[0] for line in lines)
        tree = [line for line in lines if "├─" in line or "└─" in line]
        assert tree and not any(_CUT_STATUS.search(line) for line in tree), tree
        if size[0] >= 160:  # room for the words: every skipped cell says so
            skipped = [line for line in tree if "⊘" in line]
            assert skipped and all("skipped" in line for line in skipped)
        main = app.main_screen
        main.select_scope(("family", "tilelang"))
        await pilot.pause()
        table = main.table
        shown = _table_lines(app)[1:]
        rows = [table.row_at(int(table.scroll_y) + i) for i in range(len(shown))]
        checked = 0
        for line, row in zip(shown, rows, strict=True):
            if row is None:
                continue
            subject = str(row.sig.get("subject"))
            assert subject[-10:] in line, (subject, line)  # the end that tells rows apart
            checked += 1
        assert checked >= 5
        header = _table_lines(app)[0]
        assert "kind" in header and "subject" in header and "value" in header
        assert "count" not in header  # no row has a count: the column gives its width up
        footer = lines[-1]
        for key in ("? Help", "w Watch", "e Export", "r Re-run", "q Quit"):
            assert key in footer, footer  # at 80 columns too (the least needed drop first)


@pytest.mark.parametrize("size", SIZES)
async def test_z_hides_the_tree_and_the_table_takes_the_width(size):
    app = recorded_app()
    async with app.run_test(size=size) as pilot:
        await _settled(app, pilot)
        main = app.main_screen
        before = main.table.size.width
        await pilot.press("z")
        await pilot.pause()
        assert not main.tree.display and main.table.size.width > before
        assert "z: tree" in screen_text(app)
        header = _table_lines(app)[0]
        assert "reason" in header  # the width went to the columns rows differ in
        await pilot.press("z")
        await pilot.pause()
        assert main.tree.display and main.table.size.width == before


@pytest.mark.parametrize("size", SIZES)
async def test_help_fits_the_screen_scrolls_and_has_the_legend(size):
    app = recorded_app()
    async with app.run_test(size=size) as pilot:
        await _settled(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        body = app.screen.query_one("#help-body")
        region = body.region
        assert region.x >= 0 and region.y >= 0
        assert region.right <= size[0] and region.bottom <= size[1]
        text = screen_text(app)
        assert "Esc or ? closes" in text and "quit (ends every probe worker)" in text
        await pilot.press("G")
        await pilot.pause()
        text = screen_text(app)
        assert "lowering matrix cells" in text and "◐ built" in text
        assert "built, not run here" in text
        await pilot.press("g")
        await pilot.pause()
        for _ in range(40):
            if "✹ crashed" in screen_text(app):
                break
            await pilot.press("j")
        assert "⊘ skipped" in screen_text(app) or "✹ crashed" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main_screen


@pytest.mark.parametrize("size", SIZES)
async def test_enter_on_a_failing_probe_opens_its_failure(size):
    app = recorded_app(report=TILELANG_REPORT, workspace=str(REPO))
    async with app.run_test(size=size) as pilot:
        await _settled(app, pilot)
        main = app.main_screen
        main.select_scope(("probe", "tilelang/add_ln_kernel[c,fp32,gpu]"))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SignalScreen)
        assert app.screen.key is not None
        row = app.model.rows[app.screen.key]
        assert row.failing and row.sig["kind"] == "lowering"  # not the timing row before it
        text = screen_text(app)
        assert "lower-failed" in text and "CPU reduce only supports" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main and main.table.cursor_row is row


async def test_enter_on_a_crashed_probe_shows_its_stderr():
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        app.main_screen.select_scope(("probe", "faults/segfault"))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SignalScreen) and app.screen.probe == "faults/segfault"
        text = screen_text(app)
        assert "worker killed by SIGSEGV" in text and "stderr tail" in text


@pytest.mark.parametrize("size", SIZES)
async def test_a_filter_shows_is_carried_visibly_and_esc_clears_it(size):
    app = recorded_app()
    async with app.run_test(size=size) as pilot:
        await _settled(app, pilot)
        main = app.main_screen
        main.select_scope(("probe", "explain/tiny_llama_forward"))
        await pilot.pause()
        await pilot.press("enter", "t", "t")  # into the table; kind: the second present
        await pilot.pause()
        kind = main.table.filter.kind
        assert kind is not None
        status = screen_text(app)
        assert f"filter: kind {kind}" in status and "Esc clears" in status
        # another probe without that kind: the empty table says why and how to clear it
        main.select_scope(("probe", "faults/raises"))
        await pilot.pause()
        assert main.table.row_count == 0
        text = " ".join(screen_text(app).split())
        assert f"filter: kind {kind}" in text and "Esc clears" in text
        await pilot.press("enter")  # faults/raises failed: its failure opens
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        main.table.focus()
        await pilot.press("escape")  # in the table: Esc clears the filter first
        await pilot.pause()
        assert not main.table.filter.active and main.table.row_count == 1
        assert "filter:" not in screen_text(app)
        assert app.focused is main.table
        await pilot.press("escape")  # then back to the tree
        await pilot.pause()
        assert app.focused is main.tree


@pytest.mark.parametrize("size", SIZES)
async def test_show_says_loading_until_loaded_and_hides_the_keys_that_are_off(size):
    from laya_tui.cli.show import WHY_OFF
    from laya_tui.tui.factory import build_app

    report = json.loads(TILELANG_REPORT.read_text())
    app = build_app(recorded=report, workspace=str(REPO), offline=WHY_OFF, replay_delay=0.05,
                    report_info={"label": "saved report t.json", "path": "t.json",
                                 "report": report})
    async with app.run_test(size=size) as pilot:
        seen = ""
        for _ in range(400):
            await pilot.pause(0.02)
            text = screen_text(app)
            if "loading report" in text and re.search(r"loading \d+", text.splitlines()[0]):
                seen = text  # the gates wait, the probes not read yet are counted
                break
        assert seen, "the loading state was never on the screen"
        for live in ("running", "queued", "partial: probes still running"):
            assert live not in seen
        footer = seen.splitlines()[-1]
        assert "? Help" in footer
        for off in ("Re-run", "Watch", "Export"):
            assert off not in footer
        await _settled(app, pilot)
        text = screen_text(app)
        assert "loading report" not in text and ("PASS" in text or "FAIL" in text)
        await pilot.press("r")  # off, and it says why
        await pilot.pause()
        assert any("re-run is off" in n.message for n in app._notifications)


@pytest.mark.parametrize("size", SIZES)
async def test_the_matrix_keeps_the_kernel_names_while_it_scrolls(size):
    app = recorded_app(report=TILELANG_REPORT, workspace=str(DEMO_WS))
    async with app.run_test(size=size) as pilot:
        await _settled(app, pilot)
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, MatrixScreen)
        await pilot.press(*["l"] * 11)
        await pilot.pause()
        text = screen_text(app)
        for kernel in ("add_ln_kernel", "attn_kernel", "rope_kernel"):
            assert kernel in text
        assert "◐ built, not run" in text and "✗ lower / build / run" in text  # the legend


async def test_control_characters_from_a_probe_are_escaped_on_the_screen(tmp_path):
    doc = json.loads(DEMO_REPORT.read_text())
    raw = "nul\x00 and escape\x1b[31m red"
    doc["probes"][6]["signals"][0]["reason"] = raw
    doc["probes"][6]["log_tail"] = raw
    doc["probes"][6]["reason"] = raw
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    app = recorded_app(report=path)
    async with app.run_test(size=(160, 45)) as pilot:
        await _settled(app, pilot)
        app.main_screen.select_scope(("probe", "faults/raises"))
        await pilot.pause()
        app.main_screen.table.focus()
        await pilot.pause()
        text = screen_text(app)
        assert "\x00" not in text and "\x1b" not in text
        assert "nul\\x00 and escape\\x1b[31m red" in text
