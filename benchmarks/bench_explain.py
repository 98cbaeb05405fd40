"""Explain benchmark: instrumented vs uninstrumented forwards, the explain family's wall time,
and whether the fallbacks of compiled models are true.

Usage: .venv/bin/python benchmarks/bench_explain.py [--pairs N] [--threads N] [--device cuda]
       [--skip-family] [--skip-overhead] [--fallbacks [--before DIR] [--models a,b]]

1. Per preset x dtype, eager and compiled (Inductor, padded input): the same forward with and
   without a portable explain region, interleaved pairs so machine noise hits both alike;
   prints medians, minimums and their ratios (target: under 2x), and the per-op overhead.
2. The whole explain family through the CLI: cold (an empty Inductor cache dir and an empty
   result cache), Inductor-warm (same Inductor cache, result cache off) and cached (result
   cache hit). All figures are measured in this one run.
3. ``--fallbacks``: the demo presets and five transformers architectures (random weights from
   configs), each compiled with Inductor in a cold and a warm explain region
   (benchmarks/bench_explain_fallbacks.py, one subprocess per model and code tree): fallback
   calls the regions report before (``--before DIR``: another checkout of laya-tui, e.g.
   ``git archive main | tar -x -C DIR``) and after (this tree), the profiler's eager ATen
   kernels inside the compiled call (all, and those the output code calls as
   ``torch.ops.aten.*``, the fallback kernels) side by side, and the share of sited
   signals whose site is inside laya-tui.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from laya_tui.families.rbln_status import guard_autoload  # noqa: E402

guard_autoload()


def pair_times(plain, instrumented, pairs: int) -> tuple[list[float], list[float]]:
    for _ in range(3):
        plain()
        instrumented()
    a, b = [], []
    for _ in range(pairs):
        t0 = time.perf_counter()
        plain()
        a.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        instrumented()
        b.append(time.perf_counter() - t0)
    return a, b


def overhead(pairs: int, device: str) -> None:
    import torch

    from laya_tui.families import presets

    where = torch.cuda.get_device_name(0) if device == "cuda" else \
        f"cpu, {torch.get_num_threads()} intra-op thread(s)"
    print(f"torch {torch.__version__}, {where}, {pairs} interleaved pairs per row")
    print(f"{'forward':<34} {'plain med':>9} {'inst med':>9} {'ratio':>6} "
          f"{'ratio(min)':>10} {'ops':>5} {'us/op':>6}")
    for preset in ("tiny_llama", "tiny_modernbert"):
        for dt_name, dt in (("fp32", None), ("bf16", torch.bfloat16)):
            for mode in ("eager", "compiled"):
                model = getattr(presets, preset)(dt).to(device)
                batch = _to(presets.token_batch([7, 5], pad_to=16 if mode == "compiled"
                                                else None), device)
                fn = model
                if mode == "compiled":
                    torch._dynamo.reset()
                    fn = torch.compile(model, dynamic=False)
                _row(f"{preset} {dt_name} {mode}", *measure(model, fn, batch, pairs))
    torch._dynamo.reset()
    # Same ops on bigger tensors: the overhead is per op, so the ratio falls with op size.
    model = presets.tiny_llama().to(device)
    batch = _to(presets.token_batch([128] * 8), device)
    _row("tiny_llama fp32 eager 8x128 tokens", *measure(model, model, batch, max(5, pairs // 4)))


def _to(batch: dict, device: str) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def _row(label: str, a: list[float], b: list[float], ops: int) -> None:
    ma, mb = statistics.median(a), statistics.median(b)
    per_op = (min(b) - min(a)) / ops * 1e6 if ops else float("nan")
    print(f"{label:<34} {ma * 1e3:8.3f}m {mb * 1e3:8.3f}m {mb / ma:6.2f} "
          f"{min(b) / min(a):10.2f} {ops:5d} {per_op:6.2f}")


def measure(model, fn, batch, pairs: int) -> tuple[list[float], list[float], int]:
    """Interleaved plain/instrumented times of ``fn(**batch)`` and the op count."""
    import torch

    from laya_tui.families.explain.portable import PortableRegion

    sync = torch.cuda.synchronize if next(model.parameters()).is_cuda else (lambda: None)

    def plain() -> None:
        fn(**batch)
        sync()

    def inst() -> None:
        with PortableRegion("bench", model=model):
            fn(**batch)
            sync()

    with torch.no_grad():
        a, b = pair_times(plain, inst, pairs)
        return a, b, _count_ops(fn, batch)


def _count_ops(fn, batch) -> int:
    """ATen ops the region's dispatch mode sees in one forward."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        @classmethod
        def ignore_compile_internals(cls) -> bool:
            return True

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn(**batch)
    return Count.n


def family(env: dict[str, str]) -> None:
    inductor = tempfile.mkdtemp(prefix="bench_explain_inductor_")
    cache = tempfile.mkdtemp(prefix="bench_explain_cache_")
    env = dict(env, TORCHINDUCTOR_CACHE_DIR=inductor)
    base = [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--only", "explain/*",
            "--cache-dir", cache]

    def run(extra: list[str], label: str) -> float:
        out = os.path.join(cache, f"{label}.json")
        t0 = time.perf_counter()
        proc = subprocess.run(base + extra + ["--json", out], cwd=REPO, env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        report = json.loads(Path(out).read_text()) if os.path.exists(out) else {}
        statuses = [p["status"] for p in report.get("probes", [])]
        cached = sum(1 for p in report.get("probes", []) if p.get("cached"))
        print(f"explain family {label:<13} {seconds:7.1f} s  exit {proc.returncode}  "
              f"{len(statuses)} cells ({statuses.count('ok')} ok, {cached} from cache)")
        return seconds

    cold = run([], "cold")
    warm = run(["--no-cache"], "inductor-warm")
    cached = run([], "cached")
    print(f"cold/inductor-warm {cold / warm:.2f}x, inductor-warm/cached {warm / cached:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--threads", type=int, default=0,
                    help="torch intra-op threads for part 1 (0: torch's default)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (part 1)")
    ap.add_argument("--skip-family", action="store_true")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--fallbacks", action="store_true",
                    help="part 3 only: fallback signals vs the profiler, before/after")
    ap.add_argument("--before", default=None, help="part 3: the old checkout to compare")
    ap.add_argument("--models", default=None, help="part 3: comma-separated model names")
    args = ap.parse_args()
    if args.fallbacks:
        from bench_explain_fallbacks import compare

        compare(args.before, args.models.split(",") if args.models else None)
        return
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if not args.skip_overhead:
        overhead(args.pairs, args.device)
    if not args.skip_family:
        family(dict(os.environ))


if __name__ == "__main__":
    main()
