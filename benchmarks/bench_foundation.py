"""Foundation benchmark: CLI start-up (--help, --list) and a full headless run, cold vs cached.

Usage: .venv/bin/python benchmarks/bench_foundation.py [--only GLOB] [--repeat N]
Prints wall times measured in this one run and their ratios (targets: --help and --list
under 0.5 s, --list under 1.3x ``import textual.app`` measured interleaved with it; the
cached re-run of the full report under 2 s).
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
LAYA = [sys.executable, "-m", "laya_tui"]


def wall(cmd: list[str], repeat: int) -> tuple[float, float]:
    """(median, max) wall seconds of ``cmd`` over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), max(times)


def full_run(cache: str, only: list[str]) -> tuple[float, dict]:
    """Wall seconds and report of one headless run."""
    out = os.path.join(cache, "report.json")
    cmd = LAYA + ["--headless", "--json", out, "--cache-dir", cache, "--quiet"]
    for o in only:
        cmd += ["--only", o]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"run failed ({proc.returncode}): {proc.stderr[-500:]}")
    return seconds, json.loads(Path(out).read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--skip-full", action="store_true")
    args = ap.parse_args()

    # interleaved, one of each per round, so all three see the same load on a shared machine
    rounds = [(wall([sys.executable, "-c", "import textual.app"], 1)[0],
               wall(LAYA + ["--help"], 1)[0], wall(LAYA + ["--list"], 1)[0])
              for _ in range(args.repeat)]
    textual = statistics.median(r[0] for r in rounds)
    help_med, help_max = statistics.median(r[1] for r in rounds), max(r[1] for r in rounds)
    list_med, list_max = statistics.median(r[2] for r in rounds), max(r[2] for r in rounds)
    print(f"load {os.getloadavg()[0]:.2f}; python -c 'import textual.app': {textual:.3f} s "
          f"(median of {args.repeat}, interleaved with --help and --list)")
    print(f"laya-tui --help: median {help_med:.3f} s, max {help_max:.3f} s "
          f"(target < 0.5 s; {help_med / textual:.2f}x import textual.app)")
    print(f"laya-tui --list: median {list_med:.3f} s, max {list_max:.3f} s "
          f"(target < 0.5 s and 1.3x; {list_med / textual:.2f}x import textual.app)")
    if args.skip_full:
        return
    with tempfile.TemporaryDirectory(prefix="laya-bench-") as cache:
        cold, report = full_run(cache, args.only)
        warm, report2 = full_run(cache, args.only)
    n = report["summary"]["probes"]
    print(f"full headless run, cold: {cold:.2f} s for {n} probes "
          f"({report['summary']['status']})")
    print(f"full headless run, nothing changed: {warm:.2f} s, "
          f"{report2['summary']['cached']}/{n} cached (target < 2 s; cold/cached = "
          f"{cold / warm:.1f}x)")


if __name__ == "__main__":
    main()
