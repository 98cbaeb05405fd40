"""``laya-tui show REPORT.json``: the dashboard over a saved report (a CI artifact, a GPU
host's report), as after a live run; no worker starts and torch & co need not be installed.

Without a terminal (or with ``--headless``) it prints the report's summary. ``--html`` and
``--trace`` write the page and the timeline of the saved run. A file that is not a report,
or whose schema this version cannot read, is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from laya_tui.errors import EXIT_OK
from laya_tui.saved import load_saved_report

#: Why the re-run keys are off in ``show`` (the app says it when one is pressed).
WHY_OFF = "this is a saved report (laya-tui show); run laya-tui in its workspace to re-run"


def source_line(report: dict[str, Any], path: str) -> str:
    """One line naming the report and the machine that wrote it."""
    env = report.get("environment") or {}
    host = env.get("host") if isinstance(env.get("host"), dict) else {}
    versions = env.get("versions") if isinstance(env.get("versions"), dict) else {}
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


def headless_text(report: dict[str, Any], path: str) -> str:
    """What ``show`` prints without a terminal: source line, summary, baseline lines."""
    from laya_tui.report import human_summary

    lines = [source_line(report, path), human_summary(report)]
    if isinstance(report.get("baseline"), dict):
        from laya_tui.baseline import summary_lines

        try:
            lines += summary_lines(report["baseline"])
        except (KeyError, TypeError):
            pass
    return "\n".join(lines) + "\n"


def build_saved_app(report: dict[str, Any], *, label: str, workspace: str | None,
                    why_off: str = WHY_OFF, path: str | None = None) -> Any:
    """The dashboard over ``report``: replayed by the recorded runner, nothing runs."""
    from laya_tui.tui.app import build_app

    return build_app(recorded=report, workspace=os.path.abspath(workspace or "."),
                     offline=why_off, report_info={"label": label, "path": path,
                                                   "report": report})


def run_saved_app(report: dict[str, Any], *, label: str, workspace: str | None,
                  why_off: str = WHY_OFF, path: str | None = None) -> int:
    """Run :func:`build_saved_app` until the user quits; exit 0."""
    build_saved_app(report, label=label, workspace=workspace, why_off=why_off,
                    path=path).run()
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    from laya_tui.cli import _Parser

    ap = _Parser(prog="laya-tui show",
                 description="Open a saved laya-tui report in the dashboard (nothing runs).")
    ap.add_argument("report", metavar="REPORT.json")
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
    from laya_tui.cli import check_output_path
    from laya_tui.report import write_atomic

    args = _parser().parse_args(argv)
    check_output_path(args.html)
    check_output_path(args.trace)
    report = load_saved_report(args.report)
    if args.html:
        from laya_tui.html_report import build_html

        write_atomic(args.html, build_html(report, title=f"laya-tui {args.report}",
                                           workspace=args.workspace))
    if args.trace:
        from laya_tui.trace import trace_json

        write_atomic(args.trace, trace_json(report))
    if args.headless or args.html or args.trace or not (sys.stdout.isatty()
                                                        and sys.stdin.isatty()):
        sys.stdout.write(headless_text(report, args.report))
        return EXIT_OK
    return run_saved_app(report, label=source_line(report, args.report),
                         workspace=args.workspace, path=args.report)
