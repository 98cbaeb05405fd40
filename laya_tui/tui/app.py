"""The dashboard app.

The runner (live or recorded) runs inside Textual async workers on the app's loop
(:class:`~laya_tui.tui.run_control.RunControl`); its ``on_event`` callback only appends to
the :class:`EventPump`, which a short interval timer drains into the model in time-boxed
slices, posting one ``RunControl.RunUpdated`` per slice. Screens update their widgets by key
from that record.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.message import Message

from laya_tui.core.logtext import printable
from laya_tui.core.report_types import CellSpec, FileErrorDict, GateDict, ResultDict
from laya_tui.core.runner import Discovery
from laya_tui.core.runner_like import RunnerFactory, RunnerLike
from laya_tui.tui.editor import open_site
from laya_tui.tui.loop_pass import MAX_WAITS, LoopPass, later
from laya_tui.tui.model import Changes, RunModel, Scope, SignalRow
from laya_tui.tui.pump import EventPump
from laya_tui.tui.run_control import RunControl
from laya_tui.tui.screens.contracts import PicksRerunTargets, ShowsChanges
from laya_tui.tui.screens.main import MainScreen
from laya_tui.tui.screens.report_info import SavedReportInfo
from laya_tui.tui.screenshot import SavesScreenshots
from laya_tui.tui.watch_control import WatchControl, WatchFactory

if TYPE_CHECKING:
    from textual.command import Provider
    from textual.timer import Timer

    from laya_tui.report.gates import GateSettings

#: What is off over a saved report (``show``/``diff``): left out of the footer.
OFFLINE_ACTIONS = frozenset(("rerun", "rerun_all", "toggle_watch", "export"))


class LayaApp(SavesScreenshots, App[int]):
    """laya-tui: live probe signals with drill-down."""

    @dataclass
    class ReportExported(Message):
        """``e`` wrote the report document to ``path``."""

        path: str
        probes: int
        passed: bool

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
                 gate_settings: GateSettings | None = None, freeze_every: int = 2_000,
                 offline: str | None = None, report_info: SavedReportInfo | None = None
                 ) -> None:
        super().__init__()
        #: why re-running is off (``show``/``diff`` over saved reports), None when live
        self.offline = offline
        #: ``{label, path, report}`` of the saved report shown (``show``/``diff``)
        self.report_info = report_info
        #: why the app ended with exit code 2 (a saved report that could not be read)
        self.exit_error: str | None = None
        self.runs = RunControl(self, runner_factory)
        self.workspace = workspace
        self.autorun = autorun
        self.watch_mode = WatchControl(self, watch_factory, on_start=watch)
        self.export_path = os.path.abspath(export_path or "laya-tui-report.json")
        self.flush_interval = flush_interval
        self.gate_settings = gate_settings
        self.model = RunModel(gate_settings)
        self.model.replay = offline is not None
        if report_info is not None:
            self.model.source = report_info["label"]
            report = report_info["report"]
            gates = report.get("gates") if report is not None else None
            self.model.fixed_gates = gates if isinstance(gates, list) else None
        self.loop_pass = LoopPass()
        self.pump = EventPump(self.model, budget=budget, flush_interval=flush_interval,
                              freeze_every=freeze_every, post=self._post_changes,
                              busy=lambda: self.loop_pass.just_worked("pump"),
                              worked=lambda: self.loop_pass.worked("pump"))
        self._clock: Timer | None = None
        self._gates_job: int | None = None  # the model's gate generation being evaluated
        self._posting = 0  # changes handed to call_soon, not yet posted (_post_changes)
        self._warming = False  # warm_imports run or its thread started
        if report_info is not None and report_info.get("report") is not None:
            # A report in hand: its rows stream in with the first frames. The warm-up's
            # thread beside them slowed them (the interpreter lock shared: 52-72 ms stalls
            # at 21-38 ms of the loop's CPU), and start-up leaves it no idle moment: ~0.1 s
            # here, before the loop starts, instead.
            warm_imports()
            self._warming = True

    # -- lifecycle ----------------------------------------------------------------------
    def get_default_screen(self) -> MainScreen:
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
        self._start_warm_imports()

    def _start_warm_imports(self) -> None:
        """After the first frame (a live run, a file still to read): the detail's and the
        gates' imports in a thread."""
        if not self._warming:
            self._warming = True
            threading.Thread(target=warm_imports, name="laya-warm-imports",
                             daemon=True).start()

    def on_mount(self) -> None:
        self.call_after_refresh(self._first_frame_drawn)
        self.pump.start(self.set_interval, self.set_timer)
        self._clock = self.set_interval(1.0, self._tick, pause=True)
        try:
            asyncio.get_running_loop().add_signal_handler(
                signal.SIGTERM, lambda: self.call_later(self.action_quit))
        except (NotImplementedError, RuntimeError, ValueError):
            pass
        if self.autorun:
            self.runs.due = True
            self.call_after_refresh(self.start_run)  # paint first, then spawn workers
        elif self.watch_mode.on_start:
            self.watch_mode.on_start = False
            self.call_after_refresh(self.action_toggle_watch)

    @property
    def runner(self) -> RunnerLike | None:
        return self.runs.runner

    @property
    def probe_specs(self) -> dict[str, CellSpec]:
        return self.runs.probe_specs

    async def ensure_runner(self) -> RunnerLike:
        """The runner, created on first use (after the first paint)."""
        return await self.runs.ensure_runner()

    async def ensure_discovered(self, runner: RunnerLike) -> list[CellSpec]:
        """Discover once; later calls return the known probe specs."""
        return await self.runs.ensure_discovered(runner)

    async def shutdown_runner(self) -> None:
        """Cancel every run and end every probe worker (quit, SIGTERM)."""
        await self.runs.shutdown()

    async def action_quit(self) -> None:
        await self.shutdown_runner()
        self.exit(0)

    def _post_changes(self, changes: Changes) -> None:
        """Hand the pump's changes to the widgets in a later loop pass than the drain that
        folded them: the app's message loop runs every queued message in one pass, so the
        drain, the table's update and a repaint would otherwise hold the loop together
        (docs/architecture.md, 'The dashboard')."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not running (a test driving the pump by hand)
            self.post_message(RunControl.RunUpdated(changes))
            return
        self._posting += 1
        loop.call_soon(self._post_now, changes)

    def _post_now(self, changes: Changes, waited: int = 0) -> None:
        if self.loop_pass.just_worked("apply") and waited < MAX_WAITS:  # not right after
            later(self._post_now, changes, waited + 1)
            return
        self._posting -= 1
        self.post_message(RunControl.RunUpdated(changes))

    def on_run_control_run_updated(self, message: RunControl.RunUpdated) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, ShowsChanges):
                screen.apply_changes(message.changes)
        self.loop_pass.worked("apply")  # a repaint due now waits a moment
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
    async def _evaluate_gates(self, generation: int, job: Callable[[], list[GateDict]]
                              ) -> None:
        gates: list[GateDict]
        try:
            gates = await asyncio.to_thread(job)  # pure Python: the loop still gets the GIL
        except Exception as exc:  # noqa: BLE001 - a failing gate, never "evaluating…" forever
            gates = [{"name": "gates", "description": "the gates could be evaluated",
                      "passed": False,
                      "failures": [{"probe": "-", "reason": f"{type(exc).__name__}: {exc}"}]}]
        if self.model.set_gates(generation, gates):
            self.main_screen.refresh_summary()

    def _tick(self) -> None:
        """The running clock (every second while a probe runs)."""
        if not self.screen_stack:
            return
        try:
            self.main_screen.tick()
        except NoMatches:  # the app is closing: the clock fired after the widgets went
            pass

    @property
    def updates_pending(self) -> bool:
        """Runner events not yet in the model, or folded in but not yet on the widgets
        (the signal table takes a burst of rows in over several ticks)."""
        if self.pump.pending or self.pump.holding or self._posting:
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
            if not self.runs.busy and not self.updates_pending:
                await asyncio.sleep(self.flush_interval * 2)
                if not self.updates_pending:
                    return
            await asyncio.sleep(0.02)
        raise TimeoutError("the app did not settle")

    # -- runs ---------------------------------------------------------------------------
    def start_run(self, *, use_cache: bool | None = None) -> None:
        """Discover (once) and run every probe; a new run cancels the one in progress."""
        gc.freeze()  # the app's own objects live as long as it: no full scans of them mid-run
        self.runs.run_all(use_cache)

    def rerun(self, probe_ids: list[str]) -> None:
        """Re-run these probes now (cache ignored), beside any run in progress."""
        self.runs.rerun(probe_ids)

    def on_run_control_run_completed(self, message: RunControl.RunCompleted) -> None:
        if message.what == "all" and not message.cancelled:
            self.watch_mode.first_run_done()

    def on_run_control_run_failed(self, message: RunControl.RunFailed) -> None:
        self.notify(printable(message.error), title="runner error", severity="error",
                    timeout=10, markup=False)

    def on_run_control_probes_discovered(self, message: RunControl.ProbesDiscovered
                                         ) -> None:
        if message.errors:
            e = message.errors[0]
            where = f"{e['file']}:{e['line']}" if e.get("line") else e["file"]
            self.notify(printable(f"{where}: {e['error']}"), title="probe file error",
                        severity="error", timeout=10, markup=False)
        elif not message.count:
            self.notify("no probes found (probe files live in ./probes or --probes PATH)",
                        severity="warning")

    def _targets(self) -> list[str]:
        screen = self.screen
        if isinstance(screen, PicksRerunTargets):
            return screen.rerun_targets()
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

    def hidden_actions(self) -> frozenset[str]:
        """Actions the footer leaves out: over a saved report, the ones that are off (they
        still say why when pressed)."""
        return OFFLINE_ACTIONS if self.offline else frozenset()

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
    @property
    def watching(self) -> bool:
        return self.watch_mode.watching

    def action_toggle_watch(self) -> None:
        if not self._offline():
            self.watch_mode.toggle()

    def on_watch_control_watch_toggled(self, message: WatchControl.WatchToggled) -> None:
        self.main_screen.refresh_summary()
        self.notify("watching for changes" if message.on else "watch mode off")

    def on_watch_control_watch_changed(self, message: WatchControl.WatchChanged) -> None:
        self.watch_mode.changed(message.record)

    # -- export, editor, help, palette --------------------------------------------------
    def action_export(self) -> None:
        if self.offline:  # re-exporting would stamp this machine's environment on it
            where = self.report_info["path"] if self.report_info else None
            self.notify("export is off: the report shown is already saved"
                        + (f" ({where})" if where else "")
                        + "; --html PATH on show/diff writes a page", severity="warning")
            return
        results = self.model.results()
        if not results:
            self.notify("nothing to export yet: no probe has finished", severity="warning")
            return
        specs = [self.probe_specs[pid] for pid in self.model.probes if pid in self.probe_specs]
        self._export(list(results), specs, list(self.model.errors), self.model.run_seconds,
                     self.export_path)

    @work(thread=True, exit_on_error=False, group="export")
    def _export(self, results: list[ResultDict], specs: list[CellSpec],
                errors: list[FileErrorDict], seconds: float, path: str) -> None:
        from laya_tui.report.document import write_report
        from laya_tui.report.outputs import make_report

        try:
            report = make_report(results, Discovery(specs, errors), seconds, self.gate_settings)
            write_report(path, report)
        except OSError as exc:
            self.post_message(RunControl.RunFailed(f"cannot write {path}: {exc}"))
            return
        self.post_message(self.ReportExported(path, len(results), report["summary"]["passed"]))

    def on_laya_app_report_exported(self, message: LayaApp.ReportExported) -> None:
        verdict = "PASS" if message.passed else "FAIL"
        self.notify(f"{message.probes} probes, verdict {verdict} -> {message.path}",
                    title="report exported")

    def open_site(self, row: SignalRow | None) -> None:
        """Open the signal's call site in ``$EDITOR`` at its line (the app is suspended)."""
        open_site(self, row, self.workspace)

    def action_help(self) -> None:
        from laya_tui.tui.screens.help import HelpScreen

        bindings = [b for b in [*self.BINDINGS, *MainScreen.BINDINGS]
                    if isinstance(b, Binding)]
        self.push_screen(HelpScreen(bindings, off=self.hidden_actions(),
                                    why_off=self.offline))

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


def _laya_commands() -> type[Provider]:
    """The palette provider, imported when the palette first opens."""
    from laya_tui.tui.commands import LayaCommands

    return LayaCommands
