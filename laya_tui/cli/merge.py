"""``laya-tui merge``: the command line over :mod:`laya_tui.report.merge`."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from laya_tui.core.errors import UsageError, internal_error
from laya_tui.report.merge import Input, dumps_report, load_report, merge_reports


def build_parser() -> argparse.ArgumentParser:
    """``laya-tui merge`` flags (the gate flags mean what they mean for a run)."""
    from laya_tui.cli.main import (
        SubcommandParser,
        add_finding_flags,
        add_gate_flags,
        add_report_flags,
        add_workspace_flag,
    )

    ap = SubcommandParser(prog="laya-tui merge",
                 description="Merge laya-tui reports (shards, hosts) into one and evaluate "
                 "the gates over the whole. Exit 0: every gate holds, 1: a gate failed, "
                 "2: bad input (conflicting duplicates, another schema version).")
    ap.add_argument("reports", nargs="+", metavar="REPORT.json",
                    help="reports to merge ('-' reads one from stdin)")
    add_report_flags(ap, "write the merged report to PATH (or '-' for stdout)")
    ap.add_argument("--prefer", choices=("newest",),
                    help="a probe whose results differ between inputs: keep the newest "
                    "report's (default: an input error)")
    add_workspace_flag(ap)
    add_gate_flags(ap)
    add_finding_flags(ap)
    return ap


def main(argv: list[str]) -> int:
    """``laya-tui merge``: exit 0 when every gate holds, 1 when one fails, 2 on bad input."""
    try:
        return _main(argv)
    except UsageError:
        raise  # printed as one line by laya_tui.cli.main (exit 2)
    except Exception as exc:  # noqa: BLE001 - exit 3 with one line, never a traceback
        return internal_error("laya-tui merge", exc)


def _main(argv: list[str]) -> int:
    from laya_tui.cli.config import settings_from
    from laya_tui.report.gates import prepare_gates
    from laya_tui.report.outputs import finish

    args = build_parser().parse_args(argv)
    if args.reports.count("-") > 1:
        raise UsageError("only one report can come from stdin ('-')")
    # the gate flags and outputs: flags > [tool.laya-tui] > defaults, as for a run
    settings = settings_from(args, run=False)
    gates = prepare_gates(settings)  # outputs writable and distinct, baseline loaded
    inputs = [Input(path, load_report(path)) for path in args.reports]
    report, notes = merge_reports(inputs, gates, args.prefer)
    for note in notes[:10]:
        print(f"laya-tui merge: {note}", file=sys.stderr)
    if len(notes) > 10:
        print(f"laya-tui merge: ... and {len(notes) - 10} more kept duplicates", file=sys.stderr)
    per_host = Counter(p["host"] for p in report["probes"])
    print(f"laya-tui merge: {len(inputs)} reports, hosts: "
          + ", ".join(f"{h} ({per_host.get(h, 0)} probes)" for h in report["hosts"]),
          file=sys.stderr)
    json_path = settings.outputs.json  # every output, JSON included, written all or none
    return finish(report, settings, json_path,
                  json_text=dumps_report(report) if json_path else None)
