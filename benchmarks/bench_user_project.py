"""laya-tui installed in a user's project: how much of a headless run is laya-tui itself?

Usage: .venv/bin/python benchmarks/bench_user_project.py [--only GLOB] [--jobs N] [--repeat N]

Builds the wheel from this checkout, installs it with ``pip install --no-deps --target`` in
a temporary folder (the heavy libraries come from this interpreter's environment), writes a
project with one model factory (``mypkg.mod:build``, a tiny torch module) and one TileLang
kernel file in the style of TileLang's examples plus a ``[tool.laya-tui]`` table, and runs
``laya-tui --headless --json`` there three times:

- **cold**: empty result cache and a fresh ``TORCHINDUCTOR_CACHE_DIR``;
- **lib-warm**: ``--no-cache`` (every probe runs again) with the inductor cache of the cold run;
- **cached**: the result cache of the cold run (nothing runs).

laya-tui's own share of a run = (wall - the sum of per-probe seconds) + one worker start
per family that ran, where a worker start (spawn ``python -m laya_tui.worker`` to ``ready``)
is measured separately. The rest is the probes' torch/TileLang work. With ``--jobs 1``
(default) families run one after another, so the sum of per-probe seconds is the time spent
in workers. Start-up (``--version``) and discovery (``--list``) are measured on their own.
Every figure is measured in this run.
"""

from __future__ import annotations

import argparse
import json
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
from tests._user_project import MODEL, build_wheel, install_wheel, make_project  # noqa: E402

WORKER_START = """
import asyncio, statistics, sys, tempfile, time
from laya_tui.core.runner import WorkerHandle
from laya_tui.core.settings import RunOptions

async def once(ws):
    h = WorkerHandle("bench", RunOptions(workspace=ws, probes=[]), tempfile.mkdtemp())
    t0 = time.perf_counter()
    await h.start()
    dt = time.perf_counter() - t0
    await h.close()
    return dt

ws, n = sys.argv[1], int(sys.argv[2])
print(statistics.median([asyncio.run(once(ws)) for _ in range(n)]))
"""


def install(tmp: Path) -> Path:
    """Build the wheel from a copy of the checkout and install it into ``tmp/site``."""
    return install_wheel(build_wheel(tmp), tmp / "site")


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd[2:])} failed ({proc.returncode}): {proc.stderr[-800:]}")
    return seconds, proc.stdout


def median_wall(cmd: list[str], cwd: Path, env: dict[str, str], repeat: int) -> float:
    return statistics.median(timed(cmd, cwd, env)[0] for _ in range(repeat))


def split(label: str, wall: float, report: dict, worker_start: float) -> None:
    """Print a run's wall time and laya-tui's own share of it."""
    ran = [p for p in report["probes"] if not p.get("cached")]
    in_probes = sum(p["seconds"] for p in ran)
    families = len({p["family"] for p in ran})
    own = max(0.0, wall - in_probes) + families * worker_start
    work = max(0.0, in_probes - families * worker_start)
    s = report["summary"]
    print(f"{label:9s} wall {wall:7.2f} s | probes {len(report['probes'])} "
          f"({len(ran)} ran, {s.get('cached', 0)} cached) | laya-tui itself {own:6.2f} s "
          f"| torch/TileLang work {work:7.2f} s | laya-tui share {own / wall:6.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="passed to laya-tui")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5, help="runs of the small timings")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="laya-bench-user-"))
    try:
        site = install(tmp)
        project = make_project(tmp / "project")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        env.update(PYTHONPATH=str(site), TORCHINDUCTOR_CACHE_DIR=str(tmp / "inductor"))
        laya = [sys.executable, "-m", "laya_tui"]

        startup = median_wall([*laya, "--version"], project, env, args.repeat)
        listing = median_wall([*laya, "--list"], project, env, args.repeat)
        worker = float(subprocess.run(
            [sys.executable, "-c", WORKER_START, str(project), str(args.repeat)], cwd=project,
            env=env, capture_output=True, text=True, check=True).stdout.strip())
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # as the workers set it
        imports = {lib: median_wall([sys.executable, "-c", f"import {lib}"], project, env, 1)
                   for lib in ("torch", "tilelang")}
        ids = timed([*laya, "--list", *[f"--only={o}" for o in args.only]], project, env)[1]
        print(f"project: {MODEL} + src/kernels/elementwise_add.py; "
              f"{len(ids.split())} probe cells; --jobs {args.jobs}; laya-tui from {site}")
        print(f"start-up (--version) {startup:.3f} s | discovery (--list) {listing:.3f} s | "
              f"worker start {worker:.3f} s  (medians of {args.repeat})")
        print("library imports, part of the work, once per worker that needs them: "
              + ", ".join(f"import {k} {v:.2f} s" for k, v in imports.items()))

        cache = tmp / "cache"
        run = [*laya, "--headless", "-q", "--jobs", str(args.jobs), "--cache-dir", str(cache),
               *[f"--only={o}" for o in args.only]]
        results = {}
        for label, extra in (("cold", []), ("lib-warm", ["--no-cache"]), ("cached", [])):
            out = tmp / f"{label}.json"
            wall, _ = timed([*run, "--json", str(out), *extra], project, env)
            results[label] = (wall, json.loads(out.read_text()))
            split(label, wall, results[label][1], worker)
        cold, cached = results["cold"][0], results["cached"][0]
        print(f"cached / cold wall: {cached / cold:.4f} ({cold / cached:.0f}x faster); "
              f"cached run / --list: {cached / listing:.2f}x")
        per = sorted(((p["seconds"], p["id"]) for p in results["cold"][1]["probes"]),
                     reverse=True)[:5]
        print("slowest cold cells: " + ", ".join(f"{i} {s:.1f} s" for s, i in per))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
