"""The dashboard app and its factory.

The runner (live or recorded) runs inside Textual async workers on the app's loop; its
``on_event`` callback only appends to the :class:`EventPump`, which a short interval timer
drains into the model in time-boxed slices, posting one :class:`RunUpdated` per slice.
Screens update their widgets by key from that record.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar, Protocol

from textual import work
from textual.app import App, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.screen import Screen

from laya_tui.core.errors import EXIT_USAGE, UsageError
from laya_tui.core.events import Event
from laya_tui.core.runner import Discovery, RunConfig
from laya_tui.tui.editor import default_editor, editor_command
from laya_tui.tui.messages import (
    ProbesDiscovered,
    ReportExported,
    RunCompleted,
    RunFailed,
    RunUpdated,
    WatchChanged,
    WatchToggled,
)
from laya_tui.tui.model import Changes, RunModel, Scope, SignalRow
from laya_tui.tui.pump import EventPump
from laya_tui.tui.screens.main import MainScreen
from laya_tui.tui.widgets.detail import resolve_path, tilelang_editor_target

#: Runner events reach the widgets at most this often (seconds): a stream of signals
#: costs one frame per interval, not one per drain.
FLOOD_FRAME_S = 0.1
#: While events wait after a drain slice, the next slice runs this soon (not a whole
#: flush interval later): the loop serves other callbacks and frames in between.
REDRAIN_S = 0.002


class RunnerLike(Protocol):
    """What the app needs from a runner (``laya_tui.core.runner.Runner`` or a recording)."""

    async def discover(self) -> Discovery: ...
    async def run(self, probes: list[dict[str, Any]]) -> list[dict[str, Any]]: ...
    async def run_one(self, probe: dict[str, Any], *, use_cache: bool | None = None
                      ) -> dict[str, Any]: ...
    async def close(self) -> None: ...
    def kill_all(self) -> None: ...


RunnerFactory = Callable[[Callable[[Event], None]], RunnerLike]
#: ``factory(app, runner, probes)`` -> async iterator of change records
#: ``{probe, trigger, seconds, status, new, gone, changed}``; re-runs go through ``runner``.
WatchFactory = Callable[["LayaApp", RunnerLike, list[dict[str, Any]]],
                        AsyncIterator[dict[str, Any]]]


class LayaApp(App[int]):
    """laya-tui: live probe signals with drill-down."""

    CSS_PATH = "app.tcss"
    TITLE = "laya-tui"
    COMMANDS = App.COMMANDS | {lambda: _laya_commands()}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", tooltip="quit (ends every probe worker)"),
        Binding("r", "rerun", "Re-run", tooltip="re-run the selected probe (or family)"),
        Binding("R", "rerun_all", "Re-run all", tooltip="re-run every probe, cache ignored"),
        Binding("w", "toggle_watch", "Watch", tooltip="toggle watch mode"),
        Binding("e", "export", "Export", tooltip="export the current report as JSON"),
        Binding("i", "report_info", "Report info",
                tooltip="a saved report's source, machine environment and gates"),
        Binding("v", "envs", "Environments", show=False,
                tooltip="what differs between the --env environments, cell by cell"),
        Binding("question_mark", "help", "Help", tooltip="this help"),
    ]

    def __init__(self, runner_factory: RunnerFactory, *, workspace: str | None = None,
                 autorun: bool = True, watch: bool = False,
                 watch_factory: WatchFactory | None = None, export_path: str | None = None,
                 flush_interval: float = 1 / 30, budget: float = 0.008,
                 gate_settings: Any = None, freeze_every: int = 2_000,
                 offline: str | None = None, report_info: dict[str, Any] | None = None
                 ) -> None:
        super().__init__()
        #: why re-running is off (``show``/``diff`` over saved reports), None when live
        self.offline = offline
        #: ``{label, path, report}`` of the saved report shown (``show``/``diff``)
        self.report_info = report_info
        #: why the app ended with exit code 2 (a saved report that could not be read)
        self.exit_error: str | None = None
        self.freeze_every = freeze_every
        self._rows_since_freeze = 0
        self._run_pending = False
        self.runner_factory = runner_factory
        self.workspace = workspace
        self.autorun = autorun
        self.watch_on_start = watch
        self.watch_factory = watch_factory
        self.export_path = os.path.abspath(export_path or "laya-tui-report.json")
        self.flush_interval = flush_interval
        self.gate_settings = gate_settings
        self.model = RunModel(gate_settings)
        if report_info is not None:
            self.model.source = report_info.get("label")
            gates = (report_info.get("report") or {}).get("gates")
            self.model.fixed_gates = gates if isinstance(gates, list) else None
        self.pump = EventPump(self.model, budget=budget, on_pending=self._wake_drain)
        self.runner: RunnerLike | None = None
        self.watching = False
        self.probe_specs: dict[str, dict[str, Any]] = {}
        self._drain_timer: Any = None
        self._clock: Any = None
        self._runner_lock = asyncio.Lock()
        self._unposted: Changes | None = None  # folded into the model, not yet shown
        self._gates_job: int | None = None  # the model's gate generation being evaluated
        self._posted_at = 0.0
        self._redrain_set = False  # a short timer for the next slice is pending

    # -- lifecycle ----------------------------------------------------------------------
    def get_default_screen(self) -> Screen[Any]:
        return MainScreen()

    @property
    def main_screen(self) -> MainScreen:
        return self.screen_stack[0]  # type: ignore[return-value]

    async def run_async(self, *args: Any, **kwargs: Any) -> int | None:
        """Run the app; the cyclic garbage collector is paused until the first frame.

        Start-up allocates tens of thousands of long-lived objects (styles, strips, widgets)
        and the collector would scan them over and over before anything is drawn (about a
        third of the CPU time from mount to the first frame). They are frozen (out of the
        collector's sight) once the frame is out, and the collector runs again.
        """
        gc.disable()
        try:
            return await super().run_async(*args, **kwargs)
        finally:
            gc.enable()

    def _first_frame_drawn(self) -> None:
        gc.freeze()
        gc.enable()
        threading.Thread(target=warm_imports, name="laya-warm-imports", daemon=True).start()

    def on_mount(self) -> None:
        self.call_after_refresh(self._first_frame_drawn)
        self._drain_timer = self.set_interval(self.flush_interval, self._drain, pause=True)
        self._clock = self.set_interval(1.0, self._tick, pause=True)
        try:
            asyncio.get_running_loop().add_signal_handler(
                signal.SIGTERM, lambda: self.call_later(self.action_quit))
        except (NotImplementedError, RuntimeError, ValueError):
            pass
        if self.autorun:
            self._run_pending = True
            self.call_after_refresh(self.start_run)  # paint first, then spawn workers
        elif self.watch_on_start:
            self.call_after_refresh(self.action_toggle_watch)

    async def ensure_runner(self) -> RunnerLike:
        """The runner, created on first use (after the first paint)."""
        async with self._runner_lock:
            if self.runner is None:
                self.runner = await asyncio.to_thread(self.runner_factory, self.pump.push)
            return self.runner

    async def ensure_discovered(self, runner: RunnerLike) -> list[dict[str, Any]]:
        """Discover once; later calls return the known probe specs."""
        if not self.model.discovered:
            disc = await runner.discover()
            for spec in disc.probes:
                self.probe_specs[spec["id"]] = spec
            changes = self.model.discover(disc.probes, disc.errors)
            self.post_message(ProbesDiscovered(len(disc.probes), disc.errors))
            self.post_message(RunUpdated(changes))
        return list(self.probe_specs.values())

    async def shutdown_runner(self) -> None:
        """Cancel every run and end every probe worker (quit, SIGTERM)."""
        self.workers.cancel_all()
        runner = self.runner
        if runner is not None:
            runner.kill_all()
            try:
                await asyncio.wait_for(runner.close(), 5.0)
            except (TimeoutError, OSError):
                runner.kill_all()

    async def action_quit(self) -> None:
        await self.shutdown_runner()
        self.exit(0)

    # -- the pump -----------------------------------------------------------------------
    def _wake_drain(self) -> None:
        if self._drain_timer is not None:
            self._drain_timer.resume()

    def _redrain(self) -> None:
        self._redrain_set = False
        self._drain()

    def _drain(self) -> None:
        changes = self.pump.drain(self._unposted)
        self._unposted = None
        if self.pump.pending and not self._redrain_set:
            # a flood: the next slice soon, so the model keeps up with the pipe (a slice
            # per flush interval would leave the loop idle most of the time)
            self._redrain_set = True
            self.set_timer(REDRAIN_S, self._redrain)
        now = time.monotonic()
        if changes and now - self._posted_at < FLOOD_FRAME_S:
            # a stream: keep folding, show it at most every FLOOD_FRAME_S (each RunUpdated
            # costs a frame; fewer frames leave the loop to the stream); the timer stays
            # on to post what is held
            self._unposted = changes
            return
        if not self.pump.pending:
            self._drain_timer.pause()
        if changes:
            self._posted_at = now
            self._rows_since_freeze += len(changes.added)
            if self.freeze_every and self._rows_since_freeze >= self.freeze_every:
                # Rows live as long as the app: move what exists now out of the cyclic
                # collector's sight, so full collections stay short with 100,000 rows
                # instead of pausing the loop for a scan of every row (docs/architecture.md,
                # 'The dashboard').
                self._rows_since_freeze = 0
                gc.freeze()
            self.post_message(RunUpdated(changes))

    def on_run_updated(self, message: RunUpdated) -> None:
        for screen in self.screen_stack:
            apply = getattr(screen, "apply_changes", None)
            if apply is not None:
                apply(message.changes)
        if self._clock is not None:
            if self.model.running():
                self._clock.resume()
            else:
                self._clock.pause()

    def evaluate_gates(self) -> None:
        """Evaluate the gates in a thread when the summary left them to the app (a baseline
        over many signals: ``RunModel.gates_ready``); the summary shows them when done."""
        if not self.model.gates_wanted:
            return
        generation, job = self.model.gate_job()
        if generation == self._gates_job:
            return  # already under way for these results
        self._gates_job = generation
        self._evaluate_gates(generation, job)

    @work(exit_on_error=False, group="gates")
    async def _evaluate_gates(self, generation: int, job: Callable[[], list[dict[str, Any]]]
                              ) -> None:
        try:
            gates = await asyncio.to_thread(job)  # pure Python: the loop still gets the GIL
        except Exception as exc:  # noqa: BLE001 - a failing gate, never "evaluating…" forever
            gates = [{"name": "gates", "description": "the gates could be evaluated",
                      "passed": False,
                      "failures": [{"probe": "-", "reason": f"{type(exc).__name__}: {exc}"}]}]
        if self.model.set_gates(generation, gates):
            self.main_screen.refresh_summary()

    def _tick(self) -> None:
        self.main_screen.tick()

    @property
    def updates_pending(self) -> bool:
        """Runner events not yet in the model, or folded in but not yet on the widgets
        (the signal table takes a burst of rows in over several ticks)."""
        if self.pump.pending or self._unposted is not None:
            return True
        try:
            return bool(self.main_screen.table.pending)
        except Exception:  # noqa: BLE001 - not mounted yet (or gone): nothing waits there
            return False

    async def drained(self) -> None:
        """Wait until every buffered runner event is in the model."""
        while self.updates_pending:
            await asyncio.sleep(self.flush_interval)

    async def settled(self, timeout: float = 30.0) -> None:
        """Wait until no run worker is active and every event reached the widgets (tests)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while loop.time() < end:
            busy = self._run_pending or any(
                w.group in ("run", "rerun") and not w.is_finished for w in self.workers)
            if not busy and not self.updates_pending:
                await asyncio.sleep(self.flush_interval * 2)
                if not self.updates_pending:
                    return
            await asyncio.sleep(0.02)
        raise TimeoutError("the app did not settle")

    # -- runs ---------------------------------------------------------------------------
    def start_run(self, *, use_cache: bool | None = None) -> None:
        """Discover (once) and run every probe; a new run cancels the one in progress."""
        self._run_pending = False
        gc.freeze()  # the app's own objects live as long as it: no full scans of them mid-run
        self._run_all(use_cache)

    @work(exclusive=True, exit_on_error=False, group="run")
    async def _run_all(self, use_cache: bool | None) -> None:
        runner: RunnerLike | None = None
        try:
            runner = await self.ensure_runner()
            probes = await self.ensure_discovered(runner)
            config = getattr(runner, "config", None)
            saved = getattr(config, "use_cache", None)
            if use_cache is not None and config is not None:
                config.use_cache = use_cache
            try:
                await runner.run(probes)
            finally:
                if use_cache is not None and config is not None:
                    config.use_cache = saved
            self.post_message(RunCompleted("all", len(probes)))
        except asyncio.CancelledError:
            self._abandon(runner)
            self.post_message(RunCompleted("all", 0, cancelled=True))
            raise
        except UsageError as exc:  # a saved report that turned out unreadable: exit 2
            self.exit_error = str(exc)
            self.exit(return_code=EXIT_USAGE)
        except Exception as exc:  # noqa: BLE001 - a runner bug is shown, never fatal
            self._abandon(runner)
            self.post_message(RunFailed(f"{type(exc).__name__}: {exc}"))

    def rerun(self, probe_ids: list[str]) -> None:
        """Re-run these probes now (cache ignored), beside any run in progress."""
        self._rerun(tuple(probe_ids))

    @work(exit_on_error=False, group="rerun")
    async def _rerun(self, probe_ids: tuple[str, ...]) -> None:
        runner: RunnerLike | None = None
        try:
            runner = await self.ensure_runner()
            await self.ensure_discovered(runner)
            specs = [self.probe_specs[p] for p in probe_ids if p in self.probe_specs]
            from laya_tui.core.events import ProbeQueued

            for spec in specs:
                self.pump.push(ProbeQueued(spec["id"], spec["family"]))
            await asyncio.gather(*(runner.run_one(s, use_cache=False) for s in specs))
            self.post_message(RunCompleted("selection", len(specs)))
        except asyncio.CancelledError:
            self._abandon(runner)
            raise
        except Exception as exc:  # noqa: BLE001
            self._abandon(runner)
            self.post_message(RunFailed(f"{type(exc).__name__}: {exc}"))

    def _abandon(self, runner: RunnerLike | None) -> None:
        if runner is not None:
            runner.kill_all()
        leftover = self.pump.drain(self._unposted)
        self._unposted = None
        if leftover:
            self.post_message(RunUpdated(leftover))
        changes = self.model.abandon()
        if changes:
            self.post_message(RunUpdated(changes))

    def on_run_completed(self, message: RunCompleted) -> None:
        if self.watch_on_start and message.what == "all" and not message.cancelled:
            self.watch_on_start = False  # --watch: start watching once the first run is in
            if not self.watching:
                self.action_toggle_watch()

    def on_run_failed(self, message: RunFailed) -> None:
        self.notify(message.error, title="runner error", severity="error", timeout=10)

    def on_probes_discovered(self, message: ProbesDiscovered) -> None:
        if message.errors:
            e = message.errors[0]
            where = f"{e['file']}:{e['line']}" if e.get("line") else e["file"]
            self.notify(f"{where}: {e['error']}", title="probe file error", severity="error",
                        timeout=10)
        elif not message.count:
            self.notify("no probes found (probe files live in ./probes or --probes PATH)",
                        severity="warning")

    def _targets(self) -> list[str]:
        screen = self.screen
        targets = getattr(screen, "rerun_targets", None)
        if targets is not None:
            return targets()
        main = self.main_screen
        what, name = main.scope
        if what == "family":
            return list(self.model.families.get(name or "", []))
        if what == "all" and self.focused is not main.table:
            return []  # on "all probes", r is ambiguous: R re-runs everything
        pid = main.selected_probe()
        return [pid] if pid else []

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "report_info":
            return self.report_info is not None  # hidden in the footer of a live run
        return True

    def _offline(self) -> bool:
        """Say why re-running is off over a saved report (True: it is off)."""
        if self.offline:
            self.notify(f"re-run is off: {self.offline}", severity="warning", timeout=6)
        return bool(self.offline)

    def action_report_info(self) -> None:
        if self.report_info is None:
            return
        from laya_tui.tui.screens.report_info import ReportInfoScreen

        self.push_screen(ReportInfoScreen(self.report_info))

    def action_envs(self) -> None:
        from laya_tui.tui.screens.envs import EnvScreen

        if not isinstance(self.screen, EnvScreen):
            self.push_screen(EnvScreen())

    def action_rerun(self) -> None:
        if self._offline():
            return
        ids = self._targets()
        if not ids:
            self.notify("select a probe or a family to re-run (R re-runs all)",
                        severity="warning")
            return
        self.rerun(ids)

    def action_rerun_all(self) -> None:
        if self._offline():
            return
        self.start_run(use_cache=False)

    # -- watch --------------------------------------------------------------------------
    def action_toggle_watch(self) -> None:
        if self._offline():
            return
        if self.watching:
            self.stop_watch()
            return
        factory = self.watch_factory or default_watch_factory()
        if self.watch_factory is None and self.runner is not None and \
                getattr(self.runner, "config", None) is None:
            self.notify("watch mode needs live probes, not a recorded report",
                        severity="warning")
            return
        self.start_watch(factory)

    def start_watch(self, factory: WatchFactory) -> None:
        """Run a watch engine in a worker; its change records arrive as WatchChanged."""
        self.watching = True
        self.post_message(WatchToggled(True))
        self._watch(factory)

    def stop_watch(self) -> None:
        """Stop the watch worker (the runner and its warm workers stay)."""
        self.workers.cancel_group(self, "watch")
        self.watching = False
        self.post_message(WatchToggled(False))

    @work(exclusive=True, exit_on_error=False, group="watch")
    async def _watch(self, factory: WatchFactory) -> None:
        try:
            runner = await self.ensure_runner()
            probes = await self.ensure_discovered(runner)
            async for record in factory(self, runner, probes):
                self.post_message(WatchChanged(record))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            self.post_message(RunFailed(f"watch stopped: {type(exc).__name__}: {exc}"))
        if self.watching:
            self.watching = False
            self.post_message(WatchToggled(False))

    def on_watch_toggled(self, message: WatchToggled) -> None:
        self.main_screen.refresh_summary()
        self.notify("watching for changes" if message.on else "watch mode off")

    def on_watch_changed(self, message: WatchChanged) -> None:
        rec = message.record
        result = rec.get("result")
        if rec.get("type") == "ready":
            self.notify(f"{rec.get('probes', 0)} probes; watching for changes", title="watch")
            return
        if isinstance(result, dict) and rec.get("probe") in self.model.probes and \
                self.model.probes[rec["probe"]].report_entry is not result:
            # A syntax/import error saved mid-edit: the watcher's own result, no runner event.
            from laya_tui.core.events import ProbeFinished

            self.pump.push(ProbeFinished(result))
        bits = [f"{k} {len(rec[k])}" for k in ("new", "gone", "changed")
                if isinstance(rec.get(k), list) and rec[k]]
        self.notify(f"{rec.get('probe', '?')}: {rec.get('status', '?')}"
                    + (f" ({', '.join(bits)})" if bits else ""),
                    title=f"changed: {rec.get('trigger', '')}", timeout=4)

    # -- export, editor, help, palette --------------------------------------------------
    def action_export(self) -> None:
        if self.offline:  # re-exporting would stamp this machine's environment on it
            where = (self.report_info or {}).get("path")
            self.notify("export is off: the report shown is already saved"
                        + (f" ({where})" if where else "")
                        + "; --html PATH on show/diff writes a page", severity="warning")
            return
        results = self.model.results()
        if not results:
            self.notify("nothing to export yet: no probe has finished", severity="warning")
            return
        specs = [self.probe_specs.get(pid, {"id": pid}) for pid in self.model.probes]
        self._export(list(results), specs, list(self.model.errors), self.model.run_seconds,
                     self.export_path)

    @work(thread=True, exit_on_error=False, group="export")
    def _export(self, results: list[dict[str, Any]], specs: list[dict[str, Any]],
                errors: list[dict[str, Any]], seconds: float, path: str) -> None:
        from laya_tui.report.document import write_report
        from laya_tui.report.outputs import make_report

        try:
            report = make_report(results, Discovery(specs, errors), seconds, self.gate_settings)
            write_report(path, report)
        except OSError as exc:
            self.post_message(RunFailed(f"cannot write {path}: {exc}"))
            return
        self.post_message(ReportExported(path, len(results), report["summary"]["passed"]))

    def on_report_exported(self, message: ReportExported) -> None:
        verdict = "PASS" if message.passed else "FAIL"
        self.notify(f"{message.probes} probes, verdict {verdict} -> {message.path}",
                    title="report exported")

    def open_site(self, row: SignalRow | None) -> None:
        """Open the signal's call site in ``$EDITOR`` at its line (the app is suspended)."""
        site = row.sig.get("site") if row is not None else None
        ir = tilelang_editor_target(row.sig.get("detail") or {}) if row is not None else None
        if ir is not None:  # a failing TileLang cell: the IR its failing pass received
            site = {"file": ir[0], "line": ir[1]}
        if not isinstance(site, dict) or not site.get("file"):
            self.notify("this signal has no call site", severity="warning")
            return
        path = resolve_path(str(site["file"]), self.workspace)
        cmd = editor_command(default_editor() or "vi", path, site.get("line"))
        try:
            with self.suspend():
                subprocess.run(cmd, check=False)
        except SuspendNotSupported:
            self.notify(f"cannot hand the terminal over here; run: {shlex.join(cmd)}",
                        severity="warning")
        except OSError as exc:
            self.notify(f"cannot start the editor {cmd[0]!r}: {exc}", severity="error")

    def action_help(self) -> None:
        from laya_tui.tui.screens.help import HelpScreen

        bindings = [b for b in [*self.BINDINGS, *MainScreen.BINDINGS]
                    if isinstance(b, Binding)]
        self.push_screen(HelpScreen(bindings))

    async def run_palette_action(self, action: str) -> None:
        """Run an action chosen in the palette (screen actions on the overview)."""
        if action.startswith("screen."):
            self.back_to_main()
            await self.main_screen.run_action(action.split(".", 1)[1])
        else:
            await self.run_action(action)

    def back_to_main(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def go_to(self, scope: Scope) -> None:
        """Jump to a family or probe in the tree."""
        self.back_to_main()
        self.main_screen.select_scope(scope)

    def set_kind_filter(self, kind: str | None) -> None:
        self.back_to_main()
        self.main_screen.set_kind(kind)


def warm_imports() -> None:
    """Import, off the event loop, what the first signal detail and gate verdict need.

    rich's Syntax with pygments' Python lexer and style cost 0.1-0.2 s cold, the gates a
    little more; imported on the loop at the first signal of a stream, that was its longest
    stall. In a thread the loop still runs between the interpreter's switch intervals.
    """
    try:
        import io

        from rich.console import Console
        from rich.syntax import Syntax

        import laya_tui.report.gates  # noqa: F401

        Console(file=io.StringIO(), width=40, color_system="truecolor").print(
            Syntax("x = 1\n", "python", line_numbers=True, theme="ansi_dark"))
    except Exception:  # noqa: BLE001 - a warm-up only: the real use reports its own errors
        pass


def _laya_commands() -> type[Any]:
    """The palette provider, imported when the palette first opens."""
    from laya_tui.tui.commands import LayaCommands

    return LayaCommands


def default_watch_factory() -> WatchFactory:
    """The watch engine adapter (imported on first use: watchfiles stays out of start-up)."""
    from laya_tui.tui.watch_adapter import watch_factory

    return watch_factory


def build_app(config: RunConfig | None = None, *,
              recorded: str | Path | dict[str, Any] | None = None,
              runner_factory: RunnerFactory | None = None, workspace: str | None = None,
              autorun: bool = True, watch: bool = False,
              watch_factory: WatchFactory | None = None, export_path: str | None = None,
              replay_delay: float = 0.0, flush_interval: float = 1 / 30,
              gate_settings: Any = None, offline: str | None = None,
              report_info: dict[str, Any] | None = None, budget: float = 0.008) -> LayaApp:
    """The app, fed by the live runner (``config``), a recorded report, or any factory."""
    if runner_factory is None:
        if recorded is not None:
            from laya_tui.core.replay import RecordedRunner

            def runner_factory(on_event: Callable[[Event], None]) -> RunnerLike:
                return RecordedRunner(recorded, on_event, delay=replay_delay)
        elif config is not None:
            import dataclasses

            from laya_tui.core.runner import Runner

            # a user is watching: the shortest cells of each family first, so results
            # appear at once (headless runs the longest first)
            config = dataclasses.replace(config, order="shortest-first")

            def runner_factory(on_event: Callable[[Event], None]) -> RunnerLike:
                return Runner(config, on_event=on_event)
        else:
            raise ValueError("build_app needs a RunConfig, a recorded report or a runner factory")
    if workspace is None and config is not None:
        workspace = config.workspace
    return LayaApp(runner_factory, workspace=workspace, autorun=autorun, watch=watch,
                   watch_factory=watch_factory, export_path=export_path,
                   flush_interval=flush_interval, gate_settings=gate_settings,
                   offline=offline, report_info=report_info, budget=budget)
