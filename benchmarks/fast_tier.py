"""The fast test tier (issue 45): its wall and CPU time, and whether it still runs every
module of ``laya_tui/``.

Usage: .venv/bin/python benchmarks/fast_tier.py [--no-coverage] [-- PYTEST_ARGS...]

1. ``pytest -m "not slow"`` as CONTRIBUTING.md gives it, timed (wall, CPU of the process
   tree), with a fresh ``HOME``. Target: under 3 minutes on 2 cores.
2. Unless ``--no-coverage``: the same tier again under coverage.py, worker subprocesses
   included (``[run] patch = subprocess``), and per module of ``laya_tui/`` the share of
   its statements the tier ran. Every module must be run by the tier (none at 0%); the
   ones below 25% are listed. Needs ``coverage`` >= 7.10 (``pip install coverage``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIER = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow"]


def _run(cmd: list[str], env: dict[str, str]) -> tuple[int, float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stdout.splitlines()
    tail = [ln for ln in lines if " passed" in ln or " failed" in ln]
    failed = [ln for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
    return proc.returncode, wall, cpu, "\n  ".join(
        [tail[-1] if tail else proc.stdout[-400:], *failed])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-coverage", action="store_true")
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]
    with tempfile.TemporaryDirectory(prefix="laya-tier-") as tmp:
        env = dict(os.environ, HOME=str(Path(tmp) / "home"), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        Path(env["HOME"]).mkdir()
        load0 = os.getloadavg()[0]
        rc, wall, cpu, line = _run([sys.executable, *TIER, *extra], env)
        print(f"load {load0:.2f} -> {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        print(f"fast tier: {wall:.1f} s wall, {cpu:.1f} CPU-s (target: under 180 s wall); "
              f"exit {rc}: {line}")
        if args.no_coverage:
            sys.exit(rc)
        data = Path(tmp) / "cov"
        data.mkdir()
        rcfile = Path(tmp) / "coveragerc"
        rcfile.write_text(f"[run]\nsource = laya_tui\npatch = subprocess\nparallel = true\n"
                          f"data_file = {data / '.coverage'}\n")
        env["COVERAGE_RCFILE"] = str(rcfile)
        crc, cwall, _, cline = _run([sys.executable, "-m", "coverage", "run", *TIER, *extra],
                                    env)
        if "No module named coverage" in cline:
            sys.exit("fast_tier: coverage is not installed: pip install coverage")
        subprocess.run([sys.executable, "-m", "coverage", "combine", "-q"], cwd=REPO, env=env,
                       check=True)
        out = Path(tmp) / "cov.json"
        subprocess.run([sys.executable, "-m", "coverage", "json", "-q", "-o", str(out)],
                       cwd=REPO, env=env, check=True)
        files = json.loads(out.read_text())["files"]
    shares = {f: v["summary"]["percent_covered"] for f, v in files.items()}
    modules = sorted(str(p.relative_to(REPO)) for p in (REPO / "laya_tui").rglob("*.py"))
    never = [m for m in modules if shares.get(m, 0.0) == 0.0]
    total = sum(v["summary"]["num_statements"] for v in files.values())
    ran = sum(v["summary"]["covered_lines"] for v in files.values())
    print(f"under coverage: {cwall:.1f} s wall, exit {crc}: {cline}")
    print(f"modules of laya_tui/: {len(modules)}; run by the tier: {len(modules) - len(never)}; "
          f"statements run: {ran:,} of {total:,} ({100 * ran / max(total, 1):.1f}%)")
    for m in never:
        print(f"  never run by the tier: {m}")
    low = sorted((shares.get(m, 0.0), m) for m in modules if 0 < shares.get(m, 0.0) < 25)
    for share, m in low:
        print(f"  {share:5.1f}% {m}")
    sys.exit(rc or crc or (1 if never else 0))


if __name__ == "__main__":
    main()
