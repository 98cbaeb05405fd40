"""Time to compare two reports of 100,000 signals each (target: under 1 s).

Builds a baseline and a current report (1,000 probes x 100 signals: fallbacks, recompiles,
host bounces, casts, tolerances, lowering cells, timings), the current one differing the way
a real regression does (counts up and down, new and gone keys, tolerance drift, cells that
flip), writes the baseline to disk, then measures: loading + validating the baseline, the
comparison itself, every gate with the comparison, and the JUnit/markdown outputs.

    TORCH_DEVICE_BACKEND_AUTOLOAD=0 .venv/bin/python benchmarks/bench_gates.py [SIGNALS]
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time

from laya_tui.report.baseline import compare, load_baseline
from laya_tui.report.document import build_report
from laya_tui.report.gates import GateSettings, evaluate_all
from laya_tui.report.junit import build_junit
from laya_tui.report.markdown import build_markdown

TARGET_S = 1.0
KINDS = ["fallback"] * 35 + ["recompile"] * 15 + ["host_bounce"] * 15 + ["cast"] * 10 + \
    ["tolerance"] * 10 + ["lowering"] * 10 + ["timing"] * 5


def make_probes(n_signals: int, per_probe: int, seed: int, drift: float) -> list[dict]:
    rng = random.Random(seed)
    probes = []
    for i in range(n_signals // per_probe):
        pid = f"explain/model_{i:04d}[len={32 + i % 7}]"
        sigs = []
        for j in range(per_probe):
            kind = KINDS[(i * 7 + j) % len(KINDS)]
            sub = f"aten::op_{j:03d}.out"
            if rng.random() < drift / 4:  # a new key in the current run
                sub += "_new"
            s = {"kind": kind, "probe": pid, "subject": sub}
            if kind in ("fallback", "recompile", "cast"):
                s.update(count=rng.randint(1, 4) if rng.random() < drift else 2,
                         reason="dtype-not-fp16",
                         site={"file": "modeling.py", "line": j, "func": "forward"})
            elif kind == "host_bounce":
                s.update(count=2, bytes=4096 * (2 if rng.random() < drift else 1),
                         reason="d2h")
            elif kind == "tolerance":
                v = 1e-6 * (rng.uniform(0.5, 30) if rng.random() < drift else 1.0)
                s.update(value=v, limit=2e-5, passed=v <= 2e-5)
            elif kind == "lowering":
                fails = (j % 3 == 0) != (rng.random() < drift / 2)
                s.update(subject=f"gemm_kernel[c,bf16,{j}]", passed=not fails,
                         **({"reason": "bf16 has no C type"} if fails else {}))
            else:
                s.update(seconds=0.01)
            sigs.append(s)
        probes.append({"id": pid, "family": "explain", "status": "ok", "reason": None,
                       "seconds": 0.1, "cached": False, "deps": [], "signals": sigs,
                       "log_tail": ""})
    return probes


def best(fn, repeat: int = 3) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    base_probes = make_probes(n, 100, seed=1, drift=0.0)
    now_probes = make_probes(n, 100, seed=2, drift=0.1)
    base_report = build_report(base_probes, seconds=1.0, gates=[])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "base.json")
        with open(path, "w") as fh:
            json.dump(base_report, fh, indent=1)
        size_mb = os.path.getsize(path) / 1e6
        t_load, baseline = best(lambda: load_baseline(path))
    t_cmp, section = best(lambda: compare(baseline, now_probes))
    settings = GateSettings(fail_on=["host_bounce"], max_counts={"fallback": 10},
                            baseline=baseline)
    t_gates, (gates, extra) = best(lambda: evaluate_all(now_probes, settings))
    report = build_report(now_probes, seconds=1.0, gates=gates, extra=extra)
    t_junit, _ = best(lambda: build_junit(report), 1)
    t_md, _ = best(lambda: build_markdown(report), 1)
    print(f"signals: {n:,} baseline + {n:,} current ({len(base_probes):,} probes each); "
          f"baseline file {size_mb:.1f} MB")
    print(f"regressions {len(section['regressions']):,}, improvements "
          f"{len(section['improvements']):,}, notes {len(section['notes']):,}")
    print(f"load + validate baseline : {t_load:.3f} s")
    print(f"compare                  : {t_cmp:.3f} s")
    print(f"load + compare           : {t_load + t_cmp:.3f} s  "
          f"({(t_load + t_cmp) / TARGET_S:.2f}x of the {TARGET_S:.0f} s target)")
    print(f"all gates incl. compare  : {t_gates:.3f} s")
    print(f"junit XML                : {t_junit:.3f} s")
    print(f"markdown                 : {t_md:.3f} s")
    verdict = "PASS" if t_load + t_cmp < TARGET_S else "MISS"
    print(f"target (< {TARGET_S:.0f} s for load + compare): {verdict}")


if __name__ == "__main__":
    main()
