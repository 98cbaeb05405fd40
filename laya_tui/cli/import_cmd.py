"""``laya-tui import TRACE_DIR``: a TORCH_TRACE folder (one log per rank) as a laya-tui report,
for CI: ``--json``, ``--junit``, ``--markdown``, ``--html``, ``--trace``, ``--sarif``,
``--annotations`` and the gates, as after a run (docs/architecture.md, 'TORCH_TRACE: reading
the logs users have').

Nothing runs and torch is not imported. Exit 0: every gate holds, 1: a gate failed, 2: no
TORCH_TRACE log there (or a bad flag, an unwritable output).
"""

from __future__ import annotations

import argparse
import sys

from laya_tui.core.errors import UsageError, internal_error


def build_parser() -> argparse.ArgumentParser:
    """``laya-tui import`` flags (the gate flags mean what they mean for a run)."""
    from laya_tui.cli.main import (
        SubcommandParser,
        add_finding_flags,
        add_gate_flags,
        add_report_flags,
        add_workspace_flag,
    )

    ap = SubcommandParser(prog="laya-tui import",
                 description="Read a TORCH_TRACE folder written by any torch.compile run (one "
                 "log per rank) as a laya-tui report: graph breaks, recompiles with the "
                 "failing guard, compiles with seconds and cache hits, failed exports. Exit 0: "
                 "every gate holds, 1: a gate failed, 2: no TORCH_TRACE log there.")
    ap.add_argument("trace", metavar="TRACE_DIR",
                    help="the folder TORCH_TRACE named (or one of its logs)")
    add_report_flags(ap, "write the report to PATH (or '-' for stdout)")
    ap.add_argument("--trace", dest="timeline", metavar="PATH",
                    help="also write the compiles' timeline as Chrome trace JSON (Perfetto)")
    add_workspace_flag(ap)
    add_gate_flags(ap)
    add_finding_flags(ap)  # --sarif, --annotations
    return ap


def main(argv: list[str]) -> int:
    """``laya-tui import``: the gates' exit code; 2 on bad input, 3 on an internal error."""
    try:
        return _main(argv)
    except UsageError:
        raise  # printed as one line by laya_tui.cli.main (exit 2)
    except Exception as exc:  # noqa: BLE001 - exit 3 with one line, never a traceback
        return internal_error("laya-tui import", exc)


def _main(argv: list[str]) -> int:
    from laya_tui.cli.config import settings_from
    from laya_tui.report.gates import prepare_gates
    from laya_tui.report.outputs import finish
    from laya_tui.report.trace_import import trace_report

    args = build_parser().parse_args(argv)
    args.trace, trace_dir = args.timeline, args.trace  # the settings' --trace is the timeline
    settings = settings_from(args, run=False)
    gates = prepare_gates(settings)  # outputs writable and distinct, baseline loaded
    report = trace_report(trace_dir, gates)
    files = report["imported"]["files"]
    print(f"laya-tui import: {trace_dir}: {len(files)} log(s), "
          + ", ".join(f"{f['label']} ({f['records']} records"
                      + (f", {f['bad']} bad" if f["bad"] else "")
                      + (f", {f['unknown']} of unknown type" if f["unknown"] else "") + ")"
                      for f in files), file=sys.stderr)
    return finish(report, settings, settings.outputs.json)
