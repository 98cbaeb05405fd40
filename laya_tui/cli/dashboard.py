"""The dashboard launcher: ``laya-tui`` on a terminal (the CLI decides; this runs the app).

Imports Textual only when called, never torch & co (docs/architecture.md, 'Processes and
the one rule').
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from laya_tui.core.errors import EXIT_OK


def run_app(config: Any, args: argparse.Namespace) -> int:
    """Run the dashboard until the user quits; returns the exit code.

    With ``--json PATH`` (or ``--junit``/``--markdown``) the final report is written on the
    way out and the exit code follows the gates, as in headless mode; otherwise quitting
    exits 0.
    """
    from laya_tui.tui.app import build_app

    json_path = args.json if args.json and args.json != "-" else None
    settings = getattr(args, "gate_settings", None)
    app = build_app(config, watch=bool(getattr(args, "watch", False)), export_path=json_path,
                    gate_settings=settings)
    try:
        app.run()
    finally:
        if app.runner is not None:
            app.runner.kill_all()
    wants_files = json_path or any(getattr(args, k, None)
                                   for k in ("junit", "markdown", "html", "trace"))
    if not wants_files:
        return EXIT_OK
    results = app.model.results()
    if not results:
        print("laya-tui: no probe finished; no report written", file=sys.stderr)
        return EXIT_OK
    from laya_tui.core.runner import Discovery
    from laya_tui.report.outputs import finish, make_report

    specs = list(app.probe_specs.values())
    report = make_report(results, Discovery(specs, app.model.errors), app.model.run_seconds,
                         settings)
    return finish(report, args, json_path)
