"""Headless mode: run the probes, write the JSON report, print a summary, exit by the gates."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from typing import Any

from laya_tui.errors import EXIT_GATE, EXIT_OK, UsageError
from laya_tui.events import Event, ProbeFinished
from laya_tui.gates import GateSettings, evaluate_all
from laya_tui.report import build_report, human_summary, write_atomic, write_report
from laya_tui.runner import Discovery, RunConfig, Runner


def _first_error(disc: Discovery) -> str:
    e = disc.errors[0]
    where = f"{e['file']}:{e['line']}" if e.get("line") else e["file"]
    more = f" (and {len(disc.errors) - 1} more)" if len(disc.errors) > 1 else ""
    return f"{where}: {e['error']}{more}"


async def discover_checked(runner: Runner) -> Discovery:
    """Discover probes; a broken probe file or an empty ``--only`` is a usage error."""
    disc = await runner.discover()
    if disc.errors:
        raise UsageError(_first_error(disc))
    selected = disc.shard["selected"] if disc.shard else len(disc.probes)
    if runner.config.only and not selected:
        raise UsageError(f"--only {' '.join(runner.config.only)} matches no probe")
    return disc


def list_probes(config: RunConfig) -> int:
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


def _progress(quiet: bool):  # -> Callable[[Event], None]
    def on_event(event: Event) -> None:
        if quiet or not isinstance(event, ProbeFinished):
            return
        r = event.result
        tag = "cached" if r.get("cached") else f"{r.get('seconds', 0):.1f}s"
        reason = f"  {r['reason']}" if r.get("reason") and r["status"] != "ok" else ""
        print(f"  {r['status']:<8} {r['id']} ({tag}){reason[:200]}", file=sys.stderr, flush=True)

    return on_event


async def run_probes(config: RunConfig, on_event: Any = None
                     ) -> tuple[list[dict[str, Any]], Discovery, float]:
    """Discover and run every selected probe; workers are ended on the way out."""
    runner = Runner(config, on_event=on_event)
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is not None:
        try:
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        except (NotImplementedError, RuntimeError):
            pass
    t0 = time.perf_counter()
    try:
        disc = await discover_checked(runner)
        if disc.shard and not disc.probes:
            print(f"laya-tui: shard {disc.shard['index']}/{disc.shard['count']} holds no cell "
                  f"({disc.shard['selected']} selected)", file=sys.stderr)
        results = await runner.run(disc.probes)
    finally:
        runner.kill_all()
        await runner.close()
    return results, disc, time.perf_counter() - t0


def make_report(results: list[dict[str, Any]], disc: Discovery, seconds: float,
                settings: GateSettings | None = None) -> dict[str, Any]:
    """Evaluate gates (and the baseline comparison) and build the report document."""
    gates, extra = evaluate_all(results, settings, disc.errors)
    if disc.shard:
        extra = dict(extra, shard=disc.shard)
    return build_report(results, seconds=seconds, gates=gates, errors=disc.errors,
                        extra=extra or None)


def run_headless(config: RunConfig, args: argparse.Namespace) -> int:
    """Run once, write the report, print the summary; exit 0 when every gate holds."""
    if getattr(args, "watch", False):
        from laya_tui.watch_headless import run_watch_headless

        return run_watch_headless(config, args)
    try:
        results, disc, seconds = asyncio.run(run_probes(config, _progress(args.quiet)))
    except asyncio.CancelledError:
        print("laya-tui: terminated", file=sys.stderr)
        return 143
    report = make_report(results, disc, seconds, getattr(args, "gate_settings", None))
    if args.json:
        write_report(args.json, report)  # streamed in chunks, "-" is stdout
    write_ci_files(report, args)
    print(human_summary(report), file=sys.stderr)
    if report.get("baseline"):
        from laya_tui.baseline import summary_lines

        print("\n".join(summary_lines(report["baseline"])), file=sys.stderr)
    return EXIT_OK if report["summary"]["passed"] else EXIT_GATE


def write_ci_files(report: dict[str, Any], args: argparse.Namespace) -> None:
    """``--junit``, ``--markdown`` and ``$GITHUB_STEP_SUMMARY`` (paths checked up front)."""
    if getattr(args, "junit", None):
        from laya_tui.junit import build_junit

        write_atomic(args.junit, build_junit(report))
    from laya_tui.markdown import write_markdown_outputs

    write_markdown_outputs(report, getattr(args, "markdown", None))
    if getattr(args, "html", None):
        from laya_tui.html_report import build_html

        write_atomic(args.html, build_html(report, workspace=getattr(args, "workspace", None)))
    if getattr(args, "trace", None):
        from laya_tui.trace import trace_json

        write_atomic(args.trace, trace_json(report))
