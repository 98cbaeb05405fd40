"""Issue 42 items 1-2: do the outputs give each cell the same state?

Usage: python benchmarks/bench_states.py [--no-run]

For each report, every output is rendered from it as laya-tui writes it (the tree label,
the HTML page's probes table, JUnit, SARIF, markdown, the annotations, the headless summary
and ``show --headless``) and read back (tests/_state_words.py); a cell an output names with
another word than the report's state counts as one disagreement. Reports: the recorded demo
and TileLang reports (tests/fixtures/recorded, report/2: states derived), the saved report/2
of tests/fixtures/report_v2, and (unless ``--no-run``) a fresh headless run of
tests/_states_project.py (wrong-output and no-check TileLang kernels, a probe that raises,
one that skips). Prints, per report: cells, cells per state, outputs x cells compared,
disagreements (target 0), and the cells built but not run or not compared that any output
calls ``ok`` (target 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from laya_tui.cli.show import headless_text  # noqa: E402
from laya_tui.report.annotations import annotation_lines  # noqa: E402
from laya_tui.report.document import human_summary  # noqa: E402
from laya_tui.report.findings import collect_findings  # noqa: E402
from laya_tui.report.junit import build_junit  # noqa: E402
from laya_tui.report.markdown import build_markdown  # noqa: E402
from laya_tui.report.sarif import build_sarif, state_words  # noqa: E402
from laya_tui.report.sources import Sources  # noqa: E402
from laya_tui.report.views.legend import State, cell_state, state_word  # noqa: E402
from tests import _state_words as words  # noqa: E402  (the readers the test uses)

RECORDED = ROOT / "tests" / "fixtures" / "recorded"


def outputs_of(report: dict[str, Any], workspace: str) -> dict[str, dict[str, str]]:
    """``{output: {cell: word}}``, every output rendered in this process from ``report``."""
    sources = Sources(workspace)
    found = collect_findings(report, sources)
    notes = "\n".join(annotation_lines(found, states=state_words(report)))
    return {"tree": words.tree_words(report), "html": words.html_words(report),
            "junit": words.junit_words(build_junit(report)),
            "sarif": words.sarif_words(build_sarif(report, sources, findings=found)),
            "markdown": words.markdown_words(build_markdown(report)),
            "annotations": words.annotation_words(notes),
            "headless": words.summary_words(human_summary(report)),
            "show": words.summary_words(headless_text(report, "r.json"))}


def measure(name: str, report: dict[str, Any], workspace: str) -> dict[str, Any]:
    want = {p["id"]: state_word(cell_state(p)) for p in report["probes"]}
    outs = outputs_of(report, workspace)
    differ = words.disagreements(want, outs)
    built = {p["id"] for p in report["probes"]
             if cell_state(p) in (State.NOT_RUN, State.NOT_COMPARED)}
    called_ok = sorted({(o, pid) for o, cells in outs.items() for pid, w in cells.items()
                        if pid in built and w == "ok"})
    row = {"report": name, "cells": len(want),
           "states": dict(Counter(cell_state(p) for p in report["probes"]).most_common()),
           "compared": sum(len(c) for c in outs.values()), "differ": len(differ),
           "built_called_ok": len(called_ok), "examples": differ[:5]}
    print(f"{name}: {row['cells']} cells {row['states']}; {row['compared']} output x cell "
          f"words compared; states that differ between outputs: {row['differ']}; built "
          f"cells any output calls ok: {row['built_called_ok']}")
    for d in differ[:5]:
        print(f"    {d}")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-run", action="store_true", help="skip the fresh headless run")
    args = ap.parse_args()
    rows = []
    for name, path, ws in (("demo", RECORDED / "demo_report.json", RECORDED / "demo_ws"),
                           ("tilelang", RECORDED / "tilelang_report.json", ROOT),
                           ("report_v2", ROOT / "tests" / "fixtures" / "report_v2" /
                            "report.json", ROOT)):
        report = json.loads(path.read_text())
        rows.append(measure(name, report, str(ws)))
    if not args.no_run:
        from tests._states_project import make_project, run_headless

        with tempfile.TemporaryDirectory() as tmp:
            run = run_headless(make_project(Path(tmp)))
            rows.append(measure("states_project (fresh run)", run["report"], tmp))
    total = sum(r["differ"] for r in rows)
    ok_built = sum(r["built_called_ok"] for r in rows)
    print(f"TOTAL: states that differ between outputs {total} (target 0); built cells "
          f"called ok {ok_built} (target 0)")


if __name__ == "__main__":
    main()
