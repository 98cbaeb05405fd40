"""Workers die with laya-tui: no orphans after SIGINT, SIGTERM or SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests._util import copy_workspace


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie awaiting its reaper counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_worker_dies_with_laya_tui(tmp_path, sig):
    ws = copy_workspace("mixed", tmp_path)
    pidfile = tmp_path / "worker.pid"
    env = dict(os.environ, LAYA_TEST_PIDFILE=str(pidfile))
    proc = subprocess.Popen(
        [sys.executable, "-m", "laya_tui", "--workspace", str(ws), "--headless",
         "--only", "faults/hangs", "--timeout", "120", "--no-cache"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not pidfile.exists() or not pidfile.read_text():
        assert time.time() < deadline, "the hanging probe never started"
        time.sleep(0.05)
    worker = int(pidfile.read_text())
    assert _alive(worker)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    deadline = time.time() + 10
    while _alive(worker) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(worker), f"worker {worker} survived {sig.name}"
