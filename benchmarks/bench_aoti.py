"""AOTInductor packaging benchmark: what export, package and load cost, and what AOTI buys.

Usage: .venv/bin/python benchmarks/bench_aoti.py [--dtypes fp32,bf16] [--out DIR] [--keep]
       [--warm-inductor] [--threads N]

All figures come from this one run: each decision-model cell runs cold (a new package
folder and, unless --warm-inductor, its own empty TORCHINDUCTOR_CACHE_DIR) and then again
unchanged (the package cache hit). Printed per cell: export / package / load (fresh
process and warm) seconds, package bytes, torch.compile's first call, and per shape the
median latencies (grouped runs after warm-up, eager / compiled / AOTI interleaved) with
their ratios, the max deltas against the fp32 eager reference, and the cached re-run time.
The load average is printed because the figures on a shared machine move with it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")


def _run(dtype: str, out: Path) -> tuple[float, str, dict[str, Any], dict[str, dict[str, Any]]]:
    """One cell in this process: ``(wall seconds, status, results, timings by subject)``."""
    from laya_tui.api import Context, Failed, Skipped
    from laya_tui.families.aoti.pipeline import run_target
    from laya_tui.families.aoti.targets import decision_target

    events: list[dict[str, Any]] = []
    ctx = Context(f"aoti/decision[{dtype}]", "aoti", events.append, opts={"out": str(out)})
    t0 = time.perf_counter()
    status, results = "ok", {}
    try:
        results = run_target(ctx, decision_target(dtype), str(out))
    except (Failed, Skipped) as exc:
        status = f"{type(exc).__name__.lower()}: {exc}"
    wall = time.perf_counter() - t0
    timings = {e["signal"]["subject"]: e["signal"] for e in events
               if e["signal"]["kind"] == "timing"}
    return wall, status, results, timings


def _loadavg() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtypes", default="fp32,bf16")
    ap.add_argument("--out", help="package folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the packages")
    ap.add_argument("--threads", type=int,
                    help="torch intra-op threads (on a busy 2-core box, 1 avoids OpenMP "
                         "barrier stalls that swamp eager latency)")
    ap.add_argument("--warm-inductor", action="store_true",
                    help="keep the default inductor cache (cold figures then skip codegen)")
    args = ap.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-aoti-"))
    from laya_tui.families.rbln_status import guard_autoload

    guard_autoload()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {os.cpu_count()} cores, {torch.get_num_threads()} "
          f"threads; load average {_loadavg()}; inductor cache "
          f"{'default (warm)' if args.warm_inductor else 'empty (cold)'}")
    rows = []
    for dtype in args.dtypes.split(","):
        if not args.warm_inductor:  # each cell's cold run starts from its own empty cache
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(out / f"inductor-cache-{dtype}")
        cold = _run(dtype, out)
        warm = _run(dtype, out)
        rows.append((dtype, cold, warm))
    print(f"load average after: {_loadavg()}\n")

    print(f"{'cell':16} {'export s':>8} {'nodes':>6} {'package s':>9} {'bytes':>10} "
          f"{'fresh s':>8} {'(isa)':>6} {'proc s':>7} {'warm s':>7} {'compile s':>9} "
          f"{'cold s':>7} {'cached s':>8}")
    for dtype, (wall, status, res, _), (wall2, status2, _, tm2) in rows:
        if not res:
            print(f"decision[{dtype}]  {status}")
            continue
        st = res["steps"]
        fresh = st.get("load-fresh", {})
        print(f"{'decision[' + dtype + ']':16} {st['export']['seconds']:8.2f} "
              f"{res['export_graph']['nodes']:6d} {st['package']['seconds']:9.2f} "
              f"{res['package_bytes']:10d} {fresh.get('seconds', float('nan')):8.3f} "
              f"{fresh.get('isa_probe_seconds', float('nan')):6.2f} "
              f"{fresh.get('process_seconds', float('nan')):7.2f} "
              f"{st['load-warm']['seconds']:7.4f} {st.get('compile', {}).get('seconds', 0):9.2f} "
              f"{wall:7.1f} {wall2:8.1f}")
        if status != "ok" or status2 != "ok":
            print(f"  status cold: {status}; cached: {status2}")
        pkg2 = tm2.get("package", {})
        print(f"  cached re-run: package step {pkg2.get('seconds', float('nan')):.4f} s, "
              f"cached={pkg2.get('detail', {}).get('cached')}; what remains is model build, "
              "fresh-process load, eager reference, torch.compile and latency runs")

    print(f"\n{'cell':16} {'shape':13} {'eager ms':>9} {'compiled ms':>11} {'aoti ms':>8} "
          f"{'aoti/eager':>10} {'comp/eager':>10} {'aoti/comp':>9}  max|dlogit| max|dprob|")
    for dtype, (_, _, res, _), _ in rows:
        for shape in res.get("shapes", []):
            lat = shape["latency"]
            e, c, a = (lat.get(k) for k in ("eager", "compiled", "aoti"))

            def ms(x: float | None) -> str:
                return f"{x * 1e3:.3f}" if x else "-"

            def ratio(x: float | None, y: float | None) -> str:
                return f"{x / y:.2f}" if x and y else "-"

            dl = max((h["max_logit_delta"] for h in shape["heads"].values()), default=0.0)
            dp = max((h["max_prob_delta"] for h in shape["heads"].values()), default=0.0)
            print(f"{'decision[' + dtype + ']':16} {shape['name']:13} {ms(e):>9} {ms(c):>11} "
                  f"{ms(a):>8} {ratio(a, e):>10} {ratio(c, e):>10} {ratio(a, c):>9}  "
                  f"{dl:.2e}   {dp:.2e}")
    if not args.keep and not args.out:
        shutil.rmtree(out, ignore_errors=True)
    elif args.keep:
        print(f"\npackages kept in {out}/aoti")
    return 0


if __name__ == "__main__":
    sys.exit(main())
