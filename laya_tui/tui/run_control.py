"""The dashboard's runs: the runner (created after the first paint), discovery, a run of
every probe and re-runs of a few, in the app's Textual workers (docs/architecture.md, 'The
dashboard').

The runner's ``on_event`` is the app's :class:`~laya_tui.tui.pump.EventPump`; what the runs
tell the app besides those events arrives as the messages nested here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.message import Message
from textual.worker import WorkType

from laya_tui.core.errors import EXIT_USAGE, UsageError
from laya_tui.core.runner_like import RunnerFactory, RunnerLike
from laya_tui.tui.model import Changes

if TYPE_CHECKING:
    from laya_tui.core.report_types import CellSpec, FileErrorDict
    from laya_tui.tui.app import LayaApp

#: What a run worker runs: a coroutine function it calls once started (as ``@work`` does).
Work = WorkType[None]
#: The worker groups of runs (a watch re-run is the watcher's: group "watch").
RUN_GROUPS = ("run", "rerun")


class RunControl:
    """The app's runner and the workers that run probes through it."""

    @dataclass
    class ProbesDiscovered(Message):
        """Discovery finished: ``count`` probe cells, ``errors`` per broken probe file."""

        count: int
        errors: list[FileErrorDict]

    @dataclass
    class RunUpdated(Message):
        """A coalesced batch of runner events was folded into the model."""

        changes: Changes

    @dataclass
    class RunCompleted(Message):
        """A run ended (``cancelled`` when the user quit or a new run superseded it)."""

        what: str
        count: int
        cancelled: bool = False

    @dataclass
    class RunFailed(Message):
        """The runner itself raised (not a probe: probes fail as results)."""

        error: str

    def __init__(self, app: LayaApp, runner_factory: RunnerFactory) -> None:
        self.app = app
        self.runner_factory = runner_factory
        self.runner: RunnerLike | None = None
        self.probe_specs: dict[str, CellSpec] = {}
        #: a run of every probe is due after the first paint (``autorun``)
        self.due = False
        self._lock = asyncio.Lock()

    @property
    def busy(self) -> bool:
        """A run is due or a run or re-run worker is still active."""
        return self.due or any(w.group in RUN_GROUPS and not w.is_finished
                               for w in self.app.workers)

    async def ensure_runner(self) -> RunnerLike:
        """The runner, created on first use (after the first paint)."""
        async with self._lock:
            if self.runner is None:
                self.runner = await asyncio.to_thread(self.runner_factory, self.app.pump.push)
            return self.runner

    async def ensure_discovered(self, runner: RunnerLike) -> list[CellSpec]:
        """Discover once; later calls return the known probe specs."""
        app = self.app
        if not app.model.discovered:
            disc = await runner.discover()
            for spec in disc.probes:
                self.probe_specs[spec["id"]] = spec
            changes = app.model.discover(disc.probes, disc.errors)
            app.post_message(self.ProbesDiscovered(len(disc.probes), disc.errors))
            app.post_message(self.RunUpdated(changes))
        return list(self.probe_specs.values())

    async def shutdown(self) -> None:
        """Cancel every run and end every probe worker (quit, SIGTERM)."""
        self.app.workers.cancel_all()
        runner = self.runner
        if runner is not None:
            runner.kill_all()
            try:
                await asyncio.wait_for(runner.close(), 5.0)
            except (TimeoutError, OSError):
                runner.kill_all()

    def run_all(self, use_cache: bool | None) -> None:
        """Discover (once) and run every probe; a new run cancels the one in progress."""
        self.due = False
        work: Work = partial(self._run_all, use_cache)
        self.app.run_worker(work, group="run", exclusive=True, exit_on_error=False,
                            description="run all probes")

    async def _run_all(self, use_cache: bool | None) -> None:
        app = self.app
        runner: RunnerLike | None = None
        try:
            runner = await self.ensure_runner()
            probes = await self.ensure_discovered(runner)
            await runner.run(probes, use_cache=use_cache)
            app.post_message(self.RunCompleted("all", len(probes)))
        except asyncio.CancelledError:
            self._abandon(runner)
            app.post_message(self.RunCompleted("all", 0, cancelled=True))
            raise
        except UsageError as exc:  # a saved report that turned out unreadable: exit 2
            app.exit_error = str(exc)
            app.exit(return_code=EXIT_USAGE)
        except Exception as exc:  # noqa: BLE001 - a runner bug is shown, never fatal
            self._abandon(runner)
            app.post_message(self.RunFailed(f"{type(exc).__name__}: {exc}"))

    def rerun(self, probe_ids: list[str]) -> None:
        """Re-run these probes now (cache ignored), beside any run in progress."""
        work: Work = partial(self._rerun, tuple(probe_ids))
        self.app.run_worker(work, group="rerun", exit_on_error=False,
                            description="re-run probes")

    async def _rerun(self, probe_ids: tuple[str, ...]) -> None:
        app = self.app
        runner: RunnerLike | None = None
        try:
            runner = await self.ensure_runner()
            await self.ensure_discovered(runner)
            specs = [self.probe_specs[p] for p in probe_ids if p in self.probe_specs]
            from laya_tui.core.events import ProbeQueued

            for spec in specs:
                app.pump.push(ProbeQueued(spec["id"], spec["family"]))
            await asyncio.gather(*(runner.run_one(s, use_cache=False) for s in specs))
            app.post_message(self.RunCompleted("selection", len(specs)))
        except asyncio.CancelledError:
            self._abandon(runner)
            raise
        except Exception as exc:  # noqa: BLE001
            self._abandon(runner)
            app.post_message(self.RunFailed(f"{type(exc).__name__}: {exc}"))

    def _abandon(self, runner: RunnerLike | None) -> None:
        """A run ended early: end its probe workers, fold what came in, mark the rest."""
        if runner is not None:
            runner.kill_all()
        app = self.app
        leftover = app.pump.flush()
        if leftover:
            app.post_message(self.RunUpdated(leftover))
        changes = app.model.abandon()
        if changes:
            app.post_message(self.RunUpdated(changes))
