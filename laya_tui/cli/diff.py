"""``laya-tui diff``: the command line over :mod:`laya_tui.report.diff`."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from laya_tui.core.errors import EXIT_OK, UsageError
from laya_tui.core.files import check_output_path
from laya_tui.core.settings import DEFAULT_MARGIN
from laya_tui.report.diff import diff_markdown, diff_report, diff_reports, diff_text
from laya_tui.report.saved import load_saved_report


def shown_path(path: str, workspace: str) -> str:
    """A report's path as a pull request may show it: relative to the workspace when inside
    it, else its file name (a runner's /tmp/... path means nothing to a reviewer)."""
    real, root = os.path.realpath(path), os.path.realpath(workspace)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(real, root).replace(os.sep, "/")
    return os.path.basename(path)


def _parser() -> argparse.ArgumentParser:
    from laya_tui.cli.main import _Parser

    ap = _Parser(prog="laya-tui diff",
                 description="What changed between two saved reports: status changes, "
                 "signals new/gone/changed, tolerance values that moved, per probe.")
    ap.add_argument("base", metavar="BASE.json")
    ap.add_argument("new", metavar="NEW.json")
    ap.add_argument("--headless", action="store_true",
                    help="print the differences as text (implied without a terminal)")
    ap.add_argument("--markdown", metavar="PATH", help="also write the diff as markdown")
    ap.add_argument("--html", metavar="PATH", help="also write a self-contained HTML page")
    ap.add_argument("--json", metavar="PATH", help="also write the comparison as JSON")
    ap.add_argument("--pr-comment", metavar="PATH",
                    help="also write one pull-request comment (markdown with a hidden "
                    "<!-- laya-tui --> marker, to update in place; docs/ci.md)")
    ap.add_argument("--margin", type=float, default=DEFAULT_MARGIN, metavar="FRACTION",
                    help="tolerance values move when worse/better by more than this "
                    "(default: %(default)s)")
    ap.add_argument("--workspace", metavar="DIR", default=".",
                    help="where call-site files are looked up (default: the current folder)")
    return ap


def main(argv: list[str]) -> int:
    """``laya-tui diff``: exit 0 (a diff is information; regressions are in the output)."""
    from laya_tui.report.outputs import write_all

    args = _parser().parse_args(argv)
    for flag, out in (("--markdown", args.markdown), ("--html", args.html),
                      ("--json", args.json), ("--pr-comment", args.pr_comment)):
        check_output_path(out, flag)
    if not (math.isfinite(args.margin) and args.margin >= 0):  # nan, inf: not a margin
        raise UsageError(f"--margin must be a finite number >= 0, got {args.margin:g}")
    base, new = load_saved_report(args.base), load_saved_report(args.new)
    section = diff_reports(base, new, base_path=args.base, margin=args.margin)
    section["new_path"] = args.new
    view = diff_report(base, new, section)
    files = []  # written all or none
    base_shown, new_shown = shown_path(args.base, args.workspace), shown_path(args.new,
                                                                              args.workspace)
    if args.markdown:
        files.append(("--markdown", args.markdown,
                      lambda: diff_markdown(section, base_shown, new_shown)))
    if args.json:
        files.append(("--json", args.json,
                      lambda: json.dumps(section, indent=1, default=repr) + "\n"))
    if args.pr_comment:
        from laya_tui.report.pr_comment import build_pr_comment, link_base
        from laya_tui.report.sources import Sources

        files.append(("--pr-comment", args.pr_comment, lambda: build_pr_comment(
            section, base, new, base_label=base_shown, new_label=new_shown,
            sources=Sources(args.workspace), links=link_base())))
    if args.html:
        from laya_tui.report.html import build_html

        files.append(("--html", args.html, lambda: build_html(
            new, diff=view, title=f"laya-tui diff {args.base} → {args.new}",
            workspace=args.workspace)))
    write_all(files)
    if args.headless or not (sys.stdout.isatty() and sys.stdin.isatty()):
        sys.stdout.write(diff_text(section, args.base, args.new))
        return EXIT_OK
    from laya_tui.cli.show import run_saved_app
    from laya_tui.report.baseline import regressed

    n = regressed(section["regressions"])
    return run_saved_app(view, label=f"diff {args.base} → {args.new}: {n} regression(s), "
                         f"{len(section['improvements'])} improvement(s)",
                         workspace=args.workspace,
                         why_off="this is a diff of two saved reports")
