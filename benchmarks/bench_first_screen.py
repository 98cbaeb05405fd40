"""The signal table's first screen (issue 42, 'Findings first'): of the rows visible at
80x24 and 160x45 in the dashboard over a recorded report, how many are findings
(``report.rules.rule_for_signal``), how many lead before the first non-finding, what the
first row is, and how many characters of each reason are visible.

Usage: python benchmarks/bench_first_screen.py [--tree TREE]

Reports: the recorded demo report, and the same with the noise a user met first in the
issue (six more environment rows, a ``cast int64->bool`` and a zero-count host bounce, put
first in the report). ``--tree``: an earlier checkout (``git archive``) to measure instead.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import sys
import tempfile
from pathlib import Path


def noisy(demo: Path, out: Path) -> None:
    report = copy.deepcopy(json.loads(demo.read_text()))
    facts = next(p for p in report["probes"] if p["id"] == "env/demo_facts")
    facts["signals"][:0] = [{"kind": "environment", "probe": facts["id"],
                             "subject": f"lib{i}", "value": f"1.{i}"} for i in range(6)]
    llama = next(p for p in report["probes"] if p["id"] == "explain/tiny_llama_forward")
    llama["signals"][:0] = [
        {"kind": "host_bounce", "probe": llama["id"], "subject": "region forward",
         "count": 0, "bytes": 0, "reason": "no device in region"},
        {"kind": "cast", "probe": llama["id"], "subject": "aten::_to_copy", "count": 2,
         "reason": "int64->bool", "site": {"file": "model.py", "line": 7}}]
    out.write_text(json.dumps(report))


async def first_screen(report: Path, workspace: Path, size: tuple[int, int]) -> str:
    from laya_tui.report.rules import rule_for_signal
    from laya_tui.tui.factory import build_app

    def finding(row) -> bool:
        sig = {"kind": row.sig.kind, **{k: row.sig.get(k) for k in
                                        ("count", "reason", "detail", "passed", "subject")
                                        if row.sig.get(k) is not None}}
        return rule_for_signal(sig) is not None

    app = build_app(recorded=report, workspace=str(workspace), export_path=None)
    async with app.run_test(size=size) as pilot:
        await app.settled()
        await pilot.pause()
        t = app.main_screen.table
        rows = [t.row_at(int(t.scroll_y) + i) for i in range(t.size.height - 1)]
        drawn = [(y, r) for y, r in enumerate(rows, start=1) if r is not None]
        marks = [finding(r) for _, r in drawn]
        lead = next((i for i, f in enumerate(marks) if not f), len(marks))
        total = sum(1 for i in range(t.row_count) if finding(t.row_at(i)))
        seen = []
        for y, r in drawn:
            reason = str(r.sig.get("reason") or "")
            if len(reason) >= 12:
                line = t.render_line(y).text
                seen.append(max(k for k in range(len(reason) + 1) if reason[:k] in line))
        top = drawn[0][1]
        return (f"  {size[0]}x{size[1]}: {len(drawn)} rows visible, {sum(marks)} findings "
                f"({lead} leading; {total} in the report); first row: {top.sig.kind} "
                f"{top.sig.get('subject')}; reason characters visible (reasons of 12+): "
                f"median {statistics.median(seen):g}, min {min(seen)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, help="an earlier checkout to measure instead")
    args = ap.parse_args()
    tree = (args.tree or Path(__file__).resolve().parents[1]).resolve()
    sys.path.insert(0, str(tree))
    recorded = tree / "tests" / "fixtures" / "recorded"
    demo, ws = recorded / "demo_report.json", recorded / "demo_ws"
    with tempfile.TemporaryDirectory() as tmp:
        loud = Path(tmp) / "noisy.json"
        noisy(demo, loud)
        for name, report in (("demo report", demo), ("demo + the issue's noise", loud)):
            print(name)
            for size in ((80, 24), (160, 45)):
                print(asyncio.run(first_screen(report, ws, size)))


if __name__ == "__main__":
    main()
