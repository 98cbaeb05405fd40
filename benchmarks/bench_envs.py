"""``--env`` benchmark: the five demo kernels x ``c`` x fp16/bf16 under two TileLang
releases, and what a second environment costs, measured side by side in one run.

Usage: .venv/bin/python benchmarks/bench_envs.py [--old .venv-014/bin/python]
       [--new .venv/bin/python] [--repeat 5] [--skip-cells]

``--old`` is a second environment made as docs/environments.md's recipe says (TileLang 0.1.14 and
torch 2.13.0). Printed:

1. The first diagnostic of each kernel x dtype cell (the GPU specialization lowered to
   ``c``) under both environments, which differ, and which of the TileLang CPU study's
   first-failure categories each message falls in (the study recorded its table on
   TileLang 0.1.14).
2. The cost of an environment: the interpreter check laya-tui runs before anything
   (``core.envs.inspect_env``), a worker's start-up to ``ready`` (median of ``--repeat``),
   and the headless wall time of the 10 cells with no ``--env``, one environment, and both
   (``--jobs 1`` and ``--jobs 2``), each with ``--no-cache``, as ratios of one.
The load average is printed before and after: timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CELLS = ["tilelang/*_kernel[c,fp16,gpu]", "tilelang/*_kernel[c,bf16,gpu]"]
#: The TileLang CPU study's first-failure categories (what each message is about).
STUDY = (
    ("CPU fill only supports local and global buffers", "fragment fills unsupported on the CPU"),
    ("CPU reduce only supports local src", "fragment reductions unsupported on the CPU"),
    ("Cannot convert type bfloat16 to C type", "bf16 has no C type"),
    ("vec_type<float, 4>::vec_type(half4", "fp16 vector cast fails in the C++ compiler"),
    ("layout", "fragment layout inference"),
)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def category(reason: str) -> str:
    return next((name for key, name in STUDY if key in reason), "(not in the study)")


def headless(args: list[str], out: Path) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "laya_tui", "--headless", "-q", "--no-cache",
                           "--json", str(out), *[a for c in CELLS for a in ("--only", c)],
                           *args], cwd=REPO, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"laya-tui failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, json.loads(out.read_text())


async def worker_start(env: Any, repeat: int) -> list[float]:
    from laya_tui.core.settings import RunOptions
    from laya_tui.core.worker_handle import WorkerHandle

    config = RunOptions(workspace=str(REPO), probes=[str(REPO / "probes")])
    times = []
    with tempfile.TemporaryDirectory() as logs:
        for _ in range(repeat):
            handle = WorkerHandle("tilelang", config, logs, env)
            t0 = time.perf_counter()
            await handle.start()
            times.append(time.perf_counter() - t0)
            await handle.close()
    return times


def diagnostics_table(report: dict[str, Any]) -> None:
    by = {}
    for p in report["probes"]:
        base = p["id"].rpartition("@")[0]
        by.setdefault(base, {})[p["env"]] = p
    print("\n1. first diagnostic per cell (GPU specialization lowered to c)")
    print(f"{'cell':<34} {'env':<4} {'stage':<6} first diagnostic  [study category]")
    differ = 0
    for base in sorted(by):
        sides = by[base]
        reasons = {e: (sides[e].get("reason") or "").split(": ", 1)[-1] for e in sides}
        same = len(set(reasons.values())) == 1
        differ += not same
        for env in ("old", "new"):
            p = sides.get(env)
            if p is None:
                continue
            low = next((s for s in p["signals"] if s["kind"] == "lowering"), {})
            stage = (low.get("detail") or {}).get("stage") or p["status"]
            mark = "" if same else "  <- differs"
            print(f"{base.split('/', 1)[1]:<34} {env:<4} {stage:<6} {reasons[env][:110]}"
                  f"  [{category(reasons[env])}]{mark}")
    print(f"   {differ} of {len(by)} cells have a different first diagnostic")
    cand = report["env_comparison"]["candidates"][0]
    print(f"   report: {len(cand['diagnostics'])} first diagnostic(s) changed, "
          f"{len(cand['regressions'])} regression(s); versions changed: "
          + ", ".join(f"{k} {v['before']} -> {v['after']}" for k, v in cand["versions"].items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default=str(REPO / ".venv-014" / "bin" / "python"))
    ap.add_argument("--new", default=sys.executable)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-cells", action="store_true", help="only the start-up figures")
    args = ap.parse_args()
    if not os.path.exists(args.old):
        print(f"no second environment at {args.old}: make it as docs/environments.md says "
              "(python3.11 -m venv .venv-014 && .venv-014/bin/pip install torch==2.13.0 "
              "tilelang==0.1.14)", file=sys.stderr)
        return 2
    from laya_tui.core.envs import inspect_env

    print(f"load before: {load()}  (cpus: {os.cpu_count()})")
    t0 = time.perf_counter()
    old = inspect_env("old", args.old)
    t_old = time.perf_counter() - t0
    t0 = time.perf_counter()
    new = inspect_env("new", args.new)
    t_new = time.perf_counter() - t0
    print(f"envs: old = {old.python} (tilelang {old.versions.get('tilelang')}, torch "
          f"{old.versions.get('torch')}); new = {new.python} (tilelang "
          f"{new.versions.get('tilelang')})")
    with tempfile.TemporaryDirectory() as tmp:
        report = None
        walls: dict[str, float] = {}
        if not args.skip_cells:
            out = Path(tmp)
            walls["no --env"], _ = headless(["--jobs", "1"], out / "a.json")
            walls["1 env (new)"], _ = headless(["--jobs", "1", "--env", f"new={new.python}"],
                                               out / "b.json")
            walls["2 envs, --jobs 1"], report = headless(
                ["--jobs", "1", "--env", f"old={old.python}", "--env", f"new={new.python}"],
                out / "c.json")
            walls["2 envs, --jobs 2"], _ = headless(
                ["--jobs", "2", "--env", f"old={old.python}", "--env", f"new={new.python}"],
                out / "d.json")
        starts = {name: asyncio.run(worker_start(env, args.repeat))
                  for name, env in (("default (laya-tui's own)", None), ("env new", new),
                                    ("env old", old))}
    if report is not None:
        diagnostics_table(report)
    print("\n2. what an environment costs")
    print(f"   interpreter check before the run: old {t_old:.3f} s, new {t_new:.3f} s")
    base = statistics.median(starts["default (laya-tui's own)"])
    for name, times in starts.items():
        med = statistics.median(times)
        print(f"   worker start-up to ready, {name:<26} median {med:.3f} s "
              f"(x{med / base:.2f} of the default; {len(times)} starts)")
    if walls:
        one = walls["1 env (new)"]
        for name, wall in walls.items():
            print(f"   10 cells x {name:<18} wall {wall:6.1f} s  = x{wall / one:.2f} of one env")
    print(f"load after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
