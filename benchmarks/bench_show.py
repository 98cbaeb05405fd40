"""Saved-report benchmark: ``laya-tui show`` first paint, a 100,000-signal report, the HTML page.

Usage: python benchmarks/bench_show.py [--signals N] [--paints N] [--no-html]
       python benchmarks/bench_show.py --keys [--signals N] [--repeats N] [--before TREE]
       python benchmarks/bench_show.py --html [--signals N] [--repeats N] [--before TREE]

1. First paint: ``laya-tui show REPORT`` on a pseudo-terminal (160x45), exec to the first
   frame with the tree and the footer, for the 7-probe demo report and for a report of one
   probe with N signals (default 100,000, the shape of bench_tui.py's flood probe); beside
   it the live dashboard's first paint on the demo workspace (bench_tui.py's figure,
   measured here in the same run), as a ratio.
2. Loaded: in the headless Textual driver, the time from start until all N rows are in the
   table of ``show`` over the big report (the live figure is bench_tui.py's ingest).
3. HTML: size of the page, its Python build (``build_html``, wall and CPU seconds, in a
   fresh process) and its load time in headless Chromium (navigation to the load event, the
   page's script has built every section by then) for the recorded reports of every family
   together and for the big report; ``--html`` runs only this, with ``--before TREE`` an
   earlier checkout built and loaded interleaved.
4. ``--keys``: ``show`` over the big report (say ``--signals 200000``): the load's longest
   loop stall, then the keypress-to-paint latency of benchmarks/_keys.py's key sequence,
   in fresh processes, with ``--before TREE`` an earlier checkout interleaved; and the
   longest stall of ``laya-tui show FILE``'s load, the file read and parsed by its loader
   thread after the first frame.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
RECORDED = REPO / "tests" / "fixtures" / "recorded"
DEMO_WS = RECORDED / "demo_ws"
EVERY_FAMILY = ["env_report.json", "demo_report.json", "tilelang_report.json",
                "mlx_report.json", "aoti_gpu_report.json"]


def big_report(n: int) -> dict:
    """A valid report: one probe, ``n`` fallback signals shaped like bench_tui's flood."""
    from laya_tui.report.document import build_report
    from laya_tui.report.gates import evaluate_all

    pid = "flood/many_signals"
    sigs = [{"kind": "fallback", "probe": pid, "subject": f"aten::op_{i % 997}",
             "count": i % 13 + 1, "bytes": (i * 7919) % 10_000_000, "reason": f"reason {i % 31}",
             "site": {"file": "probes/flood.py", "line": 5 + i % 40, "func": "forward"},
             "fix": "pad to 64"} for i in range(n)]
    probe = {"id": pid, "family": "flood", "status": "ok", "reason": None, "seconds": 1.0,
             "cached": False, "deps": [], "signals": sigs, "log_tail": "", "file": None,
             "params": {}}
    gates, _ = evaluate_all([probe], None, [])
    return build_report([probe], seconds=1.0, gates=gates)


def every_family() -> dict:
    """The recorded reports of every family as one report (what a full demo run covers)."""
    from laya_tui.report.document import build_report
    from laya_tui.report.gates import evaluate_all

    probes = []
    for name in EVERY_FAMILY:
        probes += json.loads((RECORDED / name).read_text())["probes"]
    gates, _ = evaluate_all(probes, None, [])
    return build_report(probes, seconds=sum(p["seconds"] for p in probes), gates=gates)


def first_paint(args: list[str], cwd: Path, timeout: float = 60.0) -> float:
    """Seconds from exec to the first frame with the tree and the footer; then quits."""
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="160", LINES="45",
               TORCH_DEVICE_BACKEND_AUTOLOAD="0", PYTHONPATH=str(REPO))
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "laya_tui", *args], stdin=slave,
                            stdout=slave, stderr=slave, env=env, cwd=cwd,
                            start_new_session=True)
    os.close(slave)
    buf, painted = b"", None
    try:
        while time.perf_counter() - t0 < timeout:
            ready, _, _ = select.select([master], [], [], 0.01)
            if ready:
                try:
                    buf += os.read(master, 65536)
                except OSError:
                    break
            if b"all probes" in buf and b"Help" in buf:  # show hides Re-run
                painted = time.perf_counter() - t0
                break
        if painted is None:
            raise RuntimeError("no frame: " + buf[-300:].decode("utf-8", "replace"))
        time.sleep(0.5)
        os.write(master, b"q")
        end = time.perf_counter() + 15
        while proc.poll() is None and time.perf_counter() < end:
            if select.select([master], [], [], 0.02)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    pass
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)
    return painted


