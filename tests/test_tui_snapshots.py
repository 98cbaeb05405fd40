"""Snapshot tests (pytest-textual-snapshot) at a fixed size, from recorded signals.

Deterministic by construction: the recorded runner replays a fixed report (no
subprocess, fixed start time, every probe finished, so no elapsed-time text), and the
screenshot is taken after the run worker has ended and every event reached the widgets.
Update with ``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from tests._tui import SIZE, TILELANG_REPORT, recorded_app


async def _settle(pilot) -> None:
    await pilot.app.settled()
    await pilot.pause()


def test_overview(snap_compare):
    assert snap_compare(recorded_app(), terminal_size=SIZE, run_before=_settle)


def test_signals_table_filtered_and_sorted(snap_compare):
    async def drive(pilot) -> None:
        await _settle(pilot)
        pilot.app.main_screen.select_scope(("family", "explain"))
        await pilot.pause()
        await pilot.press("tab", "s", "s", "s", "s", "j")  # table, sort by bytes, 2nd row
        await pilot.pause()

    assert snap_compare(recorded_app(), terminal_size=SIZE, run_before=drive)


def test_detail_of_one_signal(snap_compare):
    async def drive(pilot) -> None:
        await _settle(pilot)
        pilot.app.main_screen.select_scope(("probe", "explain/tiny_modernbert_forward"))
        await pilot.pause()
        await pilot.press("enter", "j", "enter")  # into the table, tolerance row, detail
        await pilot.pause()

    assert snap_compare(recorded_app(), terminal_size=SIZE, run_before=drive)


def test_lowering_matrix(snap_compare):
    """The real tilelang recording; the demo workspace has no kernels/, so the cell detail
    does not depend on the kernel sources as they are edited."""

    async def drive(pilot) -> None:
        await _settle(pilot)
        await pilot.press("m", "right", "right", "right", "down")  # attn_kernel, c·fp16·gpu
        await pilot.pause()

    assert snap_compare(recorded_app(report=TILELANG_REPORT), terminal_size=SIZE,
                        run_before=drive)
