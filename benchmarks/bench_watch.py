"""Watch-mode latency: save a TileLang kernel file, wait for its updated result.

Prints, measured in one run:
  * the cold first run (watcher start -> first result of the cell: discovery, worker
    start, ``import tilelang``/``torch``, first lower+build+run);
  * save -> updated-result latency over N content-changing saves (p50, p95), with the
    cell's own run seconds beside it;
  * the same kernel's lower+build time in an already-warm process (one process imports
    tilelang once; one timed lower+build after each save, so both see the same load on a
    shared machine);
  * the ratio against the target: latency p50/p95 <= 1.3 x warm lower+build + 0.2 s.

Workspace: a temporary copy of the repo's ``kernels/`` (never the real files). The cell is
the real ``probes/tilelang_matrix.py`` cell matching ``--cell`` when that probe exists,
else a small probe that lowers, builds, runs and compares the kernel's CPU specialization
exactly like the kernel tests do. ``--synthetic`` uses a one-file TileLang kernel instead.
TileLang's disk cache is off on both sides (``TILELANG_DISABLE_CACHE=1``) so every save
pays a real lower+build, as an edit that changes the kernel does.

Usage: ``python benchmarks/bench_watch.py [--edits 20] [--kernel gemm] [--cell ID] [--synthetic]``
or ``--saves 10``: passing and failing saves through the CLI, quiet and beside two CPU hogs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
os.environ["TILELANG_DISABLE_CACHE"] = "1"

from laya_tui.core.settings import RunOptions  # noqa: E402
from laya_tui.watch.engine import Watcher  # noqa: E402

FACTORIES = {"gemm": "gemm_kernel", "geglu": "gemm_geglu_kernel", "add_ln": "add_ln_kernel",
             "rope": "rope_kernel", "attn": "attn_kernel"}

BENCH_PROBE = '''
"""Lower, build, run and compare one kernel's CPU specialization (watch benchmark)."""
import importlib

from laya_tui import param, probe


@probe(family="tilelang", params=[param("c,fp32,cpu", name="{factory}", module="{module}")])
def cell(ctx, module):
    import torch  # noqa: F401

    mod = importlib.import_module(f"kernels.{{module}}")
    from kernels.common import compile_cpu

    ex = mod.example()
    with ctx.timed("lower+build"):
        kernel = compile_cpu(getattr(mod, "{factory}"), *ex.args, **ex.kwargs)
    ctx.lowering("{factory}[c,fp32,cpu]", passed=True, detail={{"outcome": "built"}})
    tensors, promoted = ex.materialize()
    expected = ex.expected(promoted)
    kernel(*tensors.values())
    actual = ex.actual(tensors)
    for name, ref in expected.items():
        ctx.compare(name, actual[name], ref, atol=ex.tolerance(name, dtype="float32", cpu=True))
'''

SYNTH_KERNEL = '''
import tilelang.language as T

SCALE = {scale!r}


