"""Dashboard benchmark: time to first paint, and ingesting 100,000 streamed signals.

Usage: .venv/bin/python benchmarks/bench_tui.py [--signals N] [--paints N] [--before TREE]
       [--ingests N] [--skip-paint] [--skip-ingest] [--why] [--profile]

1. First paint: ``laya-tui`` started on a pseudo-terminal (160x45) on the demo workspace;
   the time from exec to the first frame on the terminal (the tree's "all probes" and the
   footer drawn), beside a bare two-widget Textual app on the same pty, interleaved
   (target: within 1.3x of it), and with ``--before TREE`` an earlier checkout's laya_tui
   interleaved too (before/after in one run). The app process must not import torch & co
   (a fresh interpreter imports the app modules and lists the heavy ones found).
2. Ingest: one probe emits N signals through the real worker, pipe and runner into the
   app (headless Textual driver, the full compositor still renders); total time from the
   run's start until every signal is a row in the table. The same with the recorded runner
   (no subprocess: the UI's own cost) for comparison (target: live >= 0.25x of it).
3. Event-loop stalls during each ingest, until the probe's result is on the screen (its
   cache entry written, the gates over it evaluated): a 5 ms heartbeat's lateness (max and
   p99), the loop thread's CPU time between two beats (the stall's own cost: on a loaded
   machine the wall figure also holds the time other processes took the CPU), and the
   longest single loop callback (wall and loop-thread CPU, with what it ran). Target: no
   stall over 50 ms. ``--why`` names the code on the loop's stack during each stall over
   30 ms and every callback over 10 ms of CPU; ``--profile`` prints cProfile output of
   the three costliest callbacks.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import fcntl
import json
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _loop import Heartbeat  # noqa: E402  (the loop clocks, shared with bench_show.py)

DEMO_WS = REPO / "tests" / "fixtures" / "recorded" / "demo_ws"
LAYA = [sys.executable, "-m", "laya_tui"]  # this interpreter, this tree
HEAVY = ["torch", "transformers", "tilelang", "mlx", "torch_rbln", "numpy"]

FLOOD_PROBE = '''
from laya_tui import probe

@probe(family="flood", timeout=600)
def many_signals(ctx):
    import os
    n = int(os.environ.get("LAYA_BENCH_SIGNALS", "100000"))
    for i in range(n):
        ctx.signal("fallback", subject=f"aten::op_{i % 997}", count=i % 13 + 1,
                   bytes=(i * 7919) % 10_000_000, reason=f"reason {i % 31}",
                   site={"file": __file__, "line": 5 + i % 40, "func": "forward"},
                   fix="pad to 64")
'''


# -- first paint ---------------------------------------------------------------------------
BARE_APP = """
from textual.app import App
from textual.widgets import Footer, Static

class Bare(App):
    BINDINGS = [("q", "quit", "Quit"), ("r", "bell", "Re-run")]

    def compose(self):
        yield Static("all probes")
        yield Footer()