async def loaded(report: dict | Path, n: int, *, keys: bool = False, why: bool = False
                 ) -> tuple[float, float, float, Any]:
    """(seconds from the app's start until all n rows of ``show`` are in the table, the
    longest event-loop stall meanwhile (wall, and the loop thread's CPU), seen by a 5 ms
    heartbeat; with ``keys``, the _keys.SEQUENCE pressed in the loaded app, else None).
    ``report``: a parsed report (``build_saved_app``, as ``laya-tui diff`` opens one) or
    a path, read and parsed after the first frame by the loader thread, as
    ``laya-tui show PATH`` does (``build_lazy_app``)."""
    from _loop import Heartbeat

    from laya_tui.cli.show import build_lazy_app, build_saved_app

    t0 = time.perf_counter()
    if isinstance(report, Path):
        app = build_lazy_app(str(report), workspace=str(REPO))
    else:
        app = build_saved_app(report, label="bench", workspace=str(REPO))
    beat = Heartbeat()
    pressed = None
    async with app.run_test(size=(160, 45)) as pilot:
        beat.start()
        while app.main_screen.table.row_count < n or app.pump.pending or \
                getattr(app, "updates_pending", False):
            await asyncio.sleep(0.01)
        total = time.perf_counter() - t0
        await asyncio.sleep(0.3)
        beat.stop()
        await pilot.pause()
        if keys:
            from _keys import key_latencies

            pressed = await key_latencies(app, why=why)
    return total, beat.worst, max(beat.cpu_late, default=0.0), pressed


def keys_child(path: Path, n: int, why: bool, lazy: bool = False) -> None:
    """One ``show`` load of the report at ``path`` plus the key sequence, as JSON; with
    ``lazy``, only the load of the file as ``laya-tui show PATH`` reads it."""
    if lazy:
        total, stall, cpu, _ = asyncio.run(loaded(path, n))
        print(json.dumps({"seconds": total, "stall": stall, "stall_cpu": cpu}))
        return
    report = json.loads(path.read_text())
    total, stall, cpu, pressed = asyncio.run(loaded(report, n, keys=True, why=why))
    print(json.dumps({"seconds": total, "stall": stall, "stall_cpu": cpu,
                      "keys": asdict(pressed)}))


def keys_rows(args: argparse.Namespace, big_path: Path) -> None:
    """``show`` over the big report: its load and the keys, in fresh processes, this tree
    and ``--before`` interleaved."""
    from _keys import KeyRun, KeyTimes, print_keys

    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.before:
        trees.append((f"before ({args.before})", args.before.resolve()))
    got: dict[str, list[Any]] = {}
    files: dict[str, list[Any]] = {}
    for _ in range(args.repeats):
        for label, tree in trees:
            for lazy in (False, True):
                cmd = [sys.executable, __file__, "--child", str(big_path), "--signals",
                       str(args.signals), *(["--why"] if args.why else []),
                       *(["--lazy"] if lazy else [])]
                env = dict(os.environ)
                if tree is not None:
                    cmd += ["--tree", str(tree)]
                    env["PYTHONPATH"] = str(tree)
                out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if out.returncode:
                    raise RuntimeError(f"{label}: {out.stderr[-2000:]}")
                if args.why and not lazy:
                    print(f"-- {label}:\n" + "\n".join(out.stdout.splitlines()[:-1]))
                (files if lazy else got).setdefault(label, []).append(
                    json.loads(out.stdout.splitlines()[-1]))
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for label, runs in got.items():
        keyruns = [KeyRun([KeyTimes(**k) for k in g["keys"]["keys"]], g["keys"]["stall"],
                          g["keys"]["stall_cpu"]) for g in runs]
        print_keys(f"show, {label}, {args.signals:,} signals", keyruns)
        loads = ", ".join(f"{g['seconds']:.1f}" for g in runs)
        stalls = ", ".join(f"{g['stall'] * 1000:.0f} ({g['stall_cpu'] * 1000:.0f} CPU)"
                           for g in runs)
        print(f"  the load itself (all rows in the table): {loads} s, longest loop stall "
              f"{stalls} ms (target < 50 ms)")
        runs = files[label]
        loads = ", ".join(f"{g['seconds']:.1f}" for g in runs)
        stalls = ", ".join(f"{g['stall'] * 1000:.0f} ({g['stall_cpu'] * 1000:.0f} CPU)"
                           for g in runs)
        print(f"  `laya-tui show FILE` (the file read and parsed by the loader thread, then "
              f"the rows): {loads} s, longest loop stall {stalls} ms (target < 50 ms)")


def build_child(report_path: Path, out: Path) -> None:
    """Build the page of the report at ``report_path`` into ``out`` (this process's tree, a
    fresh interpreter), print its build time as JSON: wall and CPU seconds of build_html."""
    import laya_tui
    from laya_tui.report.html import build_html

    report = json.loads(report_path.read_text())
    t0, c0 = time.perf_counter(), time.process_time()
    text = build_html(report, workspace=str(REPO))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out.write_text(text, encoding="utf-8")
    tree = str(Path(laya_tui.__file__).parents[1])
    print(json.dumps({"wall": wall, "cpu": cpu, "tree": tree}))


