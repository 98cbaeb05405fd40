"""Building the dashboard app: fed by the live runner, a recorded report, or any runner
factory (tests and benchmarks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from laya_tui.core.events import Event
from laya_tui.core.report_types import ReportDict
from laya_tui.core.runner_like import RunnerFactory, RunnerLike
from laya_tui.core.settings import RunOptions
from laya_tui.tui.app import LayaApp
from laya_tui.tui.screens.report_info import SavedReportInfo
from laya_tui.tui.watch_control import WatchFactory

if TYPE_CHECKING:
    from laya_tui.report.gates import GateSettings


def build_app(config: RunOptions | None = None, *,
              recorded: str | Path | ReportDict | None = None,
              runner_factory: RunnerFactory | None = None, workspace: str | None = None,
              autorun: bool = True, watch: bool = False,
              watch_factory: WatchFactory | None = None, export_path: str | None = None,
              replay_delay: float = 0.0, flush_interval: float = 1 / 30,
              gate_settings: GateSettings | None = None, offline: str | None = None,
              report_info: SavedReportInfo | None = None, budget: float = 0.008) -> LayaApp:
    """The app, fed by the live runner (``config``), a recorded report, or any factory."""
    if runner_factory is None:
        if recorded is not None:
            from laya_tui.core.replay import RecordedRunner

            def runner_factory(on_event: Callable[[Event], None]) -> RunnerLike:
                return RecordedRunner(recorded, on_event, delay=replay_delay)
        elif config is not None:
            import dataclasses

            from laya_tui.cluster.factory import make_runner

            # a user is watching: the shortest cells of each family first, so results
            # appear at once (headless runs the longest first)
            config = dataclasses.replace(config, order="shortest-first")

            def runner_factory(on_event: Callable[[Event], None]) -> RunnerLike:
                return make_runner(config, on_event=on_event)
        else:
            raise ValueError("build_app needs a RunOptions, a recorded report or a runner factory")
    if workspace is None and config is not None:
        workspace = config.workspace
    return LayaApp(runner_factory, workspace=workspace, autorun=autorun, watch=watch,
                   watch_factory=watch_factory, export_path=export_path,
                   flush_interval=flush_interval, gate_settings=gate_settings,
                   offline=offline, report_info=report_info, budget=budget)