def scale_add_kernel(M, N, block_M=16, block_N=16, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=1) as (bx, by):
            for i, j in T.grid(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = (
                    A[by * block_M + i, bx * block_N + j] * SCALE
                    + B[by * block_M + i, bx * block_N + j])
    return main
'''

SYNTH_PROBE = '''
import importlib

from laya_tui import probe


@probe(family="tilelang", name="scale_add_kernel[c,fp32,cpu]")
def cell(ctx):
    import tilelang
    import torch

    mod = importlib.import_module("kernels.scale_add")
    with ctx.timed("lower+build"):
        kernel = tilelang.compile(mod.scale_add_kernel(64, 64), target="c",
                                  execution_backend="cython")
    ctx.lowering("scale_add_kernel[c,fp32,cpu]", passed=True, detail={"outcome": "built"})
    a, b, c = torch.randn(64, 64), torch.randn(64, 64), torch.empty(64, 64)
    kernel(a, b, c)
    ctx.compare("C", c, a * mod.SCALE + b, atol=2e-5)
'''

# Warm-process lower+build servers: import once, build one warm-up, then one timed build per
# stdin line (a knob value or null), replying with the seconds on stdout. The benchmark
# interleaves them with the watched saves so both see the same machine load.
WARM_REAL = '''
import importlib, json, sys, time
import tilelang
mod = importlib.import_module("kernels.{module}")
ex = mod.example()
factory = getattr(mod, "{factory}")
def build(value):
    t = time.perf_counter()
    tilelang.compile(factory(*ex.args, cpu=True, **ex.kwargs), target="c",
                     execution_backend="cython")
    return time.perf_counter() - t
build(None)
print("@@ ready", flush=True)
for line in sys.stdin:
    print("@@", json.dumps(build(json.loads(line))), flush=True)
'''

WARM_MATRIX = '''
# The lowering probe's own path: trace the factory, tilelang.lower (no device compile), wrap
# the host code, compile it with the C++ compiler; one build root (distinct code each time).
import importlib, json, sys, tempfile, time
import tilelang
from tvm.target import Target
from laya_tui.families.tilelang.build import build_library, wrap_source
mod = importlib.import_module("kernels.{module}")
ex = mod.example()
factory = getattr(mod, "{factory}")
key = getattr(tilelang.transform.PassConfigKey, "TL_EMIT_LINE_DIRECTIVES", None)
config = {key: True} if key is not None else {}
root = tempfile.mkdtemp(prefix="bench-warm-")
def build(value):
    kw = dict(ex.kwargs)
    if value is not None:
        kw["{knob}"] = value
    t = time.perf_counter()
    func = factory(*ex.args, cpu=True, dtype="float32", **kw)
    tgt = Target("c")
    with tilelang.transform.PassContext(opt_level=3, config=config), tgt:
        artifact = tilelang.lower(func, target=tgt, enable_device_compile=False)
    res = build_library(wrap_source(func, artifact, tgt), tgt, root)
    assert res.ok and not res.cached, res.output
    return time.perf_counter() - t
build(None)
print("@@ ready", flush=True)
for line in sys.stdin:
    print("@@", json.dumps(build(json.loads(line))), flush=True)
'''

#: Content edits that change the generated code (so no build cache can answer): the
#: kernel's CPU default tile size; the warm process builds other values of the same knob.
KNOBS = {"gemm": ("dm, dn, dk = (16, 16, 16) if S.cpu", "dm, dn, dk = (16, 16, {v}) if S.cpu",
                  "block_K", [4 + 2 * i for i in range(100)])}

WARM_SYNTH = '''
import json, sys, time
import tilelang
from kernels import scale_add
def build(value):
    t = time.perf_counter()
    tilelang.compile(scale_add.scale_add_kernel(64, 64), target="c", execution_backend="cython")
    return time.perf_counter() - t
build(None)
print("@@ ready", flush=True)
for line in sys.stdin:
    print("@@", json.dumps(build(json.loads(line))), flush=True)
'''


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * len(s) + 0.5) - 1))]


def build_workspace(root: Path, kernel: str, synthetic: bool) -> tuple[Path, str, Path, str]:
    """(workspace, cell glob, kernel file to edit, warm-process script)."""
    ws = root / "ws"
    (ws / "probes").mkdir(parents=True)
    if synthetic:
        (ws / "kernels").mkdir()
        (ws / "kernels" / "__init__.py").write_text("")
        (ws / "kernels" / "scale_add.py").write_text(SYNTH_KERNEL.format(scale=1.5))
        (ws / "probes" / "tl.py").write_text(SYNTH_PROBE)
        return ws, "tilelang/*", ws / "kernels" / "scale_add.py", WARM_SYNTH
    shutil.copytree(REPO / "kernels", ws / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    factory = FACTORIES[kernel]
    real_probe = REPO / "probes" / "tilelang_matrix.py"
    if real_probe.exists():
        shutil.copy(real_probe, ws / "probes" / real_probe.name)
        for helper in (REPO / "probes").glob("_*.py"):
            shutil.copy(helper, ws / "probes" / helper.name)
        cell = f"tilelang/{factory}[c,fp32,cpu]"
    else:
        (ws / "probes" / "tl.py").write_text(BENCH_PROBE.format(factory=factory, module=kernel))
        cell = f"tilelang/{factory}[c,fp32,cpu]"
    warm = WARM_REAL.replace("{module}", kernel).replace("{factory}", factory)
    knob = KNOBS.get(kernel)
    if real_probe.exists() and knob:
        warm = (WARM_MATRIX.replace("{module}", kernel).replace("{factory}", factory)
                .replace("{knob}", knob[2]))
    return ws, cell, ws / "kernels" / f"{kernel}.py", warm


class WarmServer:
    """The warm process: imports TileLang once, then times one lower+build per request."""

    def __init__(self, ws: Path, script: str) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ws), str(REPO)]))
        self.proc = subprocess.Popen([sys.executable, "-c", script], cwd=ws, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.reply()

    def reply(self) -> str:
        """The next ``@@`` line (libraries may print their own lines on stdout)."""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("warm-process build failed:\n"
                                 + self.proc.stderr.read()[-3000:])
            if line.startswith("@@ "):
                return line[3:]

    def build(self, value: object) -> float:
        """One timed lower+build in the warm process (blocking; run it in a thread)."""
        import json

        self.proc.stdin.write(json.dumps(value) + "\n")
        self.proc.stdin.flush()
        return float(json.loads(self.reply()))

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def edited(original: str, kernel: str, i: int) -> str:
    """The i-th content-changing save of the kernel file."""
    knob = KNOBS.get(kernel)
    if knob and knob[0] in original:
        return original.replace(knob[0], knob[1].format(v=knob[3][i]))
    return original + f"\n# watch benchmark edit {i}\n"


async def measure(ws: Path, cell: str, target: Path, edits: int, synthetic: bool,
                  kernel: str, warm: WarmServer
                  ) -> tuple[float, list[float], list[float], list[dict], list[float]]:
    """(cold seconds, latencies, run seconds, records, warm builds) over ``edits`` saves,
    each save followed by one warm-process lower+build (same load for both)."""
    config = RunOptions(workspace=str(ws), probes=[str(ws / "probes")],
                       kernels=[str(ws / "kernels")], only=[cell], use_cache=False,
                       cache_dir=str(ws.parent / "cache"), out=str(ws.parent / "out"), jobs=1)
    records: asyncio.Queue[dict] = asyncio.Queue()
    watcher = Watcher(config, on_record=records.put_nowait, debounce_ms=50)
    t0 = time.perf_counter()
    task = asyncio.create_task(watcher.run())
    cold = None
    while True:
        rec = await asyncio.wait_for(records.get(), 600)
        if rec["type"] == "result" and cold is None:
            cold = time.perf_counter() - t0
            if rec["status"] != "ok":
                raise SystemExit(f"first run of {rec['probe']} is {rec['status']}: "
                                 f"{rec['reason']}\n{rec['result'].get('log_tail', '')[-2000:]}")
        if rec["type"] == "diagnostic":
            raise SystemExit(f"discovery: {rec['reason']}")
        if rec["type"] == "ready":
            break
    if cold is None:
        raise SystemExit(f"no cell matches {cell}")
    original = target.read_text()
    latencies, runs, recs, warm_s = [], [], [], []
    knob = KNOBS.get(kernel)
    try:
        for i in range(edits):
            value = knob[3][edits + i] if knob and not synthetic else None
            warm_s.append(await asyncio.to_thread(warm.build, value))
            await asyncio.sleep(0.2)
            if synthetic:
                text = SYNTH_KERNEL.format(scale=1.5 + (i + 1) / 1024)
            else:
                text = edited(original, kernel, i)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text(text)
            t_save = time.time()
            os.replace(tmp, target)  # an editor's atomic save
            while True:
                rec = await asyncio.wait_for(records.get(), 300)
                if rec["type"] == "result":
                    break
            latencies.append(time.time() - t_save)
            runs.append(rec["seconds"])
            recs.append(rec)
            if rec["status"] != "ok":
                raise SystemExit(f"edit {i}: {rec['status']}: {rec['reason']}")
    finally:
        target.write_text(original)
        watcher.stop()
        await asyncio.wait_for(task, 60)
    return cold, latencies, runs, recs, warm_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--kernel", default="gemm", choices=sorted(FACTORIES))
    ap.add_argument("--cell", help="the probe cell id to measure (default: the kernel's "
                    "fp32 CPU cell, tilelang/<factory>[c,fp32,cpu])")
    ap.add_argument("--synthetic", action="store_true",
                    help="a one-file TileLang kernel instead of the repo's kernels/")
    ap.add_argument("--saves", type=int, metavar="N",
                    help="instead: save -> result of passing and failing edits of a c and a "
                    "cuda kernel through laya-tui --headless --watch, N saves each, quiet then "
                    "beside two CPU hogs (benchmarks/watch_saves.py)")
    args = ap.parse_args()
    if args.saves:
        from benchmarks.watch_saves import run as run_saves

        for hogs in (False, True):
            print(run_saves(args.saves, hogs), flush=True)
        return 0
    synthetic = args.synthetic or not (REPO / "kernels" / f"{args.kernel}.py").exists()
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        ws, cell, target, warm_script = build_workspace(Path(tmp), args.kernel, synthetic)
        cell = args.cell or cell
        what = "synthetic scale_add" if synthetic else f"kernels/{args.kernel}.py"
        probe = ("probes/tilelang_matrix.py" if (ws / "probes" / "tilelang_matrix.py").exists()
                 else "bench probe")
        print(f"watch benchmark: {what}, cell {cell} ({probe}), {args.edits} saves, "
              f"{os.cpu_count()} CPUs (shared machine: figures are noisy)")
        server = WarmServer(ws, warm_script)
        try:
            cold, lat, runs, recs, warm = asyncio.run(
                measure(ws, cell, target, args.edits, synthetic, args.kernel, server))
        finally:
            server.close()
    wb, wb95 = statistics.median(warm), pct(warm, 95)
    target_s, target95 = 1.3 * wb + 0.2, 1.3 * wb95 + 0.2
    p50, p95 = pct(lat, 50), pct(lat, 95)
    print(f"  cold first run (start -> first result):   {cold:7.3f} s")
    print(f"  save -> updated result   p50 {p50:7.3f} s   p95 {p95:7.3f} s   "
          f"(min {min(lat):.3f}, max {max(lat):.3f})")
    print(f"  the cell's own run       p50 {pct(runs, 50):7.3f} s   p95 {pct(runs, 95):7.3f} s")
    stages: dict[str, list[float]] = {}
    for r in recs:
        for s in r["result"]["signals"]:
            if s.get("seconds") is not None and s.get("kind") in ("timing", "lowering"):
                stages.setdefault(f"{s['kind']} {s.get('subject', '')}", []).append(s["seconds"])
    for name, vals in stages.items():
        print(f"    inside: {name[:40]:<40} p50 {pct(vals, 50):7.3f} s   "
              f"p95 {pct(vals, 95):7.3f} s")
    print(f"  warm-process lower+build p50 {wb:7.3f} s   p95 {wb95:7.3f} s   (n={len(warm)}, "
          "interleaved with the saves)")
    for label, lat_q, base, tgt in (("p50", p50, wb, target_s), ("p95", p95, wb95, target95)):
        verdict = "MET" if lat_q <= tgt else "over"
        print(f"  target {label}: 1.3 x {base:.3f} + 0.2 = {tgt:.3f} s; latency {lat_q:.3f} s "
              f"= {lat_q / tgt:.2f} of target ({lat_q / base:.2f}x the warm build) -> {verdict}")
    over = [a - b for a, b in zip(lat, runs, strict=True)]
    print(f"  watch overhead (latency - the cell's run): p50 {pct(over, 50):.3f} s, "
          f"p95 {pct(over, 95):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