Bare().run()
"""


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the process has used so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_paint(ws: Path, timeout: float = 20.0, bare: bool = False,
                tree: Path = REPO) -> tuple[float, float, float]:
    """(seconds to first frame, seconds to quit after 'q', CPU seconds used until the first
    frame) of laya-tui on a pty. The CPU time is steadier than wall time on a loaded machine.

    ``bare``: the same for a two-widget Textual app (the floor on this machine, now).
    ``tree``: the checkout whose laya_tui runs (another one: an earlier version, beside).
    """
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="160", LINES="45", PYTHONPATH=str(tree),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
    t0 = time.perf_counter()
    cmd = [sys.executable, "-c", BARE_APP] if bare else [
        *LAYA, "--workspace", str(ws), "--no-cache", "--cache-dir", str(ws / ".cache")]
    proc = subprocess.Popen(cmd,
                            stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ws,
                            start_new_session=True)
    os.close(slave)
    buf = b""
    painted = None
    try:
        while time.perf_counter() - t0 < timeout:
            ready, _, _ = select.select([master], [], [], 0.01)
            if ready:
                try:
                    buf += os.read(master, 65536)
                except OSError:
                    break
            if painted is None and b"all probes" in buf and b"Re-run" in buf:
                painted = time.perf_counter() - t0
                cpu = _cpu_seconds(proc.pid)
                break
        if painted is None:
            raise RuntimeError("no frame within the timeout: " + buf[-300:].decode("utf-8",
                                                                                   "replace"))
        time.sleep(1.0)  # let it run its probes a moment
        t1 = time.perf_counter()
        os.write(master, b"q")
        while proc.poll() is None and time.perf_counter() - t1 < 10:
            ready, _, _ = select.select([master], [], [], 0.02)
            if ready:
                try:
                    os.read(master, 65536)
                except OSError:
                    pass
        quit_s = time.perf_counter() - t1
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)
    return painted, quit_s, cpu


def heavy_in_app_process() -> list[str]:
    code = ("import sys, json\nimport laya_tui.cli.main, laya_tui.cli.dashboard, laya_tui.tui.app\n"
            "import laya_tui.tui.screens.runs, laya_tui.tui.watch_adapter\n"
            f"print(json.dumps([h for h in {HEAVY!r} if h in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


# -- ingest ----------------------------------------------------------------------------------
def _pending(app) -> bool:
    """Events not yet on the widgets (``updates_pending``; older apps: the pump alone)."""
    pending = getattr(app, "updates_pending", None)
    return bool(app.pump.pending if pending is None else pending)


@dataclass
class Ingest:
    """One ingest run: seconds until every signal was a row, and the loop's stalls until
    the probe's result (cache entry written, gates evaluated) was on the screen."""

    seconds: float
    beat: Heartbeat
    keys: Any = None  # a _keys.KeyRun when the keys were pressed after the ingest


async def ingest(app, n: int, timeout: float = 600.0, why: bool = False,
                 profile: bool = False, keys: bool = False) -> Ingest:
    """Time until n rows are in the app's table; the heartbeat runs on until the probe's
    end (its cache entry, the gates over its result) has been shown too. ``keys``: then
    press _keys.SEQUENCE in the loaded app, each timed to its frames."""
    beat = Heartbeat(why=why, profile=profile)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await app.ensure_runner()  # a replay loads its file here: not part of the stream
        beat.start()
        t0 = time.perf_counter()
        app.start_run()
        total = None
        ended = None
        while time.perf_counter() - t0 < timeout:
            if total is None and app.main_screen.table.row_count >= n and not _pending(app):
                total = time.perf_counter() - t0
            done = [st for st in app.model.probes.values() if st.result is not None]
            if done and not _pending(app):
                ended = done[0]
                break
            await asyncio.sleep(0.01)
        if total is None:
            total = time.perf_counter() - t0
        await pilot.pause()
        await asyncio.sleep(0.2)  # the summary's gates over the finished result
        beat.stop()
        rows = app.main_screen.table.row_count
        pressed = None
        if keys and rows >= n:
            from _keys import key_latencies

            pressed = await key_latencies(app, why=why)
        await app.shutdown_runner()
    if rows < n:
        why_ = f"; the probe ended {ended.status}: {ended.reason}" if ended else ""
        raise RuntimeError(f"only {rows} of {n} rows after {total:.1f} s{why_}")
    return Ingest(total, beat, pressed)


def live_ingest(n: int, why: bool = False, profile: bool = False,
                keys: bool = False) -> Ingest:
    from laya_tui.core.settings import RunOptions
    from laya_tui.tui.factory import build_app

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / "probes").mkdir()
        (ws / "probes" / "flood.py").write_text(FLOOD_PROBE)
        os.environ["LAYA_BENCH_SIGNALS"] = str(n)
        config = RunOptions(workspace=str(ws), probes=[str(ws / "probes")], use_cache=False,
                           cache_dir=str(ws / ".cache"))
        return asyncio.run(ingest(build_app(config, autorun=False), n, why=why,
                                  profile=profile, keys=keys))


