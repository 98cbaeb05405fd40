"""The summary bar's state counts ("built, not run"...): the same as report.views.legend's
cell_state gives, without a pass over every signal of a probe the model knows has no lowering signal
(issue 30: one stall as a 200,000-signal result came in)."""

from __future__ import annotations

import pytest

from laya_tui.report.verdict import not_run
from laya_tui.report.views.legend import cell_state
from laya_tui.tui.widgets.probe_tree import _STATES, probe_state
from tests._tui import DEMO_REPORT, SIZE, TILELANG_REPORT, recorded_app

pytestmark = pytest.mark.asyncio


class _Counted(list):
    """The result's signal list, counting the passes over it."""

    passes = 0

    def __iter__(self):
        type(self).passes += 1
        return super().__iter__()


async def test_not_run_agrees_with_the_verdict_on_every_recorded_cell():
    app = recorded_app(report=TILELANG_REPORT)
    async with app.run_test(size=SIZE) as pilot:
        await app.settled()
        await pilot.pause()
        results = app.model.results()
        assert results
        causes = [not_run(r) for r in results]
        assert any(causes), "the recording has cells built but not run"
        assert [probe_state(app.model.probes[r["id"]]) for r in results] == \
            [cell_state(r) for r in results]


async def test_a_probe_without_lowering_signals_is_not_read_again():
    for report, want_plain in ((DEMO_REPORT, True), (TILELANG_REPORT, False)):
        app = recorded_app(report=report)
        async with app.run_test(size=SIZE) as pilot:
            await app.settled()
            await pilot.pause()
            model = app.model
            if want_plain:  # an ok probe with signals, none a lowering: not read
                r = next(r for r in model.results() if r.get("status") == "ok"
                         and r.get("signals")
                         and not model.probes[r["id"]].kinds.get("lowering"))
            else:  # a cell built but not run: read, and its cause given
                r = next(r for r in model.results() if not_run(r))
            r["signals"] = _Counted(r["signals"])
            _Counted.passes = 0
            _STATES.clear()
            assert probe_state(model.probes[r["id"]]) == cell_state(r)
            assert _Counted.passes == (1 if want_plain else 2)
            probe_state(model.probes[r["id"]])  # the same result: not read again
            assert _Counted.passes == (1 if want_plain else 2)
