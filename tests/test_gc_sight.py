"""core/gc_sight.py: large containers made in one go are moved out of the cyclic collector's
sight as they are made. A new 200,000-item list was walked by every young collection until
it grew old: 10-15 ms of the dashboard's loop each, in the first frames of a large report."""

from __future__ import annotations

import asyncio
import gc

from laya_tui.core import gc_sight
from laya_tui.core.events import ProbeFinished, ProbeStarted, SignalEmitted
from laya_tui.core.replay import RecordedRunner
from laya_tui.core.report_types import ReportDict
from laya_tui.tui.model import Changes, RunModel
from tests._signals import partial_report, partial_result, partial_signal


def _collected(obj: object) -> bool:
    """``obj`` is in a generation the collector walks (not frozen)."""
    return any(o is obj for o in gc.get_objects())


def test_only_large_containers_are_frozen():
    small, large = [[1]] * (gc_sight.FREEZE_ABOVE - 1), [[1]] * gc_sight.FREEZE_ABOVE
    try:
        assert gc_sight.freeze_if_large(len(small)) is False
        assert _collected(small)
        assert gc_sight.freeze_if_large(len(large)) is True
        assert not _collected(large) and not _collected(small)  # everything alive now
    finally:
        gc.unfreeze()


def _report(n: int) -> ReportDict:  # partial: what a replay reads
    return partial_report({
        "probes": [{"id": "f/many", "family": "f", "status": "ok", "seconds": 1.0,
                    "signals": [{"kind": "fallback", "subject": f"op_{i}"} for i in range(n)]}],
        "errors": []})


def test_a_replays_copy_of_a_large_recording_is_frozen_as_it_is_made():
    events: list[object] = []
    runner = RecordedRunner(_report(gc_sight.FREEZE_ABOVE), events.append)
    gc.unfreeze()  # what the runner froze at its start: only the copy counts here
    try:
        probes = asyncio.run(runner.discover()).probes
        result = asyncio.run(runner.run_one(probes[0]))
        assert result is not None
        assert result["signals"] is not runner.report["probes"][0]["signals"]  # a copy
        assert not _collected(result["signals"])
        small = asyncio.run(RecordedRunner(_report(10), events.append).run_one(probes[0]))
        assert small is not None
    finally:
        gc.unfreeze()


def test_a_finished_probes_signal_tuple_is_frozen_when_large():
    model = RunModel()
    for n, frozen in ((gc_sight.FREEZE_ABOVE, True), (10, False)):
        gc.unfreeze()
        changes = Changes()
        pid = f"f/p{n}"
        model.apply(ProbeStarted(pid, "f", 1.0), changes)
        sigs = [partial_signal({"kind": "fallback", "subject": f"op_{i}"}) for i in range(n)]
        for sig in sigs:
            model.apply(SignalEmitted(pid, sig), changes)
        model.apply(ProbeFinished(partial_result({"id": pid, "family": "f", "status": "ok",
                                                  "signals": sigs})), changes)
        result = model.probes[pid].result
        assert result is not None and len(result.signals) == n
        assert _collected(result.signals) is not frozen
    gc.unfreeze()
