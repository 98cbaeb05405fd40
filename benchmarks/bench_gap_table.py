"""Gap table benchmark (issue 43 item 2): its memory with and without the budget, and what
``--numerics`` costs a passing cell.

Usage: .venv/bin/python benchmarks/bench_gap_table.py [--out FILE] [--skip-cli]
[--memory-only]

1. Memory. A deep MLP (``--blocks`` blocks of Linear + GELU at width ``--width``, batch
   ``--batch``) in bf16 against its fp32 original. Each configuration runs in a fresh
   process: the model's activation size (every module output of one bf16 forward), what the
   fp32 records come to (``activation_bytes``), the most the records held in memory at once
   (``peak_bytes``, the store's own count), the bytes spilled, and the process's peak RSS
   growth during the table (``ru_maxrss`` after it minus the RSS before it), with no budget
   and with budgets below the records' size. The same for ``--blocks`` levels nested in
   one another (each level's input held while the levels inside it run).
2. Cost in process: the demo's tiny Llama / ModernBERT in bf16 and the test model: one
   plain forward (median of 5) against the gap table (reference run, model run and every
   local re-run), eager and compiled module by module (a compile cell's table: each leaf
   compiled alone, Dynamo reset before, so the compiles are counted).
3. Cost of ``--numerics`` on a passing cell through the CLI: the cell's seconds (the report's
   ``seconds``) with and without the flag, ``explain/<preset>[bf16,eager]`` and a
   ``--model`` that is fine in bf16, ``--no-cache``, best of two runs each.

Writes benchmarks/results/gap-table.txt (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")  # torch-rbln without its runtime
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.append(ROOT)  # last: ./kernels shadows a package

MB = 1024 * 1024


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _nested(blocks: int, width: int) -> Any:
    """``blocks`` levels, each a Linear + GELU around the next level: every level's input is
    held while the levels inside it run."""
    import torch

    class Level(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.fc, self.act, self.inner = torch.nn.Linear(width, width), torch.nn.GELU(), inner

        def forward(self, x: Any) -> Any:
            h = self.act(self.fc(x))
            return h if self.inner is None else self.inner(h)

    model = None
    for _ in range(blocks):
        model = Level(model)
    return model


def memory_child(kind: str, blocks: int, width: int, batch: int, budget_mb: float
                 ) -> dict[str, Any]:
    """One configuration, in this (fresh) process."""
    import copy

    import torch

    from laya_tui.families.explain import gap_table as g

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if kind == "nested":
        ref = _nested(blocks, width).eval()
    else:
        layers: list[Any] = []
        for _ in range(blocks):
            layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
        ref = torch.nn.Sequential(*layers).eval()
    model = copy.deepcopy(ref).to(torch.bfloat16)
    x = torch.randn(batch, width)
    xb = x.to(torch.bfloat16)
    outs = 0

    def count(_m: Any, _a: Any, out: Any) -> None:
        nonlocal outs
        outs += out.numel() * out.element_size()

    hs = [m.register_forward_hook(count) for m in model.modules()]
    with torch.no_grad():
        model(xb)
    for h in hs:
        h.remove()
    budget = None if budget_mb <= 0 else int(budget_mb * MB)
    with tempfile.TemporaryDirectory() as tmp:
        before = _rss()
        t = g.gap_table(model, ref, lambda: model(xb), lambda: ref(x), budget=budget,
                        folder=tmp)
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"model_activations": outs, "records": t.activation_bytes,
            "peak_records": t.peak_bytes, "spilled": t.spilled_bytes,
            "files": t.spilled_files, "rss_growth": max(0, peak_rss - before),
            "seconds": t.seconds, "top": t.ranked()[0].module}


def memory_rows(kind: str, blocks: int, width: int, batch: int) -> list[str]:
    shape = (f"MLP {blocks} x (Linear {width} + GELU)" if kind == "mlp" else
             f"{blocks} nested levels of (Linear {width} + GELU, then the next level)")
    rows = [f"memory: {shape}, batch {batch}, bf16 vs fp32 (each row a fresh process)",
            f"{'budget':>10} {'model act.':>10} {'records':>9} {'peak rec.':>9} "
            f"{'spilled':>9} {'files':>5} {'RSS growth':>10} {'seconds':>7}"]
    for budget_mb in (0, 64, 16, 4):
        proc = subprocess.run(
            [sys.executable, __file__, "--child",
             json.dumps([kind, blocks, width, batch, budget_mb])],
            capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            rows.append(f"{budget_mb:>7} MB failed: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        label = "none" if budget_mb <= 0 else f"{budget_mb} MB"
        rows.append(f"{label:>10} {r['model_activations'] / MB:>8.1f}MB "
                    f"{r['records'] / MB:>7.1f}MB {r['peak_records'] / MB:>7.1f}MB "
                    f"{r['spilled'] / MB:>7.1f}MB {r['files']:>5} "
                    f"{r['rss_growth'] / MB:>8.1f}MB {r['seconds']:>7.2f}")
        print(rows[-1], flush=True)
    return rows


def cost_rows() -> list[str]:
    import copy

    import torch

    from laya_tui.families import presets
    from laya_tui.families.explain import gap_table as g

    torch.set_num_threads(1)
    rows = ["cost in process (1 thread): one plain bf16 forward (median of 5) vs the gap table "
            "(compile: leaf compiles included)",
            f"{'model':<28} {'calls':>5} {'forward':>9} {'table':>9} {'ratio':>6}  "
            "most own error"]
    cases: list[tuple[str, Any, Any, Any, Any]] = []
    for preset in ("tiny_llama", "tiny_modernbert"):
        build = getattr(presets, preset)
        batch = presets.token_batch([7, 5])
        cases.append((f"{preset} bf16", build(torch.bfloat16), build(None), batch,
                      batch["attention_mask"].bool()))
    from tests.test_gap_table import Net

    torch.manual_seed(0)
    ref = Net("scss").eval()
    x = torch.randn(8, 16).to(torch.bfloat16).float()
    cases.append(("test model scss", copy.deepcopy(ref).to(torch.bfloat16), ref, x, None))
    for name, model, ref, inp, mask in cases:
        def run(m: Any, low: bool, inp: Any = inp) -> Any:
            if isinstance(inp, dict):
                return m(**inp)
            return m(inp.to(torch.bfloat16) if low else inp)

        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            with torch.no_grad():
                run(model, True)
            times.append(time.perf_counter() - t0)
        fwd = statistics.median(times)
        for path in ("eager", "compile"):
            torch._dynamo.reset()
            t0 = time.perf_counter()
            with g.leaves_compiled(model) if path == "compile" else contextlib.nullcontext():
                t = g.gap_table(model, ref, lambda m=model, r=run: r(m, True),
                                lambda m=ref, r=run: r(m, False), mask=mask)
            took = time.perf_counter() - t0
            top = t.ranked()[0]
            rows.append(f"{name + ', ' + path:<28} {len(t.rows):>5} {fwd * 1e3:>7.1f}ms "
                        f"{took * 1e3:>7.1f}ms {took / fwd:>5.1f}x  {top.module} ({top.type}) "
                        f"local {top.local:.3g} / limit {top.limit:.3g}")
            print(rows[-1], flush=True)
    return rows


FINE_MODEL = '''
import torch


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    return model.eval().to(torch.bfloat16), torch.randn(8, 16).to(torch.bfloat16)
'''


def _cell_seconds(args: list[str], cwd: str) -> tuple[float, float | None, str]:
    out = os.path.join(cwd, "r.json")
    env = dict(os.environ, PYTHONPATH=cwd)
    subprocess.run([sys.executable, "-m", "laya_tui", "--headless", "--json", out,
                    "--no-cache", "--device", "cpu", *args], cwd=cwd, env=env,
                   capture_output=True, text=True, timeout=600, check=False)
    with open(out, encoding="utf-8") as fh:
        (p,) = json.load(fh)["probes"]
    table = [s.get("seconds") for s in p["signals"] if "gap_table" in (s.get("detail") or {})]
    return float(p["seconds"]), (table[0] if table else None), p["status"]


def cli_rows() -> list[str]:
    rows = ["cost of --numerics on a passing cell (CLI, --no-cache, CPU; best of 2 runs)",
            "(cell seconds on 2 shared cores vary by +-50% between runs: the table's own "
            "seconds against the cell's are the cost)",
            f"{'cell':<44} {'plain':>7} {'--numerics':>10} {'table':>7} {'table/cell':>10}"]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "bench_fine_model.py"), "w") as fh:
            fh.write(FINE_MODEL)
        cells = [("explain/tiny_llama[bf16,eager]", ["--demo"]),
                 ("explain/tiny_modernbert[bf16,eager]", ["--demo"]),
                 ("explain/model:bench_fine_model:build[eager]",
                  ["--model", "bench_fine_model:build"])]
        for cell, extra in cells:
            base = ["--only", cell, *extra]
            plain = min(_cell_seconds(base, tmp)[0] for _ in range(2))
            runs = [_cell_seconds([*base, "--numerics"], tmp) for _ in range(2)]
            best = min(runs, key=lambda r: r[0])
            status = best[2]
            rows.append(f"{cell:<44} {plain:>6.2f}s {best[0]:>9.2f}s "
                        f"{(best[1] or 0):>6.3f}s {(best[1] or 0) / plain:>10.1%}"
                        + ("" if status == "ok" else f"  ({status})"))
            print(rows[-1], flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                  "gap-table.txt"))
    ap.add_argument("--blocks", type=int, default=24)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--memory-only", action="store_true",
                    help="the memory rows only, printed (no file written)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(memory_child(*json.loads(args.child))))
        return 0
    import torch

    lines = [f"gap table, CPU, torch {torch.__version__}"]
    print(lines[0], flush=True)
    for kind in ("mlp", "nested"):
        lines += memory_rows(kind, args.blocks, args.width, args.batch) + [""]
    if args.memory_only:
        print("\n".join(lines))
        return 0
    lines += cost_rows() + [""]
    if not args.skip_cli:
        lines += cli_rows()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
