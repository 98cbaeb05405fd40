"""Save -> result through ``laya-tui --headless --watch`` (issue 45), driven by bench_watch.

A temporary workspace holds ``k/axpy.py`` (a serial jit kernel TileLang lowers for ``c``
and builds and runs there; its ``cuda`` cell is built, not run). Each save is an editor's
write-then-rename; a *passing* edit changes a comment, a *failing* one the reference's
maths. For every save the JSON lines are read until the ``c`` cell's result; the lines
that follow within ``--settle`` seconds are counted too, so a second result for one
save shows. ``--hogs`` starts two CPU hogs in their own sessions (``setsid``) first and
kills them after. TileLang's disk cache is off, so each save pays a real lower+build.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNEL = REPO / "tests" / "fixtures" / "upstream_kernels" / "scale_serial.py"
CELL = "tilelang/axpy[c,fp32]"
REF = "    return a * 2.0 + b\n"


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def start_hogs(n: int = 2) -> list[subprocess.Popen[bytes]]:
    """CPU hogs in sessions of their own (``setsid``), as another user's work would be."""
    return [subprocess.Popen(["setsid", sys.executable, "-c", "while True: pass"],
                             stdin=subprocess.DEVNULL) for _ in range(n)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for h in hogs:
        h.kill()
        h.wait()


class Stream:
    """The watch process; its JSON lines in a queue (stamped when read)."""

    def __init__(self, ws: Path) -> None:
        env = dict(os.environ, TILELANG_DISABLE_CACHE="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "laya_tui", "--workspace", str(ws), "--kernels",
             str(ws / "k"), "--no-demo", "--headless", "--watch", "--no-cache", "--quiet",
             "--only", "tilelang/*"], cwd=REPO, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
        self.lines: queue.Queue[tuple[float, dict]] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.time(), json.loads(line)))

    def until(self, pred, timeout: float = 300.0) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        while True:
            t, rec = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if pred(rec):
                return t, rec

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def saves(stream: Stream, target: Path, n: int, failing: bool, settle: float
          ) -> tuple[list[float], list[float], int]:
    """(save -> c result seconds, the cell's run seconds, extra c results) over n saves."""
    base = target.read_text()
    lat: list[float] = []
    runs: list[float] = []
    extra = 0
    for i in range(n):
        text = base.replace(REF, f"    return a * {3.0 + i} + b\n") if failing else base
        text += f"# save {i} {time.time()}\n"
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text)
        t0 = time.time()
        os.replace(tmp, target)
        t, rec = stream.until(lambda r: r["type"] == "result" and r["probe"] == CELL)
        want = "failed" if failing else "ok"
        if rec["status"] != want:
            raise SystemExit(f"save {i}: {rec['status']} ({rec['reason']}), wanted {want}")
        lat.append(t - t0)
        runs.append(rec["seconds"])
        end = time.monotonic() + settle
        while time.monotonic() < end:
            try:
                _, more = stream.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            extra += more["type"] == "result" and more["probe"] == CELL
    target.write_text(base)
    return lat, runs, extra


def run(n: int, hogs: bool, settle: float = 1.0) -> str:
    """The figures as text lines."""
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-watch-saves-") as tmp:
        ws = Path(tmp)
        (ws / "k").mkdir()
        shutil.copy(KERNEL, ws / "k" / "axpy.py")
        procs = start_hogs() if hogs else []
        stream = Stream(ws)
        try:
            stream.until(lambda r: r["type"] == "ready")
            load = os.getloadavg()[0]
            sections = {}
            for failing in (False, True, False):
                lat, runs, extra = saves(stream, ws / "k" / "axpy.py", n, failing, settle)
                sections.setdefault("failing" if failing else "passing", []).append(
                    (lat, runs, extra))
        finally:
            stream.close()
            stop_hogs(procs)
    where = "beside two CPU hogs (setsid)" if hogs else "quiet"
    out.append(f"{CELL}, {where}, load average {load:.2f} at start, {os.cpu_count()} CPUs, "
               f"{n} saves per block (passing, failing, passing)")
    p50s = {}
    for kind, blocks in sections.items():
        lat = [x for b in blocks for x in b[0]]
        runs = [x for b in blocks for x in b[1]]
        extra = sum(b[2] for b in blocks)
        p50s[kind] = statistics.median(lat)
        out.append(f"  {kind:<8} save -> result p50 {pct(lat, 50):6.3f} s  p95 "
                   f"{pct(lat, 95):6.3f} s  (cell run p50 {pct(runs, 50):.3f} s; "
                   f"n={len(lat)}; second results for one save: {extra})")
    out.append(f"  failing / passing p50: {p50s['failing'] / p50s['passing']:.2f}x "
               "(target <= 1.5x)")
    return "\n".join(out)
