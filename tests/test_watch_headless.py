"""``laya-tui --headless --watch``: a real subprocess, real edits, JSON lines on stdout."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import cast

import pytest

from laya_tui.core.report_types import CellSpec, ResultDict
from laya_tui.report.document import validate_report
from tests._util import REPO, run_cli
from tests._watch_util import kernel_source, make_workspace, save

pytestmark = pytest.mark.timeout(180)


class Proc:
    """The CLI in watch mode, its stdout lines in a queue."""

    def __init__(self, ws: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "laya_tui", "--workspace", str(ws), "--headless",
             "--watch", "--no-cache", "--debounce-ms", "30",
             # the workspace's own families only: its kernels/ folder also brings in the
             # built-in env family, which this test does not watch
             "--only", "kern/*", "--only", "other/*", *extra],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def record(self, timeout: float = 60.0) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"no line within {timeout} s; stderr: "
                                 f"{self.proc.stderr.read()[-2000:] if self.proc.stderr else ''}"
                                 ) from None
        return json.loads(line)

    def until(self, pred, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            rec = self.record(max(0.1, deadline - time.monotonic()))
            if pred(rec):
                return rec


def worker_pids(ws: Path) -> list[int]:
    """Live laya_tui.worker processes started for this workspace."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().split()[2]
        except OSError:
            continue
        if b"laya_tui.worker" in cmd and str(ws).encode() in cmd and state != "Z":
            pids.append(int(entry))
    return pids


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_headless_stream_one_line_per_change_and_clean_stop(tmp_path, stop):
    ws = make_workspace(tmp_path)
    report = tmp_path / "report.json"
    p = Proc(ws, "--json", str(report))
    try:
        first = [p.record() for _ in range(4)]
        assert [r["type"] for r in first].count("result") == 3
        assert first[-1]["type"] == "ready" and first[-1]["probes"] == 3
        assert all("result" not in r for r in first)  # the stream is slim

        save(ws / "kernels" / "foo.py", kernel_source(2.5, 1, name="FOO"))
        rec = p.record()
        assert {"probe", "trigger", "seconds", "status", "new", "gone", "changed"} <= set(rec)
        assert rec["type"] == "result" and rec["probe"] == "kern/cell[foo]"
        assert rec["trigger"] == os.path.join("kernels", "foo.py")
        assert rec["status"] == "ok" and rec["seconds"] >= 0
        assert [s["subject"] for s in rec["gone"]] == ["op1"]
        assert rec["changed"][0]["fields"] == {"value": [1.0, 2.5]}
        # The report file follows the latest results.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            doc = json.loads(report.read_text()) if report.exists() else {"probes": []}
            foo = [x for x in doc["probes"] if x["id"] == "kern/cell[foo]"]
            if foo and foo[0]["signals"][0].get("value") == 2.5:
                break
            time.sleep(0.1)
        validate_report(doc)
        assert foo and foo[0]["signals"][0]["value"] == 2.5
        assert worker_pids(ws), "warm workers are alive while watching"
    finally:
        p.proc.send_signal(stop)
        code = p.proc.wait(timeout=30)
    assert code == 0
    assert p.proc.stderr is not None and "watch: stopped" in p.proc.stderr.read()
    deadline = time.monotonic() + 5
    while worker_pids(ws) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker_pids(ws) == []


def test_watch_stdout_report_is_a_usage_error(tmp_path):
    ws = make_workspace(tmp_path)
    proc = run_cli("--workspace", str(ws), "--headless", "--watch", "--json", "-", timeout=60)
    assert proc.returncode == 2
    assert "give --json a file path" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_watch_report_applies_the_run_gate_settings(tmp_path):
    """--json PATH under --watch carries the same gates as a one-shot run (--fail-on...)."""
    from laya_tui.core.settings import RunOptions
    from laya_tui.report.gates import GateSettings
    from laya_tui.watch.engine import Watcher

    probes = tmp_path / "probes"
    probes.mkdir()
    config = RunOptions(workspace=str(tmp_path), probes=(str(probes),))
    result: ResultDict = {
        "id": "fam/x", "family": "fam", "status": "ok", "reason": None, "seconds": 0.1,
        "cached": False, "deps": [], "log_tail": "",
        "signals": [{"kind": "log", "probe": "fam/x", "reason": "note"}]}
    watcher = Watcher(config, gate_settings=GateSettings(fail_on=("log",)))
    # a partial cell: the report reads its id and family
    watcher.probes = {"fam/x": cast(CellSpec, {"id": "fam/x", "family": "fam"})}
    watcher.results["fam/x"] = result
    report = watcher.report()
    validate_report(report)
    gate = next(g for g in report["gates"] if g["name"] == "fail-on:log")
    assert gate["passed"] is False
    assert report["summary"]["passed"] is False