def recorded_ingest(n: int, why: bool = False, profile: bool = False,
                    keys: bool = False) -> Ingest:
    from laya_tui.tui.factory import build_app

    sigs = [{"kind": "fallback", "probe": "flood/many", "subject": f"aten::op_{i % 997}",
             "count": i % 13 + 1, "bytes": (i * 7919) % 10_000_000, "reason": f"reason {i % 31}",
             "site": {"file": "m.py", "line": 5 + i % 40, "func": "forward"}, "fix": "pad"}
            for i in range(n)]
    report = {"probes": [{"id": "flood/many", "family": "flood", "status": "ok",
                          "reason": None, "seconds": 1.0, "cached": False, "deps": [],
                          "signals": sigs, "log_tail": ""}], "errors": []}
    with tempfile.TemporaryDirectory() as tmp:  # replayed from a file, as a user would
        path = Path(tmp) / "flood.json"
        path.write_text(json.dumps(report))
        del report, sigs
        return asyncio.run(ingest(build_app(recorded=path, autorun=False), n, why=why,
                                  profile=profile, keys=keys))


def noise_floor(seconds: float = 3.0) -> float:
    """Worst lateness of the same heartbeat on an idle loop: what the machine adds alone."""

    async def go() -> float:
        beat = Heartbeat()
        beat.start()
        await asyncio.sleep(seconds)
        beat.stop()
        return beat.worst

    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--signals", type=int, default=100_000)
    ap.add_argument("--paints", type=int, default=5)
    ap.add_argument("--ingests", type=int, default=3, help="repeats of each ingest run")
    ap.add_argument("--skip-paint", action="store_true")
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--why", action="store_true",
                    help="name the code on the loop's stack during each stall over 30 ms, "
                         "and every callback over 10 ms of CPU")
    ap.add_argument("--profile", action="store_true",
                    help="run each loop callback under cProfile (slower) and print the "
                         "profiles of the three costliest")
    ap.add_argument("--before", type=Path, metavar="TREE",
                    help="another checkout (e.g. a worktree of the commit before a change): "
                         "its first paint (and with --keys, its key latency) is measured "
                         "interleaved with this one's")
    ap.add_argument("--keys", type=int, metavar="N", default=0,
                    help="keypress-to-paint latency (benchmarks/_keys.py) with N signals "
                         "loaded (live and recorded, --ingests times each); only that")
    ap.add_argument("--modes", default="live,recorded",
                    help="with --keys: which loads (live, recorded; default both)")
    ap.add_argument("--keys-child", choices=("live", "recorded"), help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.keys_child:
        keys_child(args)
    elif args.keys:
        keys_rows(args)
    else:
        if not args.skip_paint:
            paint_rows(args)
        if not args.skip_ingest:
            ingest_rows(args)


def keys_child(args: argparse.Namespace) -> None:
    """One load plus the key sequence, in this process, printed as JSON (a child of
    keys_rows; ``--tree``: that checkout's laya_tui)."""
    if args.tree is not None:
        sys.path.insert(0, str(args.tree))
    run = (live_ingest if args.keys_child == "live" else recorded_ingest)(
        args.keys, why=args.why, keys=True)
    print(json.dumps({"seconds": run.seconds, "stall": run.beat.worst,
                      "keys": asdict(run.keys)}))


def keys_rows(args: argparse.Namespace) -> None:
    """Key latency after loading ``--keys`` signals, live and recorded; each load in a fresh
    process, this tree and ``--before`` interleaved so both see the same machine load."""
    from _keys import KeyRun, KeyTimes, print_keys

    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.before:
        trees.append((f"before ({args.before})", args.before.resolve()))
    runs: dict[tuple[str, str], list[Any]] = {}
    for _ in range(args.ingests):
        for label, tree in trees:
            for mode in args.modes.split(","):
                cmd = [sys.executable, __file__, "--keys-child", mode, "--keys",
                       str(args.keys), *(["--why"] if args.why else [])]
                env = dict(os.environ)
                if tree is not None:
                    cmd += ["--tree", str(tree)]
                    env["PYTHONPATH"] = str(tree)  # the live worker imports that one too
                out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if out.returncode:
                    raise RuntimeError(f"{label} {mode}: {out.stderr[-2000:]}")
                if args.why:
                    print(f"-- {label}, {mode}:\n" + "\n".join(out.stdout.splitlines()[:-1]))
                runs.setdefault((label, mode), []).append(json.loads(out.stdout.splitlines()[-1]))
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for (label, mode), got in runs.items():
        keyruns = [KeyRun([KeyTimes(**k) for k in g["keys"]["keys"]], g["keys"]["stall"],
                          g["keys"]["stall_cpu"]) for g in got]
        print_keys(f"{label}, {mode}, {args.keys:,} signals", keyruns)
        loads = ", ".join(f"{g['seconds']:.1f}" for g in got)
        stalls = ", ".join(f"{g['stall'] * 1000:.0f}" for g in got)
        print(f"  the load itself: {loads} s, longest stall {stalls} ms")


def paint_rows(args: argparse.Namespace) -> None:
    """First paint beside a bare Textual app, interleaved on the same pty size."""

    heavy = heavy_in_app_process()
    print(f"heavy modules in the app process: {heavy or 'none'}")
    # Textual (the yardstick) is installed with its bytecode; an installed laya-tui has its
    # own too. A checkout run with PYTHONDONTWRITEBYTECODE set would compile every laya
    # module again on each start (~0.09 s CPU here), which is not the app's cost.
    trees = [REPO] + ([args.before.resolve()] if args.before else [])
    for tree in trees:
        compileall.compile_dir(str(tree / "laya_tui"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(DEMO_WS, ws)
        paints, quits, bares, cpus, bare_cpus = [], [], [], [], []
        before: list[tuple[float, float, float]] = []
        for _ in range(args.paints):  # interleaved, so all see the same machine load
            p, q, c = first_paint(ws)
            paints.append(p)
            quits.append(q)
            cpus.append(c)
            b, _, bc = first_paint(ws, bare=True)
            bares.append(b)
            bare_cpus.append(bc)
            if args.before:
                before.append(first_paint(ws, tree=trees[1]))
    med = statistics.median(paints)
    print(f"first paint (exec -> first frame on a 160x45 pty): median {med:.3f} s, max "
          f"{max(paints):.3f} s over {args.paints} (target < 0.5 s; {med / 0.5:.2f}x the target)")
    bare = statistics.median(bares)
    print(f"a bare two-widget Textual app, same pty, interleaved: median {bare:.3f} s "
          f"(laya-tui = {med / bare:.2f}x the bare app; target <= 1.3x)")
    cpu, bare_cpu = statistics.median(cpus), statistics.median(bare_cpus)
    print(f"CPU time until the first frame: laya-tui {cpu:.3f} s, bare app {bare_cpu:.3f} s "
          f"({cpu / bare_cpu:.2f}x; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"quit while probes run (q -> process gone): median {statistics.median(quits):.3f} s")
    if before:
        b_med = statistics.median(p for p, _, _ in before)
        b_cpu = statistics.median(c for _, _, c in before)
        print(f"before ({trees[1]}), same run, interleaved: first paint median {b_med:.3f} s "
              f"= {b_med / bare:.2f}x the bare app, CPU {b_cpu:.3f} s = {b_cpu / bare_cpu:.2f}x "
              f"(this tree: {med / bare:.2f}x, {cpu / bare_cpu:.2f}x)")


def ingest_rows(args: argparse.Namespace) -> None:
    """Live and recorded ingest of the same signals, each with its loop stalls."""

    floor = noise_floor()
    print(f"noise floor: an idle asyncio loop's heartbeat is up to {floor * 1000:.0f} ms late "
          f"on this machine right now (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_signal_path import pipe_floor  # the same floor, measured beside this run

    runs: dict[str, list[Ingest]] = {"live": [], "recorded": []}
    pipe: list[float] = []
    for _ in range(args.ingests):  # interleaved: all three see the same machine load
        runs["live"].append(live_ingest(args.signals, args.why, args.profile))
        runs["recorded"].append(recorded_ingest(args.signals, args.why, args.profile))
        pipe.append(pipe_floor(args.signals)[0])
    rates = {}
    for key, name in (("live", "live worker -> pipe -> runner -> app"),
                      ("recorded", "recorded runner (the UI's own cost)")):
        tot = statistics.median(r.seconds for r in runs[key])
        rates[key] = args.signals / tot
        worst = [r.beat.worst * 1000 for r in runs[key]]
        p99 = [r.beat.p99() * 1000 for r in runs[key]]
        print(f"ingest {args.signals:,} signals, {name}: total median {tot:.2f} s "
              f"({rates[key]:,.0f} signals/s)")
        print(f"  longest loop stall per run (5 ms heartbeat's lateness, until the result is "
              f"shown): {', '.join(f'{s:.0f}' for s in worst)} ms, median "
              f"{statistics.median(worst):.0f} ms (target < 50 ms); p99 "
              f"{', '.join(f'{s:.1f}' for s in p99)} ms; stalls over 50 ms per run: "
              f"{', '.join(str(sum(x > 0.05 for x in r.beat.late)) for r in runs[key])}")
        cpu = [max(r.beat.cpu_late, default=0.0) * 1000 for r in runs[key]]
        print(f"  longest loop stall in the loop thread's CPU time (the same beats, period "
              f"included; what the app itself held the loop for): "
              f"{', '.join(f'{s:.0f}' for s in cpu)} ms, median "
              f"{statistics.median(cpu):.0f} ms (target < 50 ms); p99 "
              f"{', '.join(f'{r.beat.p99(cpu=True) * 1000:.1f}' for r in runs[key])} ms")
        cbs = [r.beat.callbacks for r in runs[key]]
        print(f"  longest single loop callback per run: wall "
              f"{', '.join(f'{c.wall * 1000:.0f}' for c in cbs)} ms; loop-thread CPU "
              f"{', '.join(f'{c.cpu * 1000:.0f} ({c.cpu_what})' for c in cbs)} ms "
              f"(target < 50 ms)")
        if args.why:
            seen: dict[str, float] = {}
            for r in runs[key]:
                for where, stall in r.beat.culprits.items():
                    seen[where] = max(seen.get(where, 0.0), stall)
            for where, stall in sorted(seen.items(), key=lambda kv: -kv[1])[:8]:
                print(f"    >= {stall * 1000:4.0f} ms in {where}")
            for r in runs[key]:
                slow: dict[str, list[float]] = {}
                for c, what in r.beat.callbacks.slow:
                    slow.setdefault(what, []).append(c * 1000)
                for what, cs in sorted(slow.items(), key=lambda kv: -max(kv[1])):
                    print(f"    callbacks over 10 ms CPU: {len(cs)} x {what}, max "
                          f"{max(cs):.0f} ms")
                r.beat.callbacks.report()
    floor_rate = args.signals / statistics.median(pipe)
    print(f"pipe floor (the same number of JSON lines written by one process, parsed by "
          f"another; bench_signal_path.py): {floor_rate:,.0f} signals/s")
    print(f"live dashboard = {rates['live'] / floor_rate:.2f}x the pipe floor (target >= 0.25x) "
          f"and {rates['live'] / rates['recorded']:.2f}x the recorded runner into the same app")


if __name__ == "__main__":
    main()
