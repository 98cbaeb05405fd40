"""TileLang lowering-matrix benchmark: full matrix cold and warm, lowering seconds, CPU vs torch.

Usage: .venv/bin/python benchmarks/bench_tilelang.py [--parts matrix,ratio] [--only GLOB]
       [--reps N] [--json PATH]
       .venv/bin/python benchmarks/bench_tilelang.py --inprocess [--only GLOB]

All figures come from this one run:

* ``matrix``: one Runner (one warm ``tilelang`` worker) runs every cell twice with the
  result cache off. Run 1 is cold: a fresh worker (``import tilelang``) and an empty
  artifact folder, so every cell lowers and every build compiles. Run 2 is warm with
  nothing changed: the same worker re-lowers every cell, and the build cache (keyed by
  source + command) skips the compiler. Per-cell lowering seconds come from run 1's
  ``<cell>/lower`` timing signals.
* ``ratio``: each kernel's CPU specialization (target ``c``, fp32) against its torch fp32
  reference on the same inputs: median of ``--reps`` calls each, interleaved; ratio =
  kernel / torch (above 1: the scalar CPU kernel is slower).
* ``--inprocess``: run the cells in this process without the runner (a GPU machine without
  the dashboard's dependencies): prints one JSON line per cell.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


# -- the full matrix through the real runner ---------------------------------------------------


async def _matrix_runs(only: list[str], out_dir: str) -> tuple[Any, ...]:
    from laya_tui.core.runner import Runner
    from laya_tui.core.settings import RunOptions

    config = RunOptions(workspace=str(REPO), probes=[str(REPO / "probes" / "tilelang_matrix.py")],
                       kernels=[str(REPO / "kernels")], only=only, use_cache=False,
                       out=out_dir, cache_dir=os.path.join(out_dir, "results"), jobs=1)
    runner = Runner(config)
    try:
        disc = await runner.discover()
        if disc.errors:
            raise SystemExit(f"discovery errors: {disc.errors}")
        timings = []
        runs = []
        for _ in range(2):
            t0 = time.perf_counter()
            results = await runner.run(disc.probes)
            timings.append(time.perf_counter() - t0)
            runs.append(results)
        t0 = time.perf_counter()
        hits = [await runner.run_one(p, use_cache=True) for p in disc.probes]
        t_cached = time.perf_counter() - t0
        n_hits = sum(bool(h.get("cached")) for h in hits)
        return runs[0], runs[1], timings, (t_cached, n_hits)
    finally:
        await runner.close()


def _summary(results: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def _cell_table(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for r in results:
        low = next((s for s in r.get("signals", []) if s["kind"] == "lowering"), None)
        d = (low or {}).get("detail") or {}
        rows.append({"id": r["id"], "status": r["status"], "outcome": d.get("outcome"),
                     "lower": d.get("seconds", {}).get("lower"),
                     "build": d.get("seconds", {}).get("build"),
                     "run": d.get("seconds", {}).get("run"),
                     "cached_build": d.get("build_cached"),
                     "reason": (low or {}).get("reason") or r.get("reason")})
    return rows


def bench_matrix(only: list[str]) -> dict[str, Any]:
    """Cold and warm wall time of the whole matrix in one worker, and per-cell seconds."""
    with tempfile.TemporaryDirectory(prefix="bench-tilelang-out-") as out_dir:
        cold, warm, (t_cold, t_warm), (t_cached, n_hits) = asyncio.run(
            _matrix_runs(only, out_dir))
    rows = _cell_table(cold)
    warm_rows = {r["id"]: r for r in _cell_table(warm)}
    lowers = [r["lower"] for r in rows if r["lower"] is not None]
    print(f"matrix: {len(cold)} cells  cold {t_cold:.1f} s  warm {t_warm:.1f} s  "
          f"(warm/cold {t_warm / t_cold:.2f})")
    print(f"  cold statuses {_summary(cold)}   warm statuses {_summary(warm)}")
    print(f"  warm with the result cache on: {t_cached:.2f} s ({n_hits}/{len(cold)} cells "
          f"served from the cache)")
    if lowers:
        print(f"  lower seconds per cell: median {statistics.median(lowers):.2f}  "
              f"min {min(lowers):.2f}  max {max(lowers):.2f}  sum {sum(lowers):.1f}")
    print(f"  {'cell':<44} {'status':<8} {'outcome':<13} {'lower':>6} {'build':>6} "
          f"{'run':>6} {'warm lower':>10} {'warm build':>10}")
    for r in rows:
        w = warm_rows.get(r["id"], {})

        def f(x: Any) -> str:
            return f"{x:.2f}" if isinstance(x, (int, float)) else "-"

        print(f"  {r['id'].removeprefix('tilelang/'):<44} {r['status']:<8} "
              f"{str(r['outcome'] or '-'):<13} {f(r['lower']):>6} {f(r['build']):>6} "
              f"{f(r['run']):>6} {f(w.get('lower')):>10} {f(w.get('build')):>10}")
    failing = [r for r in rows if r["status"] == "failed"]
    if failing:
        print("  first diagnostic per failing cell:")
        for r in failing:
            print(f"    {r['id'].removeprefix('tilelang/')}: {r['reason']}")
    return {"cold_s": t_cold, "warm_s": t_warm, "cached_s": t_cached, "cells": len(cold),
            "cold_statuses": _summary(cold), "warm_statuses": _summary(warm), "rows": rows,
            "warm_rows": list(warm_rows.values())}


# -- CPU kernel vs torch -------------------------------------------------------------------


def _median_pair(fa: Any, fb: Any, reps: int) -> tuple[float, float]:
    ta, tb = [], []
    for i in range(reps):
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            t0 = time.perf_counter()
            (fa if which == 0 else fb)()
            (ta if which == 0 else tb).append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def bench_ratio(reps: int) -> list[dict[str, Any]]:
    """CPU specialization (c, fp32) vs the torch fp32 reference on the same shapes.

    The kernel is built twice: TileLang's default C++ command (no ``-O``: what the probe and
    ``tilelang.compile`` run) and with ``compile_flags=["-O3"]``.
    """
    import logging

    import torch

    from kernels import add_ln, attn, geglu, gemm, rope
    from kernels.common import compile_cpu

    logging.getLogger("tilelang").setLevel(logging.WARNING)
    torch.set_num_threads(1)
    encoder = {  # a small encoder layer: 128 tokens, width 256, 4 heads of 64, MLP 512
        "gemm_kernel": (gemm, gemm.example(M=128, N=256, K=256)),
        "gemm_geglu_kernel": (geglu, geglu.example(M=128, N=512, K=256)),
        "add_ln_kernel": (add_ln, add_ln.example(M=128, D=256)),
        "rope_kernel": (rope, rope.example(tokens=128, positions=64, H=4, Dh=64)),
        "attn_kernel": (attn, attn.example(lengths=(64, 57), seq=64, H=4, Dh=64,
                                           window=None)),
    }
    probe_shapes = {name: (mod, mod.example()) for name, (mod, _) in encoder.items()}
    rows = []
    print(f"CPU kernel (c, fp32, scalar) vs torch fp32 reference, 1 torch thread, "
          f"median of {reps} interleaved calls:")
    print(f"  {'kernel':<18} {'shapes':<8} {'torch ms':>9} {'-O0 ms':>9} {'ratio':>7} "
          f"{'-O3 ms':>9} {'ratio':>7}")
    for label, table in (("probe", probe_shapes), ("encoder", encoder)):
        for name, (mod, ex) in table.items():
            row: dict[str, Any] = {"kernel": name, "shapes": label}
            for opt, flags in (("O0", None), ("O3", ["-O3"])):
                kernel = compile_cpu(getattr(mod, name), *ex.args, compile_flags=flags,
                                     **ex.kwargs)
                tensors, promoted = ex.materialize()

                def run_kernel(kernel: Any = kernel, tensors: dict = tensors) -> None:
                    kernel(*tensors.values())

                def run_torch(ex: Any = ex, promoted: dict = promoted) -> None:
                    ex.reference(promoted)

                run_kernel()
                run_torch()
                tk, tt = _median_pair(run_kernel, run_torch, reps)
                row[f"{opt}_ms"], row[f"torch_ms_{opt}"] = tk * 1e3, tt * 1e3
                row[f"ratio_{opt}"] = tk / tt
            rows.append(row)
            print(f"  {name:<18} {label:<8} {row['torch_ms_O0']:>9.3f} {row['O0_ms']:>9.3f} "
                  f"{row['ratio_O0']:>7.1f} {row['O3_ms']:>9.3f} {row['ratio_O3']:>7.1f}")
    return rows


# -- in-process cells (for a GPU machine) ------------------------------------------------------


def inprocess(only: list[str]) -> int:
    """Run the cells here with a real Context; one JSON line per cell."""
    from laya_tui.api import Context, Skipped
    from laya_tui.families.tilelang.cell import run_cell
    from laya_tui.families.tilelang.discover import matrix_cells

    with tempfile.TemporaryDirectory(prefix="bench-tilelang-") as out:
        opts = {"workspace": str(REPO), "kernels": [str(REPO / "kernels")], "out": out}
        return _inprocess_cells(opts, only, Context, Skipped, run_cell, matrix_cells)


def _inprocess_cells(opts: dict[str, Any], only: list[str], Context: Any, Skipped: Any,
                     run_cell: Any, matrix_cells: Any) -> int:
    failed = 0
    for cell in matrix_cells(opts):
        pid = f"tilelang/{cell['name']}[{cell['id']}]"
        if only and not any(fnmatch.fnmatchcase(pid, p.replace("[", "[[]")) for p in only):
            continue
        signals: list[dict[str, Any]] = []
        ctx = Context(pid, "tilelang", lambda e, s=signals: s.append(e["signal"]), opts=opts)
        t0 = time.perf_counter()
        status = "ok"
        try:
            run_cell(ctx, **cell["kwargs"])
            status = "failed" if ctx.failures else "ok"
        except Skipped as exc:
            status = f"skipped: {exc}"
        low = next((s for s in signals if s["kind"] == "lowering"), {})
        d = low.get("detail") or {}
        tol = {s["subject"].split("/")[-1]: [s.get("value"), s.get("limit"), s.get("passed")]
               for s in signals if s["kind"] == "tolerance"}
        failed += status == "failed"
        print(json.dumps({"id": pid, "status": status, "outcome": d.get("outcome"),
                          "reason": low.get("reason"), "seconds": d.get("seconds"),
                          "run_skipped": d.get("run_skipped"), "tolerance": tol,
                          "wall": round(time.perf_counter() - t0, 3)}), flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="matrix,ratio")
    ap.add_argument("--only", action="append", default=[], help="cell id glob (repeatable)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--inprocess", action="store_true")
    args = ap.parse_args(argv)
    if args.inprocess:
        return inprocess(args.only)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    figures: dict[str, Any] = {}
    if "matrix" in parts:
        figures["matrix"] = bench_matrix(args.only or ["tilelang/*"])
    if "ratio" in parts:
        figures["ratio"] = bench_ratio(args.reps)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
