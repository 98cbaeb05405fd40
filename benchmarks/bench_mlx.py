"""MLX encoder benchmark: MLX uncompiled vs compiled vs torch eager, cold compile, retrace cost.

Usage: .venv/bin/python benchmarks/bench_mlx.py [--rounds N] [--block N] [--runs N]
       [--cold-repeat N] [--torch-threads N] [--parts latency,retrace,cold]

All figures come from this one run. Latencies are interleaved round-robin (one call of each
variant per round, order rotated) so a busy machine slows every variant alike; the ratios
are of medians of the same rounds. Cold compile runs in fresh processes with an empty MLX
CPU kernel cache (TMPDIR pointed at a new directory) and again with the cache those left
behind, since MLX builds fused CPU kernels with the host C++ compiler and keeps them on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Not put on sys.path: laya_tui comes from the editable install, and a workspace package
#: named ``kernels`` would shadow the one transformers probes for on import.
REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

LATENCY_BATCHES = {"mixed 4x93": [93, 60, 31, 5], "full 8x128": [128] * 8}
NEW_SHAPES = [[40, 25], [40, 25, 12], [56, 25], [72, 10], [72, 10, 3, 1], [24]]


def _libs():
    from laya_tui.families.rbln_status import guard_autoload

    guard_autoload()
    import mlx.core as mx
    import torch

    return mx, torch


def latency(rounds: int, block: int) -> None:
    """Medians of MLX eager/compiled (fp32, fp16) and torch eager on the same inputs.

    Two schedules, both over ``rounds`` rounds with the variant order rotated: interleaved
    (one call per variant per round: every variant sees the same machine load, but each
    call follows another library's, whose idle threads and cache footprint it inherits)
    and blocked (``block`` consecutive calls per variant per round, the first dropped).
    """
    mx, torch = _libs()
    from laya_tui.families.mlx.encoder import MlxEncoder, blas_library, timed_forward
    from laya_tui.families.presets import tiny_modernbert, token_batch

    model = tiny_modernbert()
    enc32 = MlxEncoder.from_torch(model, "fp32")
    enc16 = MlxEncoder.from_torch(model, "fp16")
    print(f"mlx {mx.__version__} on {mx.default_device()} (BLAS: {blas_library()}), torch "
          f"{torch.__version__} ({torch.get_num_threads()} threads); {rounds} rounds")
    for label, lengths in LATENCY_BATCHES.items():
        inputs = token_batch(lengths)
        args = (inputs["input_ids"], inputs["attention_mask"])

        def torch_eager(inputs=inputs):
            t0 = time.perf_counter()
            with torch.no_grad():
                model(**inputs)
            return time.perf_counter() - t0, time.perf_counter() - t0

        def mlx(enc, compiled, args=args):
            _out, t, _b = timed_forward(enc, *args, compiled=compiled)
            return t.graph + t.forward, t.total

        variants = {
            "torch eager fp32": torch_eager,
            "mlx eager fp32": lambda: mlx(enc32, False),
            "mlx compiled fp32": lambda: mlx(enc32, True),
            "mlx eager fp16": lambda: mlx(enc16, False),
            "mlx compiled fp16": lambda: mlx(enc16, True),
        }
        for fn in variants.values():  # warm-up: traces, JIT kernels, torch caches
            fn(), fn()
        names = list(variants)
        waste = 1 - sum(lengths) / (len(lengths) * max(lengths))
        unique = len({tuple(row) for row in inputs["input_ids"].tolist()})
        print(f"\n[{label}] padding waste {waste:.1%}, {unique} unique rows; forward = "
              f"graph build + evaluated forward (mx.eval + sync); "
              f"total adds input prep + output conversion (median per run)")
        for schedule, per in (("interleaved", 1), ("blocked", block)):
            samples: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
            for r in range(rounds):
                for name in names[r % len(names):] + names[: r % len(names)]:
                    runs = [variants[name]() for _ in range(per)]
                    samples[name].extend(runs[1:] if per > 1 else runs)
            fwd = {k: statistics.median(x[0] for x in v) for k, v in samples.items()}
            tot = {k: statistics.median(x[1] for x in v) for k, v in samples.items()}
            ref = fwd["torch eager fp32"]
            print(f"  {schedule} ({len(samples[names[0]])} samples each)")
            for name in names:
                print(f"    {name:<20} forward {fwd[name] * 1e3:8.2f} ms  total "
                      f"{tot[name] * 1e3:8.2f} ms  this/torch {fwd[name] / ref:6.2f}x")
            comp, eager = fwd["mlx compiled fp32"], fwd["mlx eager fp32"]
            print(f"    ratios: mlx compiled/uncompiled fp32 {comp / eager:.2f}, fp16 "
                  f"{fwd['mlx compiled fp16'] / fwd['mlx eager fp16']:.2f}; mlx compiled fp32 /"
                  f" torch eager {comp / ref:.2f}; mlx uncompiled fp32 / torch eager "
                  f"{eager / ref:.2f}")


def retrace(runs: int) -> None:
    """In one warm process: first call on each new shape vs the warm median at that shape."""
    _libs()
    from laya_tui.families.mlx.encoder import MlxEncoder, kernel_count, timed_forward
    from laya_tui.families.presets import tiny_modernbert, token_batch

    model = tiny_modernbert()
    enc = MlxEncoder.from_torch(model, "fp32")
    warmup = token_batch([8])
    timed_forward(enc, *warmup.values(), compiled=True)
    print(f"\n[retrace] compiled fp32, warm process; warm median over {runs} runs per shape")
    costs, traces = [], []
    for lengths in NEW_SHAPES:
        inputs = token_batch(lengths)
        args = (inputs["input_ids"], inputs["attention_mask"])
        n0, k0 = len(enc.traces), kernel_count()
        _o, first, batch = timed_forward(enc, *args, compiled=True)
        built = kernel_count() - k0
        warm = statistics.median(
            (lambda t: t.graph + t.forward)(timed_forward(enc, *args, compiled=True)[1])
            for _ in range(runs))
        cost = first.graph + first.forward - warm
        costs.append(cost)
        traces.append(first.graph)
        print(f"  {str(batch.shape):<10} traces +{len(enc.traces) - n0}  trace "
              f"{first.graph * 1e3:6.2f} ms  first forward {first.forward * 1e3:7.2f} ms  "
              f"warm {warm * 1e3:6.2f} ms  "
              f"retrace cost {cost * 1e3:7.2f} ms  jit kernels built {built}")
    print(f"  median retrace cost {statistics.median(costs) * 1e3:.2f} ms "
          f"(trace alone {statistics.median(traces) * 1e3:.2f} ms) over {len(costs)} new shapes")


CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
from laya_tui.families.rbln_status import guard_autoload
guard_autoload()
import mlx.core as mx
from laya_tui.families.mlx.encoder import MlxEncoder, kernel_cache_dir, kernel_count, timed_forward
from laya_tui.families.presets import tiny_modernbert, token_batch
dtype = sys.argv[1]
t1 = time.perf_counter()
model = tiny_modernbert()
enc = MlxEncoder.from_torch(model, dtype)
t2 = time.perf_counter()
k0 = kernel_count()
out = {"imports_s": t1 - t0, "load_s": t2 - t1, "kernels_before": k0,
       "cache": str(kernel_cache_dir()), "steps": []}
for lengths in ([93, 60, 31, 5], [93, 60, 31, 5], [40, 17, 3], [56, 25]):
    k = kernel_count()
    _o, t, b = timed_forward(enc, *token_batch(lengths).values(), compiled=True)
    out["steps"].append({"shape": list(b.shape), "graph": t.graph, "forward": t.forward,
                         "traces": len(enc.traces), "built": kernel_count() - k})
print(json.dumps(out))
"""


def cold(repeat: int) -> None:
    """Fresh processes: empty kernel cache (true cold), then the cache they left (warm disk)."""
    print("\n[cold compile] fresh process each; first compiled call = trace + JIT + forward")
    for dtype in ("fp32", "fp16"):
        for r in range(repeat):
            with tempfile.TemporaryDirectory(prefix="bench-mlx-") as tmp:
                env = dict(os.environ, TMPDIR=tmp, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
                for cache_state in ("empty kernel cache", "kernel cache left by the run above"):
                    proc = subprocess.run([sys.executable, "-c", CHILD, dtype], cwd=tmp,
                                          capture_output=True, text=True, env=env)
                    if proc.returncode != 0:
                        sys.exit(f"cold child failed: {proc.stderr[-800:]}")
                    res = json.loads(proc.stdout.strip().splitlines()[-1])
                    s = res["steps"]
                    first = s[0]["graph"] + s[0]["forward"]
                    print(f"  {dtype} #{r + 1} {cache_state}: imports {res['imports_s']:.2f} s, "
                          f"model+weights {res['load_s']:.2f} s, first compiled call "
                          f"{first:.3f} s (trace {s[0]['graph'] * 1e3:.1f} ms, forward+JIT "
                          f"{s[0]['forward']:.3f} s, {s[0]['built']} kernels built); repeat "
                          f"{(s[1]['graph'] + s[1]['forward']) * 1e3:.1f} ms; retrace "
                          + ", ".join(f"{tuple(x['shape'])} {(x['graph'] + x['forward']):.3f} s"
                                      f" ({x['built']} built)" for x in s[2:]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--block", type=int, default=6, help="calls per variant per blocked round")
    ap.add_argument("--runs", type=int, default=15, help="warm runs per shape for retrace")
    ap.add_argument("--cold-repeat", type=int, default=1)
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch.set_num_threads (on a busy shared host, 1 avoids OpenMP "
                         "barrier stalls that inflate torch's figures)")
    ap.add_argument("--parts", default="latency,retrace,cold",
                    help="comma-separated subset of latency,retrace,cold")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    try:
        import mlx.core  # noqa: F401
    except ImportError:
        sys.exit("mlx not installed: pip install 'mlx[cpu]' on Linux, 'mlx' on macOS")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if args.torch_threads:
        _libs()[1].set_num_threads(args.torch_threads)
    if "latency" in parts:
        latency(args.rounds, args.block)
    if "retrace" in parts:
        retrace(args.runs)
    if "cold" in parts:
        cold(args.cold_repeat)


if __name__ == "__main__":
    main()
