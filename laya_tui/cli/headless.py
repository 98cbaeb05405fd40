"""Headless mode: run the probes, write the JSON report, print a summary, exit by the gates."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from laya_tui.core.errors import EXIT_OK
from laya_tui.core.events import Event, ProbeFinished
from laya_tui.core.logtext import printable
from laya_tui.core.run import discover_checked, run_probes
from laya_tui.core.runner import Discovery, Runner
from laya_tui.core.settings import RunOptions, Settings
from laya_tui.report.gates import GateSettings
from laya_tui.report.outputs import finish, make_report


def list_probes(config: RunOptions) -> int:
    """``--list``: print the probe ids, one a line, running nothing."""

    async def go() -> Discovery:
        runner = Runner(config)
        try:
            return await discover_checked(runner)
        finally:
            await runner.close()

    disc = asyncio.run(go())
    out = sys.stdout
    for p in disc.probes:
        out.write(p["id"] + "\n")
    out.flush()
    return EXIT_OK


def _progress(quiet: bool) -> Callable[[Event], None]:
    def on_event(event: Event) -> None:
        if quiet or not isinstance(event, ProbeFinished):
            return
        from laya_tui.report.views.legend import State, cell_state, not_run, state_mark

        r = event.result
        state = cell_state(r)  # the word every output uses for the cell (views.legend)
        tag = "cached" if r.get("cached") else f"{r.get('seconds', 0):.1f}s"
        node = r.get("node")  # --cluster: where it ran (report/5)
        if isinstance(node, dict) and node.get("host"):
            tag += f" on {node['host']} {str(node.get('id', ''))[:8]}"
        why = not_run(r) if state in (State.NOT_RUN, State.NOT_COMPARED) else (
            r.get("reason") if r["status"] != "ok" else None)
        reason = f"  {why}" if why else ""
        print(printable(f"  {state_mark(state).label:<10} {r['id']} ({tag}){reason[:200]}"),
              file=sys.stderr, flush=True)

    return on_event


def run_headless(settings: Settings, gates: GateSettings) -> int:
    """Run once, write the report, print the summary; exit 0 when every gate holds."""
    if settings.watch:
        from laya_tui.cli.watch_headless import run_watch_headless

        return run_watch_headless(settings, gates)
    try:
        from laya_tui.cluster.factory import make_runner

        results, disc, seconds = asyncio.run(run_probes(settings.run,
                                                        _progress(settings.quiet),
                                                        make_runner=make_runner))
    except asyncio.CancelledError:
        print("laya-tui: terminated", file=sys.stderr)
        return 143
    report = make_report(results, disc, seconds, gates)
    return finish(report, settings, settings.outputs.json)
