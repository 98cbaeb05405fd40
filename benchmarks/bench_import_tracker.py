"""The worker's import tracker against torch's own work (issue 45): CPU of one export and one
compile with the tracker off and on, each in a fresh process, interleaved.

Usage: .venv/bin/python benchmarks/bench_import_tracker.py [--repeat R]

Also times bare import statements of modules outside the workspace (what torch repeats
hundreds of thousands of times while compiling) with and without the tracker.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, os, sys, time
sys.path.insert(0, sys.argv[2])
mode, ws = sys.argv[1], sys.argv[3]
if mode == "on":
    from laya_tui.worker.deps import DependencyTracker
    tracker = DependencyTracker([ws]); tracker.install()
    rec = tracker.recording(); rec.__enter__()
import torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                        torch.nn.Linear(64, 8))
x = torch.randn(4, 64)
t0 = time.process_time(); torch.export.export(m, (x,)); export = time.process_time() - t0
t0 = time.process_time(); torch.compile(m)(x); compile_ = time.process_time() - t0
print(json.dumps({"export": export, "compile": compile_}))
'''

STATEMENTS = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
from laya_tui.worker.deps import DependencyTracker
def work(n):
    for _ in range(n):
        from typing import Any  # noqa: F401
        import os.path  # noqa: F401
        from collections import abc  # noqa: F401
        from json import decoder, loads  # noqa: F401
def cpu():
    t0 = time.process_time(); work(100_000); return time.process_time() - t0
bare = cpu()
t = DependencyTracker([sys.argv[2]]); t.install()
with t.recording():
    hooked = cpu()
t.uninstall()
print(f"{bare:.3f} {hooked:.3f}")
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as ws, tempfile.TemporaryDirectory() as cache:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache  # cold compiles both ways: a fresh dir per run
        for i in range(args.repeat):
            for mode in ("off", "on"):
                env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, f"{mode}{i}")
                out = subprocess.run([sys.executable, "-c", CHILD, mode, str(REPO), ws],
                                     env=env, capture_output=True, text=True, check=True)
                runs[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
        stmt = subprocess.run([sys.executable, "-c", STATEMENTS, str(REPO), ws],
                              capture_output=True, text=True, check=True).stdout.split()
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians of {args.repeat}")
    for stage in ("export", "compile"):
        off = statistics.median(r[stage] for r in runs["off"])
        on = statistics.median(r[stage] for r in runs["on"])
        print(f"{stage}: tracker off {off:.2f} CPU-s, on {on:.2f} CPU-s = {on / off:.2f}x")
    bare, hooked = map(float, stmt)
    print(f"400,000 import statements of loaded modules outside the workspace: bare {bare:.3f} "
          f"CPU-s, tracked {hooked:.3f} CPU-s = {hooked / bare:.2f}x")


if __name__ == "__main__":
    main()
