"""The dashboard launcher: ``laya-tui`` on a terminal (the CLI decides; this runs the app).

Imports Textual only when called, never torch & co (docs/architecture.md, 'Processes and
the one rule').
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from laya_tui.core.errors import EXIT_OK

if TYPE_CHECKING:
    from laya_tui.core.settings import Settings
    from laya_tui.report.gates import GateSettings


def run_app(settings: Settings, gates: GateSettings) -> int:
    """Run the dashboard until the user quits; returns the exit code.

    With ``--json PATH`` (or ``--junit``/``--markdown``/``--html``/``--trace``) the final
    report is written on the way out and the exit code follows the gates, as in headless
    mode; otherwise quitting exits 0.
    """
    from laya_tui.tui.factory import build_app

    json_path = settings.outputs.json if settings.outputs.json != "-" else None
    app = build_app(settings.run, watch=settings.watch, export_path=json_path, gate_settings=gates)
    try:
        app.run()
    finally:
        if app.runner is not None:
            app.runner.kill_all()
    if not (json_path or settings.outputs.ci_files()):
        return EXIT_OK
    results = app.model.results()
    if not results:
        print("laya-tui: no probe finished; no report written", file=sys.stderr)
        return EXIT_OK
    from laya_tui.core.runner import Discovery
    from laya_tui.report.outputs import finish, make_report

    specs = list(app.probe_specs.values())
    report = make_report(results, Discovery(specs, app.model.errors), app.model.run_seconds,
                         gates)
    return finish(report, settings, json_path)
