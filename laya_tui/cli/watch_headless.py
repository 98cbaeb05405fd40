"""``laya-tui --headless --watch``: one JSON change record per line on stdout, for editors
and scripts; a short human line per record on stderr.

The record shape is documented in :mod:`laya_tui.watch.engine` (the full ``result`` is left out
of the stream). With ``--json PATH`` the current report is rewritten after every record.
SIGINT/SIGTERM end the watch cleanly (workers killed, exit 0).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TextIO

from laya_tui.core.errors import EXIT_OK, UsageError
from laya_tui.core.jsonfast import dumps_strict
from laya_tui.core.logtext import printable
from laya_tui.core.settings import DEFAULT_DEBOUNCE_MS, RunOptions, Settings
from laya_tui.report.gates import GateSettings
from laya_tui.watch.engine import Watcher
from laya_tui.watch.records import Record


def stream_line(record: Record) -> str:
    """The record as one compact JSON line (without the full ``result``)."""
    slim = {k: v for k, v in record.items() if k != "result"}
    return dumps_strict(slim, default=repr, separators=(",", ":"))


def human_line(record: Record) -> str:
    """A short line for stderr."""
    kind = record["type"]
    if kind == "ready":
        return (f"watch: {record.get('probes', 0)} probes ran in {record['seconds']:.1f} s; "
                "watching for changes (Ctrl-C to stop)")
    trig = f" <- {record['trigger']}" if record.get("trigger") else ""
    if kind == "removed":
        return f"watch: removed  {record['probe']}{trig}"
    if kind == "diagnostic":
        return f"watch: error    {record.get('reason')}{trig}"
    diff = (f" +{len(record['new'])} -{len(record['gone'])} ~{len(record['changed'])}"
            if record.get("previous_status") is not None else "")
    took = f" {record['seconds']:.2f}s" if record.get("seconds") is not None else ""
    reason = f"  {record['reason']}"[:200] if record.get("reason") and \
        record.get("status") != "ok" else ""
    return f"watch: {record.get('status', ''):<8} {record['probe']}{took}{trig}{diff}{reason}"


class StreamWriter:
    """``on_record`` for headless watch: JSON to ``out``, a human line to ``err``."""

    def __init__(self, out: TextIO, err: TextIO, *, quiet: bool = False,
                 report_path: str | None = None, watcher: Watcher | None = None) -> None:
        self.out, self.err, self.quiet = out, err, quiet
        self.report_path = report_path
        self.watcher = watcher

    def __call__(self, record: Record) -> None:
        try:
            self.out.write(stream_line(record) + "\n")
            self.out.flush()
        except BrokenPipeError:  # the reader went away: stop watching
            if self.watcher is not None:
                self.watcher.stop()
            return
        if not self.quiet:
            print(printable(human_line(record)), file=self.err, flush=True)
        if self.report_path and self.watcher is not None and record["type"] != "ready":
            from laya_tui.report.document import write_atomic

            write_atomic(self.report_path,
                         dumps_strict(self.watcher.report(), indent=1, default=repr) + "\n")


async def watch_headless(config: RunOptions, *, debounce_ms: int = DEFAULT_DEBOUNCE_MS,
                         report_path: str | None = None, quiet: bool = False,
                         out: TextIO | None = None, err: TextIO | None = None,
                         gate_settings: GateSettings | None = None) -> int:
    """Run the watcher until SIGINT/SIGTERM; records go to ``out`` (stdout)."""
    writer = StreamWriter(out or sys.stdout, err or sys.stderr, quiet=quiet,
                          report_path=report_path)
    ignore = [report_path] if report_path else []
    watcher = Watcher(config, on_record=writer, debounce_ms=debounce_ms, ignore_paths=ignore,
                      gate_settings=gate_settings)
    writer.watcher = watcher
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    stopping = False

    def on_signal() -> None:
        nonlocal stopping
        if stopping:  # a second Ctrl-C: do not wait for a clean stop
            watcher.runner.kill_all()
            os._exit(130)
        stopping = True
        watcher.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        await watcher.run()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    return EXIT_OK


def run_watch_headless(settings: Settings, gates: GateSettings) -> int:
    """Entry point from ``run_headless`` when ``--watch`` is set."""
    debounce = settings.debounce_ms
    debounce = DEFAULT_DEBOUNCE_MS if debounce is None else debounce
    if debounce < 0:
        raise UsageError(f"--debounce-ms must be zero or more, got {debounce}")
    report = settings.outputs.json
    if report == "-":
        raise UsageError("--watch writes change records on stdout; give --json a file path")
    try:
        code = asyncio.run(watch_headless(settings.run, debounce_ms=max(1, debounce),
                                          report_path=report, quiet=settings.quiet,
                                          gate_settings=gates))
    except KeyboardInterrupt:
        code = EXIT_OK
    print("watch: stopped", file=sys.stderr, flush=True)
    return code
