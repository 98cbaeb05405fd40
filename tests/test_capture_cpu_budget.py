"""Issue 41 item 3: a file's own run is bounded by its CPU time, not the machine's load."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SLOW = ROOT / "tests" / "fixtures" / "slow_main" / "slow_main.py"
PROBES = str(ROOT / "probes" / "tilelang_matrix.py")


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


def _hogs(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` busy loops, each in its own session (setsid), as another user's load."""
    return [subprocess.Popen(["setsid", sys.executable, "-c", "while True: pass"])
            for _ in range(n)]


def _end(hogs: list[subprocess.Popen[bytes]]) -> None:
    for h in hogs:
        try:
            os.killpg(h.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        h.wait()


def test_slow_main_is_examined_under_three_cpu_hogs(tl: Any) -> None:
    """Under three CPU hogs the slow file's run takes longer in wall time than its CPU
    budget (a wall budget would stop it), and it still builds its kernel, with the sizes
    its own run computes: the ones TileLang itself reports for the built kernel."""
    from laya_tui.families.tilelang import capture

    budget = 5.0
    capture._CACHE.clear()
    hogs = _hogs(3)
    try:
        time.sleep(0.5)
        c0, t0 = time.process_time(), time.perf_counter()
        cap = capture.capture_file(str(SLOW), seconds=budget)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    finally:
        _end(hogs)
        capture._CACHE.clear()
    assert cap.how_it_ended() == "the __main__ block ran", cap.how_it_ended()
    assert len(cap.builds) == 1  # scale_rows, built at the sizes its run computes
    kernel = tl.compile(cap.builds[0].func, out_idx=[1], target="c")
    assert [list(p.shape) for p in kernel.params] == [[8, 16], [8, 16]]
    assert cpu < budget < wall, (cpu, wall)


def test_a_run_stopped_by_its_cpu_budget_says_so(tl: Any, tmp_path: Path) -> None:
    """With a 1 s CPU budget the run stops in its host work: the cell says the run was
    stopped after 1 s of CPU before it built the kernel, and does not blame the file for
    arguments it does give."""
    kdir = tmp_path / "kernels"
    kdir.mkdir()
    shutil.copy(SLOW, kdir)
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAYA_TUI_TILELANG_CAPTURE_S": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--jobs", "1",
         "--probes", PROBES, "--kernels", str(kdir), "--only", "tilelang/slow_main[c,*",
         "--no-cache", "--json", str(out), "--out", str(tmp_path / "o"),
         "--cache-dir", str(tmp_path / "c")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    doc = json.loads(out.read_text())
    cells = [p for p in doc["probes"] if p["id"].startswith("tilelang/slow_main[c,")]
    assert len(cells) == 1, proc.stderr[-3000:]
    reason = cells[0]["reason"]
    assert cells[0]["status"] == "error"
    assert reason.startswith("the file's own run was stopped after 1 s of CPU"), reason
    assert "before it built scale_rows" in reason
    assert "arguments unknown" not in reason and "gives them" not in reason
