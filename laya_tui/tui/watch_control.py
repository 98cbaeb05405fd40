"""Watch mode in the dashboard: toggled with ``w`` (or on by ``--watch`` once the first run
is in); a watch engine runs in a Textual worker and its change records arrive as
``WatchControl.WatchChanged`` (docs/architecture.md, 'Watch mode').
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from laya_tui.core.events import ProbeFinished
from laya_tui.core.logtext import printable
from laya_tui.core.runner_like import RunnerLike
from laya_tui.tui.run_control import RunControl

if TYPE_CHECKING:
    from laya_tui.core.report_types import CellSpec
    from laya_tui.tui.app import LayaApp
    from laya_tui.watch.record_types import WatchRecord

#: ``factory(app, runner, probes)`` -> async iterator of change records
#: ``{probe, trigger, seconds, status, new, gone, changed}``; re-runs go through ``runner``.
WatchFactory = Callable[["LayaApp", RunnerLike, list["CellSpec"]],
                        AsyncIterator["WatchRecord"]]


def default_watch_factory() -> WatchFactory:
    """The watch engine adapter (imported on first use: watchfiles stays out of start-up)."""
    from laya_tui.tui.watch_adapter import watch_factory

    return watch_factory


class WatchControl:
    """The app's watch switch and the worker that runs the engine."""

    @dataclass
    class WatchToggled(Message):
        """Watch mode was switched on or off."""

        on: bool

    @dataclass
    class WatchChanged(Message):
        """The watch engine re-ran a probe: ``record`` is its change record."""

        record: WatchRecord

    def __init__(self, app: LayaApp, factory: WatchFactory | None, *, on_start: bool) -> None:
        self.app = app
        self.factory = factory
        #: ``--watch``: start watching once the first full run is in
        self.on_start = on_start
        self.watching = False

    def toggle(self) -> None:
        """``w``: start or stop watching (a recording cannot be watched)."""
        app = self.app
        if self.watching:
            self.stop()
            return
        factory = self.factory or default_watch_factory()
        if self.factory is None and app.runner is not None and app.runner.config is None:
            app.notify("watch mode needs live probes, not a recorded report",
                       severity="warning")
            return
        self.start(factory)

    def start(self, factory: WatchFactory) -> None:
        """Run a watch engine in a worker; its change records arrive as WatchChanged."""
        self.watching = True
        self.app.post_message(self.WatchToggled(True))
        self.app.run_worker(self._watch(factory), exclusive=True, exit_on_error=False,
                            group="watch")

    def stop(self) -> None:
        """Stop the watch worker (the runner and its warm workers stay)."""
        self.app.workers.cancel_group(self.app, "watch")
        self.watching = False
        self.app.post_message(self.WatchToggled(False))

    def first_run_done(self) -> None:
        """A full run is in: ``--watch`` starts watching now (once)."""
        if self.on_start:
            self.on_start = False
            if not self.watching:
                self.toggle()

    async def _watch(self, factory: WatchFactory) -> None:
        app = self.app
        try:
            runner = await app.ensure_runner()
            probes = await app.ensure_discovered(runner)
            async for record in factory(app, runner, probes):
                app.post_message(self.WatchChanged(record))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            app.post_message(RunControl.RunFailed(f"watch stopped: {type(exc).__name__}: {exc}"))
        if self.watching:
            self.watching = False
            app.post_message(self.WatchToggled(False))

    def changed(self, rec: WatchRecord) -> None:
        """A change record: push the watcher's own results, and say what changed."""
        app = self.app
        result = rec.get("result")
        if rec.get("type") == "ready":
            app.notify(f"{rec.get('probes', 0)} probes; watching for changes", title="watch")
            return
        pid = rec.get("probe")
        if isinstance(result, dict) and pid is not None and pid in app.model.probes and \
                app.model.probes[pid].report_entry is not result:
            # A syntax/import error saved mid-edit: the watcher's own result, no runner event.
            app.pump.push(ProbeFinished(result))
        bits = [f"{k} {len(rec[k])}" for k in ("new", "gone", "changed")
                if isinstance(rec.get(k), list) and rec[k]]
        app.notify(printable(f"{rec.get('probe', '?')}: {rec.get('status', '?')}"
                             + (f" ({', '.join(bits)})" if bits else "")),
                   title=printable(f"changed: {rec.get('trigger', '')}"), timeout=4,
                   markup=False)
