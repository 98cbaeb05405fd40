"""Signal-path benchmark: worker -> pipe -> runner -> report, headless, beside the pipe floor.

Usage: .venv/bin/python benchmarks/bench_signal_path.py [--signals N] [--rss N] [--repeat R]

Measured in this one run, interleaved so both see the same machine load:

1. The pipe floor: one process builds the same signal events and writes them as JSON lines
   to a pipe, another parses every line with ``json.loads``. Signals per second.
2. ``laya-tui --headless --json`` on a workspace whose one probe emits N signals (the
   bench_tui flood probe), cache on (a fresh cache folder, so the cache entry is written
   too). The signal path's rate is N over the run's wall time minus the wall time of the
   same run emitting no signal (interpreter, discovery and worker start-up, measured beside
   it): the part of the run that grows with the signals. Target: at least half the floor.
3. Peak RSS of the runner process (``VmHWM`` of the laya-tui process, read in-process
   at its exit) for ``--rss`` signals (default 1,000,000), beside the same for 0 signals.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_tui import FLOOD_PROBE  # noqa: E402  (the same flooding probe)

# The floor's producer: the same signal dicts, one JSON line each, buffered writes.
PRODUCER = '''
import json, sys
n = int(sys.argv[1]); f = "/tmp/ws/probes/flood.py"; out = sys.stdout
for i in range(n):
    sig = {"kind": "fallback", "probe": "flood/many_signals", "subject": f"aten::op_{i % 997}",
           "count": i % 13 + 1, "bytes": (i * 7919) % 10_000_000, "reason": f"reason {i % 31}",
           "site": {"file": f, "line": 5 + i % 40, "func": "forward"}, "fix": "pad to 64"}
    out.write(json.dumps({"type": "signal", "probe": "flood/many_signals", "signal": sig})
              + "\\n")
out.flush()
'''

# Runs the real CLI in-process and prints its own peak RSS on the way out: VmHWM, not
# ru_maxrss, which Linux carries over fork and exec from this (larger) benchmark process.
CLI_RSS = '''
import sys
from laya_tui.cli.main import main
rc = main(sys.argv[1:])
with open("/proc/self/status") as fh:
    hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
sys.stderr.write("\\nMAXRSS_KB %s\\n" % hwm)
sys.exit(rc)
'''


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def pipe_floor(n: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) for a producer process to write n signal lines and this
    one to parse them."""
    c0, p0 = _children_cpu(), time.process_time()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", PRODUCER, str(n)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    got = 0
    loads = json.loads
    for line in proc.stdout:
        loads(line)
        got += 1
    proc.wait()
    if got != n:
        sys.exit(f"floor: {got} of {n} lines")
    return time.perf_counter() - t0, _children_cpu() - c0 + time.process_time() - p0


def headless(ws: Path, n: int) -> tuple[float, int, float]:
    """(wall seconds, peak RSS in KiB, CPU seconds of the whole process tree) of one headless
    run emitting n signals."""
    out = ws / f"report-{n}.json"
    cache = tempfile.mkdtemp(prefix="laya-bench-cache-", dir=ws)
    env = dict(os.environ, LAYA_BENCH_SIGNALS=str(n), PYTHONPATH=str(REPO),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    cmd = [sys.executable, "-c", CLI_RSS, "--headless", "--json", str(out), "--quiet",
           "--workspace", str(ws), "--probes", str(ws / "probes"), "--cache-dir", cache,
           "--no-baseline", "--jobs", "1"]
    c0 = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - c0
    if proc.returncode not in (0, 1):
        sys.exit(f"headless run failed ({proc.returncode}): {proc.stderr[-800:]}")
    rss = int(proc.stderr.rsplit("MAXRSS_KB", 1)[1].split()[0])
    report = json.loads(out.read_text())
    out.unlink()
    got = sum(len(p["signals"]) for p in report["probes"])
    if got != n:
        sys.exit(f"headless: the report holds {got} of {n} signals")
    return wall, rss, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--signals", type=int, default=200_000)
    ap.add_argument("--rss", type=int, default=1_000_000, help="signals for the RSS row (0: skip)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.signals

    with tempfile.TemporaryDirectory(prefix="laya-bench-sig-") as tmp:
        ws = Path(tmp)
        (ws / "probes").mkdir()
        (ws / "probes" / "flood.py").write_text(FLOOD_PROBE)
        floors, runs, zeros = [], [], []
        for _ in range(args.repeat):  # interleaved: each sees the same load
            floors.append(pipe_floor(n))
            zeros.append(headless(ws, 0))
            runs.append(headless(ws, n))
        floor = statistics.median(f[0] for f in floors)
        zero = statistics.median(z[0] for z in zeros)
        run = statistics.median(r[0] for r in runs)
        floor_rate = n / floor
        rate = n / max(run - zero, 1e-9)
        print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians of {args.repeat}")
        print(f"pipe floor ({n:,} JSON lines written by one process, parsed by another): "
              f"{floor:.2f} s = {floor_rate:,.0f} signals/s")
        print(f"headless run emitting 0 signals (start-up, discovery, worker): {zero:.2f} s")
        print(f"headless run emitting {n:,} signals (worker -> pipe -> runner -> report + "
              f"cache): {run:.2f} s wall; the signal path {run - zero:.2f} s = {rate:,.0f} "
              f"signals/s = {rate / floor_rate:.2f}x the pipe floor (target >= 0.5x)")
        print(f"  end to end including start-up: {n / run:,.0f} signals/s = "
              f"{n / run / floor_rate:.2f}x the floor")
        fcpu = statistics.median(f[1] for f in floors)
        pcpu = statistics.median(r[2] for r in runs) - statistics.median(z[2] for z in zeros)
        print(f"  CPU seconds (steadier on a loaded machine): floor {fcpu:.2f} s, signal path "
              f"{pcpu:.2f} s (all processes) = {fcpu / max(pcpu, 1e-9):.2f}x the floor's "
              f"signals per CPU second")
        if args.rss:
            _, rss0, _ = headless(ws, 0)
            wall_m, rss_m, _ = headless(ws, args.rss)
            print(f"runner peak RSS, {args.rss:,} signals: {rss_m / 1024:,.0f} MiB "
                  f"(0 signals: {rss0 / 1024:,.0f} MiB; {(rss_m - rss0) * 1024 / args.rss:,.0f}"
                  f" bytes per signal; run {wall_m:.1f} s)")


if __name__ == "__main__":
    main()
