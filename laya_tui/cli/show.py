"""``laya-tui show REPORT.json``: the dashboard over a saved report (a CI artifact, a GPU
host's report), as after a live run; no worker starts and torch & co need not be installed.
``laya-tui show TRACE_DIR`` opens a TORCH_TRACE folder (or one of its logs) the same way,
read by :mod:`laya_tui.report.trace_import`.

Without a terminal (or with ``--headless``) it prints the report's summary. ``--html`` and
``--trace`` write the page and the timeline of the saved run. A file that is not a report,
or whose schema this version cannot read, is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from laya_tui.core.errors import EXIT_OK, EXIT_USAGE
from laya_tui.core.logtext import printable
from laya_tui.core.report_types import ReportDict
from laya_tui.core.shapes import as_dict
from laya_tui.core.signals import READABLE_SCHEMAS
from laya_tui.core.tracelog import looks_like_trace
from laya_tui.report.saved import load_saved_report

if TYPE_CHECKING:
    from laya_tui.core.events import Event
    from laya_tui.core.replay import RecordedRunner
    from laya_tui.tui.screens.report_info import SavedReportInfo

#: Seconds a lazily read report waits for the first frame to reach the terminal, per MiB
#: of report (its parse holds the GIL about that long), and at most.
PAINT_GRACE_PER_MIB, PAINT_GRACE_MAX = 0.02, 0.5
#: Seconds of each slice spent folding a saved report's signals into the dashboard (a live
#: run keeps 8 ms, leaving the loop to workers' pipes; a replay has none to serve). 20 ms
#: slices beside a repaint made the load's longest loop stall (56-86 ms); 10 ms keep it
#: under 50 at ~13% more load time.
SAVED_BUDGET = 0.010
#: Why the re-run keys are off in ``show`` (the app says it when one is pressed).
WHY_OFF = "this is a saved report (laya-tui show); run laya-tui in its workspace to re-run"


def source_line(report: ReportDict, path: str) -> str:
    """One line naming the report and the machine that wrote it."""
    env = as_dict(report.get("environment"))
    host = as_dict(env.get("host"))
    versions = as_dict(env.get("versions"))
    bits = [os.path.basename(path)]
    if host.get("hostname"):
        bits.append(f"host {host['hostname']}")
    if host.get("machine"):
        bits.append(str(host["machine"]))
    for lib in ("python", "torch"):
        if versions.get(lib):
            bits.append(f"{lib} {versions[lib]}")
    if report.get("created"):
        bits.append(f"written {report['created']}")
    return "saved report " + ", ".join(bits)


def trace_line(report: ReportDict) -> str:
    """One line naming an imported TORCH_TRACE folder: its logs and their torch."""
    imported = report.get("imported")
    files = (imported.get("files") if imported else None) or []
    where = imported.get("path", "") if imported else ""
    torch = sorted({str(f["torch"]) for f in files if f.get("torch")})
    return (f"TORCH_TRACE {where}: {len(files)} log(s) ("
            + ", ".join(f["label"] for f in files) + ")"
            + (f", torch {', '.join(torch)}" if torch else ""))


def headless_text(report: ReportDict, path: str) -> str:
    """What ``show`` prints without a terminal: source line, summary, baseline lines."""
    from laya_tui.report.document import human_summary

    first = trace_line(report) if report.get("imported") else source_line(report, path)
    lines = [first, human_summary(report)]
    if isinstance(report.get("baseline"), dict):
        from laya_tui.report.baseline import summary_lines

        try:
            lines += summary_lines(report["baseline"])
        except (KeyError, TypeError):
            pass
    if isinstance(report.get("env_comparison"), dict):  # --env: the whole comparison
        from laya_tui.report.envview import env_text

        try:
            lines.append(env_text(report["env_comparison"], report.get("envs")).rstrip())
        except (KeyError, TypeError):
            pass
    return printable("\n".join(lines)) + "\n"  # a report's raw controls never reach a terminal


def build_saved_app(report: ReportDict, *, label: str, workspace: str | None,
                    why_off: str = WHY_OFF, path: str | None = None) -> Any:
    """The dashboard over ``report``: replayed by the recorded runner, nothing runs."""
    from laya_tui.tui.factory import build_app

    return build_app(recorded=report, workspace=os.path.abspath(workspace or "."),
                     offline=why_off, report_info={"label": label, "path": path,
                                                   "report": report}, budget=SAVED_BUDGET)


def load_trace(path: str) -> ReportDict:
    """The report of a TORCH_TRACE folder or log (a one-line UsageError when there is none)."""
    from laya_tui.report.trace_import import trace_report

    return trace_report(path)


def trace_files_or_fail(path: str) -> None:
    """Fail before the dashboard starts when ``path`` holds no TORCH_TRACE log."""
    from laya_tui.core.errors import UsageError
    from laya_tui.core.tracelog import trace_files

    if not trace_files(path):
        raise UsageError(f"no TORCH_TRACE log in {path} (torch writes "
                         "dedicated_log_torch_trace_*.log files there)")


def build_lazy_app(path: str, *, workspace: str | None,
                   load: Callable[[str], ReportDict] = load_saved_report) -> Any:
    """The dashboard over the report at ``path``, read after the first frame (a 100,000
    signal report takes seconds to parse); an unreadable one ends the app with exit 2.
    ``load``: how the path becomes a report (a saved report, a TORCH_TRACE folder)."""
    from laya_tui.core.replay import RecordedRunner
    from laya_tui.tui.factory import build_app

    info: SavedReportInfo = {"label": f"saved report {os.path.basename(path)} (reading…)",
                            "path": path, "report": None}

    def factory(on_event: Callable[[Event], None]) -> RecordedRunner:
        # In a thread, after the first refresh. json.loads holds the GIL for the whole
        # parse: give Textual's writer thread a moment to put that frame on the terminal.
        try:
            mib = os.path.getsize(path) / 2**20
        except OSError:
            mib = 0.0
        time.sleep(min(PAINT_GRACE_MAX, PAINT_GRACE_PER_MIB * mib))
        report = load(path)
        info["report"] = report
        info["label"] = trace_line(report) if report.get("imported") else source_line(
            report, path)
        app.model.source, app.model.fixed_gates = info["label"], report["gates"]
        return RecordedRunner(report, on_event)

    app = build_app(runner_factory=factory, workspace=os.path.abspath(workspace or "."),
                    offline=WHY_OFF, report_info=info, budget=SAVED_BUDGET)
    return app


def early_check(path: str) -> None:
    """Fail before the dashboard starts unless the file begins like a readable report: its
    first bytes must name a schema this version reads (else the full check's message)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""
    m = re.search(rb'"schema"\s*:\s*"([^"\\]{0,100})"', head)
    if m is None or m.group(1).decode("utf-8", "replace") not in READABLE_SCHEMAS:
        load_saved_report(path)  # raises the one-line UsageError (or reads an odd layout)


def run_saved_app(report: ReportDict, *, label: str, workspace: str | None,
                  why_off: str = WHY_OFF, path: str | None = None) -> int:
    """Run :func:`build_saved_app` until the user quits; exit 0."""
    build_saved_app(report, label=label, workspace=workspace, why_off=why_off,
                    path=path).run()
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    from laya_tui.cli.main import _Parser

    ap = _Parser(prog="laya-tui show",
                 description="Open a saved laya-tui report in the dashboard (nothing runs).")
    ap.add_argument("report", metavar="REPORT.json|TRACE_DIR")
    ap.add_argument("--headless", action="store_true",
                    help="print the summary instead (implied without a terminal)")
    ap.add_argument("--html", metavar="PATH", help="write a self-contained HTML page")
    ap.add_argument("--trace", metavar="PATH",
                    help="write the run's timeline as Chrome trace JSON (Perfetto)")
    ap.add_argument("--workspace", metavar="DIR", default=".",
                    help="where call-site files are looked up (default: the current folder)")
    return ap


def main(argv: list[str]) -> int:
    """``laya-tui show``."""
    from laya_tui.core.files import check_output_path
    from laya_tui.report.outputs import write_all

    args = _parser().parse_args(argv)
    check_output_path(args.html, "--html")
    check_output_path(args.trace, "--trace")
    from laya_tui.cli.serve import served

    interactive = not (args.headless or args.html or args.trace) and (served() or (
        sys.stdout.isatty() and sys.stdin.isatty()))
    is_trace = os.path.isdir(args.report) or looks_like_trace(args.report)
    if interactive:
        if is_trace:
            trace_files_or_fail(args.report)
        else:
            early_check(args.report)
        app = build_lazy_app(args.report, workspace=args.workspace,
                             load=load_trace if is_trace else load_saved_report)
        app.run()
        if app.exit_error:
            print(f"laya-tui show: error: {app.exit_error}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    report = load_trace(args.report) if is_trace else load_saved_report(args.report)
    files = []  # written all or none
    if args.html:
        from laya_tui.report.html import build_html

        files.append(("--html", args.html, lambda: build_html(
            report, title=f"laya-tui {args.report}", workspace=args.workspace)))
    if args.trace:
        from laya_tui.core.trace import trace_json

        files.append(("--trace", args.trace, lambda: trace_json(report)))
    write_all(files)
    sys.stdout.write(headless_text(report, args.report))
    return EXIT_OK
