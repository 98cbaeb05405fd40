"""Save -> result through ``laya-tui --headless --watch`` (issue 45), driven by bench_watch.

A temporary workspace holds ``k/axpy.py`` (a serial jit kernel TileLang lowers for ``c``
and builds and runs there; its ``cuda`` cell is built, not run). Every save re-runs both
cells; for each save the JSON lines are read until both cells' results arrived, and the
lines that follow within ``--settle`` seconds are counted too, so a second result for one
save shows (follow-up records of other types are counted by type).

Blocks of N saves each: a *passing* edit (a comment) saved by write-then-rename (the way
many editors save) and by a plain write; a *failing maths* edit (the reference's maths: the
``c`` cell runs and its comparison fails, the ``cuda`` cell still builds); a *failing build*
edit (the kernel body names an undefined value: both cells fail to lower). ``--hogs``
starts two CPU hogs in their own sessions (``setsid``) first and kills them after.
TileLang's disk cache is off, so each save pays a real lower+build.
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
C_CELL = "tilelang/axpy[c,fp32]"
CUDA_CELL = "tilelang/axpy[cuda,fp32]"
CELLS = (C_CELL, CUDA_CELL)
CELL = C_CELL  # the cell bench_watch names
REF = "    return a * 2.0 + b\n"
BODY = "* T.cast(alpha, dtype)"


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


def edited(base: str, edit: str, i: int) -> str:
    """The file's text for save ``i`` of an ``edit`` block (each save's text differs)."""
    if edit == "maths":
        base = base.replace(REF, f"    return a * {3.0 + i} + b\n")
    elif edit == "build":
        base = base.replace(BODY, f"* T.cast(alpha, dtype) * undefined_{i}")
    return base + f"# save {i} {time.time()}\n"


#: What each cell's verdict is after an edit: (c cell, cuda cell).
WANT = {"comment": ("ok", "ok"), "maths": ("failed", "ok"), "build": ("failed", "failed")}


def saves(stream: Stream, target: Path, n: int, edit: str, how: str, settle: float
          ) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, int],
                     dict[str, int]]:
    """Over n saves: per cell, the save -> result seconds and the cell's run seconds; per
    cell, results beyond the first for one save; the other records by type."""
    base = target.read_text()
    lat: dict[str, list[float]] = {c: [] for c in CELLS}
    runs: dict[str, list[float]] = {c: [] for c in CELLS}
    extra = dict.fromkeys(CELLS, 0)
    others: dict[str, int] = {}
    for i in range(n):
        text = edited(base, edit, i)
        t0 = time.time()
        if how == "rename":  # an editor's write to a temporary file, then a rename
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text(text)
            t0 = time.time()
            os.replace(tmp, target)
        else:  # a plain write in place
            target.write_text(text)
        seen: set[str] = set()
        while seen != set(CELLS):
            t, rec = stream.until(lambda r: r["type"] == "result" and r["probe"] in CELLS)
            cell = rec["probe"]
            if cell in seen:
                extra[cell] += 1
                continue
            want = WANT[edit][CELLS.index(cell)]
            if rec["status"] != want:
                raise SystemExit(f"{edit} save {i}, {cell}: {rec['status']} "
                                 f"({rec['reason']}), wanted {want}")
            seen.add(cell)
            lat[cell].append(t - t0)
            runs[cell].append(rec["seconds"])
        end = time.monotonic() + settle
        while time.monotonic() < end:
            try:
                _, more = stream.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            if more["type"] == "result" and more["probe"] in CELLS:
                extra[more["probe"]] += 1
            else:
                others[more["type"]] = others.get(more["type"], 0) + 1
    target.write_text(base)  # back to the original: wait for both cells' re-runs
    back: set[str] = set()
    while back != set(CELLS):
        back.add(stream.until(lambda r: r["type"] == "result" and r["probe"] in CELLS)[1][
            "probe"])
    time.sleep(settle)
    while not stream.lines.empty():
        stream.lines.get()
    return lat, runs, extra, others


BLOCKS = (("comment", "rename"), ("comment", "write"), ("maths", "rename"),
          ("build", "rename"))


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
            got = {}
            for edit, how in BLOCKS:
                got[(edit, how)] = saves(stream, ws / "k" / "axpy.py", n, edit, how, settle)
            load_end = os.getloadavg()[0]
        finally:
            stream.close()
            stop_hogs(procs)
    where = "beside two CPU hogs (setsid)" if hogs else "quiet"
    out.append(f"k/axpy.py, {where}, load average {load:.2f} at start, {load_end:.2f} at end,"
               f" {os.cpu_count()} CPUs, {n} saves per block")
    p50: dict[tuple[str, str, str], float] = {}
    for (edit, how), (lat, runs, extra, others) in got.items():
        for cell in CELLS:
            p50[(edit, how, cell)] = statistics.median(lat[cell])
            out.append(f"  {edit:<7} {how:<6} {cell:<26} save -> result p50 "
                       f"{pct(lat[cell], 50):6.3f} s  p95 {pct(lat[cell], 95):6.3f} s  (cell run"
                       f" p50 {pct(runs[cell], 50):.3f} s; second results for one save: "
                       f"{extra[cell]})")
        if others:
            out.append(f"    other records: {dict(sorted(others.items()))}")
    c_ratio = p50[("maths", "rename", C_CELL)] / p50[("comment", "rename", C_CELL)]
    cuda_ratio = p50[("build", "rename", CUDA_CELL)] / p50[("comment", "rename", CUDA_CELL)]
    c_build = p50[("build", "rename", C_CELL)] / p50[("comment", "rename", C_CELL)]
    out.append(f"  failing / passing p50: c (maths) {c_ratio:.2f}x, c (build) {c_build:.2f}x, "
               f"cuda (build) {cuda_ratio:.2f}x (target <= 1.5x)")
    return "\n".join(out)
