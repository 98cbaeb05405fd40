"""Stable identities: the same RBLN fallbacks at other counts persist, never gone + new.

``llama_fp16_cold.json`` is the first forward, ``llama_fp16_warm.json`` a later region
around two forwards: the same fallbacks, bounces and v2v causes at twice the counts, and no
compiles (both built by the wheel's own ``dump()``, see ``fixtures/rbln/build_dumps.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from laya_tui.core.report_types import ReportDict, SignalDict
from laya_tui.core.signals import make_signal
from laya_tui.families.explain.aggregate import steady_diff
from laya_tui.families.explain.rbln import map_dump
from laya_tui.families.explain.rbln_sites import SiteResolver
from laya_tui.report.baseline import Baseline, compare
from tests._signals import partial_report

FIX = Path(__file__).parent / "fixtures" / "rbln"
COLD = json.loads((FIX / "llama_fp16_cold.json").read_text())
WARM = json.loads((FIX / "llama_fp16_warm.json").read_text())
PID = "explain/model:tiny_llama[fp16,eager]"


def signals(dump: dict[str, Any], phase: str) -> list[SignalDict]:
    agg, extras = map_dump(dump, "forward", phase=phase,
                           resolver=SiteResolver(modules=[], roots=[]))
    out = [make_signal(e.kind, PID, **e.fields()) for e in agg]
    for x in extras:
        x = dict(x)
        out.append(make_signal(x.pop("kind"), PID, **x))
    return out


def test_cold_warm_diff_persists_fallbacks_with_other_counts():
    cold, warm = signals(COLD, "cold"), signals(WARM, "warm")
    diff = steady_diff(cold, warm)
    assert diff["appeared"] == []
    for op, n in WARM["cpu_fallback_by_op"].items():
        assert COLD["cpu_fallback_by_op"][op] != n  # other counts...
        assert any(p.startswith(f"fallback {op} (") and p.endswith(f" x{n}")
                   for p in diff["persists"]), op  # ...same identity
    assert sorted(g.split(" (")[0] for g in diff["gone"]) == sorted(
        f"recompile {op}" for op in COLD["recompile_by_op"])  # first compiles: one-time
    persists_bounces = [p for p in diff["persists"] if p.startswith("host_bounce")]
    assert len(persists_bounces) == 3 + 3  # torch-side bounce sites + v2v_slow causes


def test_baseline_of_the_same_fallbacks_at_other_counts_reports_more_not_new():
    def report(sigs: list[SignalDict]) -> ReportDict:  # partial: what the baseline reads
        return partial_report({"probes": [{"id": PID, "status": "ok", "signals": sigs}]})

    base = Baseline(path="cold.json", report=report(signals(COLD, "cold")))
    section = compare(base, report(signals(WARM, "warm"))["probes"])
    changes = {(i["kind"], i.get("subject"), i["change"])
               for i in section["regressions"] + section["improvements"]}
    for op in WARM["cpu_fallback_by_op"]:
        assert ("fallback", op, "more") in changes
        assert ("fallback", op, "new") not in changes
        assert ("fallback", op, "gone") not in changes
    assert not [c for c in changes if c[2] == "new"]
    assert {c for c in changes if c[2] == "gone"} == {
        ("recompile", op, "gone") for op in COLD["recompile_by_op"]}
