"""A runner that replays a recorded report: same interface and events as the live Runner.

Tests, snapshots and benchmarks feed the app recorded signals through it; a re-run
replays the probe's recorded result again (a new run in the probe's history).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from laya_tui.core.events import (
    Event,
    EventSource,
    Listeners,
    ProbeFinished,
    ProbeQueued,
    ProbeStarted,
    SignalEmitted,
)
from laya_tui.core.gc_sight import freeze_if_large
from laya_tui.core.report_types import CellSpec, ReportDict, ResultDict
from laya_tui.core.runner import Discovery

if TYPE_CHECKING:
    from laya_tui.core.worker_handle import WorkerLike

#: A fixed start time, so nothing in a replay depends on the clock.
RECORDED_START = 1_700_000_000.0


def load_report(source: str | Path | ReportDict) -> ReportDict:
    """A report document from a path or an already loaded dict."""
    if isinstance(source, dict):
        return source
    doc: ReportDict = json.loads(Path(source).read_text())  # a report: JSON from a file
    return doc


class RecordedRunner(EventSource):
    """Replays a report's probes as runner events (optionally paced, ``delay`` seconds each)."""

    def __init__(self, report: str | Path | ReportDict,
                 on_event: Callable[[Event], None] | None = None, *, delay: float = 0.0,
                 chunk: int = 256) -> None:
        self.report = load_report(report)
        self._listeners = Listeners(on_event)
        self.delay = delay
        self.chunk = chunk
        self._results: dict[str, ResultDict] = {p["id"]: p for p in self.report.get("probes", [])}
        # A large recording is immutable and lives as long as the app: keep it out of the
        # cyclic collector's scans (the app does the same for live rows).
        freeze_if_large(sum(len(p.get("signals", [])) for p in self._results.values()))
        self.workers: dict[str, WorkerLike] = {}  # none: nothing runs
        self.killed = False
        self.closed = False

    async def discover(self, *, warm: bool = False) -> Discovery:
        """The recorded probes as discovery entries (``warm`` changes nothing here)."""
        # a recorded cell is never run: no function, and its file as the report had it
        probes = [cast(CellSpec, {"id": p["id"], "family": p["family"], "file": p.get("file"),
                                  "func": None, "param": None, "params": p.get("params", {}),
                                  "timeout": None, "deps": p.get("deps", [])})
                  for p in self.report.get("probes", [])]
        return Discovery(probes, list(self.report.get("errors", [])))

    @property
    def config(self) -> None:
        """A recording has no run configuration (see ``core.runner_like.RunnerLike``)."""
        return None

    async def run(self, probes: list[CellSpec], *, use_cache: bool | None = None
                  ) -> list[ResultDict]:
        """Replay every given probe, in order (``use_cache`` changes nothing here)."""
        for p in probes:
            self.on_event(ProbeQueued(p["id"], p["family"]))
        return [r for p in probes if (r := await self.run_one(p)) is not None]

    async def run_one(self, probe: CellSpec, *, use_cache: bool | None = None
                      ) -> ResultDict | None:
        """Replay one probe's recorded events."""
        recorded = self._results[probe["id"]]
        result: ResultDict = {**recorded, "signals": list(recorded.get("signals", []))}
        freeze_if_large(len(result["signals"]))  # the copy is new: young collections walk it
        self.on_event(ProbeStarted(result["id"], result["family"], RECORDED_START))
        for i, sig in enumerate(result.get("signals", [])):
            self.on_event(SignalEmitted(result["id"], sig))
            if i % self.chunk == self.chunk - 1:
                await asyncio.sleep(0)
        if self.delay:
            await asyncio.sleep(self.delay)
        else:
            await asyncio.sleep(0)
        self.on_event(ProbeFinished(result))
        return result

    def cancel(self, probe_id: str) -> bool:
        """Nothing runs in a subprocess here."""
        return False

    async def invalidate(self, files: set[str], *, recycle: bool = False) -> None:
        """Nothing to invalidate in a replay."""

    def pending_invalidations(self, family: str) -> frozenset[str]:
        """Nothing is ever pending in a replay."""
        return frozenset()

    async def close_discovery(self) -> None:
        """No discovery worker to end."""

    async def close(self) -> None:
        self.closed = True

    def kill_all(self) -> None:
        self.killed = True