def html_figures(reports: dict[str, dict], tmp: Path, before: Path | None = None,
                 repeats: int = 1) -> None:
    """Per report and tree: the page's size, its Python build (wall and CPU, in a fresh
    process) and its load in headless Chromium (median of 3 per repeat), the trees
    interleaved."""
    from tests._browser import Browser, find_chromium

    binary = find_chromium()
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if before is not None:
        trees.append((f"before ({before})", before.resolve()))
    for name, report in reports.items():
        src = tmp / f"{name}.json"
        src.write_text(json.dumps(report))
        nsig = sum(len(p["signals"]) for p in report["probes"])
        got: dict[str, dict[str, list[float]]] = {}
        for _ in range(repeats):
            for label, tree in trees:
                path = tmp / f"{name}-{'before' if tree else 'this'}.html"
                env = dict(os.environ, PYTHONPATH=str(tree or REPO))
                cmd = [sys.executable, __file__, "--build-child", str(src), str(path),
                       *(["--tree", str(tree)] if tree else [])]
                out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if out.returncode:
                    raise RuntimeError(f"{label}: {out.stderr[-2000:]}")
                built = json.loads(out.stdout.splitlines()[-1])
                assert Path(built["tree"]) == (tree or REPO), (label, built["tree"])
                g = got.setdefault(label, {"wall": [], "cpu": [], "load": [], "mib": []})
                g["wall"].append(built["wall"])
                g["cpu"].append(built["cpu"])
                g["mib"].append(path.stat().st_size / 2**20)
                if binary is not None:
                    with Browser(binary) as b:
                        loads = []
                        for _ in range(3):
                            loads.append(b.open(path.as_uri(), timeout=180))
                            assert b.console_errors() == [], b.console_errors()
                    g["load"].append(statistics.median(loads))
        print(f"  {name}: {len(report['probes'])} probes, {nsig:,} signals "
              f"(load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        for label, g in got.items():
            med = {k: statistics.median(v) if v else None for k, v in g.items()}
            load = (f"Chromium load {med['load']:.2f} s (median of 3 x {repeats})"
                    if med["load"] is not None else
                    "no Chromium (apt-get install -y chromium): load not measured")
            print(f"    {label}: {med['mib']:.1f} MiB, built in {med['wall']:.2f} s wall "
                  f"{med['cpu']:.2f} s CPU; {load}")
        if len(got) == 2:
            (_, a), (_, b0) = got.items()
            ratio = {k: statistics.median(a[k]) / statistics.median(b0[k])
                     for k in ("mib", "wall", "cpu", "load") if a[k] and b0[k]}
            print("    this / before: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratio.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--signals", type=int, default=100_000)
    ap.add_argument("--paints", type=int, default=3)
    ap.add_argument("--no-html", action="store_true")
    ap.add_argument("--html", action="store_true",
                    help="only: the HTML pages (size, Python build, Chromium load), "
                         "--repeats times, beside --before")
    ap.add_argument("--keys", action="store_true",
                    help="only: show's load of the big report and the key latency "
                         "(benchmarks/_keys.py), --repeats times, beside --before")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--before", type=Path, metavar="TREE",
                    help="with --keys or --html: an earlier checkout measured interleaved")
    ap.add_argument("--why", action="store_true")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--lazy", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--build-child", type=Path, nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_child is not None:
        if args.tree is not None:
            sys.path.insert(0, str(args.tree))
        build_child(*args.build_child)
        return
    if args.child is not None:
        if args.tree is not None:
            sys.path.insert(0, str(args.tree))
        keys_child(args.child, args.signals, args.why, args.lazy)
        return
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        big = big_report(args.signals)
        big_path = tmp / "big.json"
        big_path.write_text(json.dumps(big, indent=1))
        print(f"big report: {args.signals:,} signals, {big_path.stat().st_size / 2**20:.1f} MiB")
        if args.keys:
            keys_rows(args, big_path)
            return
        pages = {"every-family": every_family(), f"{args.signals}-signals": big}
        if args.html:
            print("HTML page:")
            html_figures(pages, tmp, args.before, args.repeats)
            return
        live, demo, show_big = [], [], []
        for _ in range(args.paints):
            live.append(first_paint(["--workspace", str(DEMO_WS), "--no-cache", "--cache-dir",
                                     str(tmp / "cache")], DEMO_WS))
            demo.append(first_paint(["show", str(RECORDED / "demo_report.json")], DEMO_WS))
            show_big.append(first_paint(["show", str(big_path)], tmp))
        m_live, m_demo, m_big = (statistics.median(x) for x in (live, demo, show_big))
        print(f"first paint (median of {args.paints}): live dashboard on the demo workspace "
              f"{m_live:.3f} s; show demo report {m_demo:.3f} s ({m_demo / m_live:.2f}x live); "
              f"show {args.signals:,}-signal report {m_big:.3f} s ({m_big / m_live:.2f}x live)")
        total, stall, cpu, _ = asyncio.run(loaded(big, args.signals))
        print(f"show {args.signals:,}-signal report, all rows in the table: {total:.2f} s, "
              f"longest loop stall {stall * 1000:.0f} ms ({cpu * 1000:.0f} ms loop-thread "
              f"CPU; headless driver)")
        if not args.no_html:
            print("HTML page:")
            html_figures(pages, tmp)


if __name__ == "__main__":
    main()
