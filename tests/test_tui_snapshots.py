"""Snapshot tests (pytest-textual-snapshot) at 160x45 and 80x24, from recorded signals.

Deterministic by construction: the recorded runner replays a fixed report (no
subprocess, fixed start time, every probe finished, so no elapsed-time text), and the
screenshot is taken after the run worker has ended and every event reached the widgets.
Update with ``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

import pytest

from tests._tui import SIZE, TILELANG_REPORT, recorded_app

SMALL = (80, 24)
SIZES = [pytest.param(SIZE, id="160x45"), pytest.param(SMALL, id="80x24")]


async def _settle(pilot) -> None:
    await pilot.app.settled()
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
def test_overview(snap_compare, size):
    assert snap_compare(recorded_app(), terminal_size=size, run_before=_settle)


def test_signals_table_filtered_and_sorted(snap_compare):
    async def drive(pilot) -> None:
        await _settle(pilot)
        pilot.app.main_screen.select_scope(("family", "explain"))
        await pilot.pause()
        await pilot.press("tab", "s", "s", "s", "s", "j", "f")  # sort by bytes, only failing
        await _settle(pilot)

    assert snap_compare(recorded_app(), terminal_size=SIZE, run_before=drive)


def test_detail_of_one_signal(snap_compare):
    async def drive(pilot) -> None:
        await _settle(pilot)
        pilot.app.main_screen.select_scope(("probe", "explain/tiny_modernbert_forward"))
        await pilot.pause()
        await pilot.press("enter")  # a failing probe: its failing tolerance, full screen
        await pilot.pause()

    assert snap_compare(recorded_app(), terminal_size=SIZE, run_before=drive)


@pytest.mark.parametrize("size", SIZES)
def test_lowering_matrix(snap_compare, size):
    """The real tilelang recording; the demo workspace has no kernels/, so the cell detail
    does not depend on the kernel sources as they are edited."""

    async def drive(pilot) -> None:
        await _settle(pilot)
        await pilot.press("m", "right", "right", "right", "down")  # attn_kernel, c·fp16·gpu
        await pilot.pause()

    assert snap_compare(recorded_app(report=TILELANG_REPORT), terminal_size=size,
                        run_before=drive)


@pytest.mark.parametrize("size", SIZES)
def test_tilelang_family_table(snap_compare, size):
    """The family's cells side by side: statuses whole in the tree, subjects by their end."""

    async def drive(pilot) -> None:
        await _settle(pilot)
        pilot.app.main_screen.select_scope(("family", "tilelang"))
        await pilot.pause()

    assert snap_compare(recorded_app(report=TILELANG_REPORT), terminal_size=size,
                        run_before=drive)


@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare, size):
    async def drive(pilot) -> None:
        await _settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(recorded_app(), terminal_size=size, run_before=drive)
