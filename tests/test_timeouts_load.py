"""Timeouts under load, end to end (docs/architecture.md, 'Timeouts: work, not load').

Everything runs pinned to one core beside two CPU hogs pinned there too, each hog in its
own session (Linux's scheduler shares CPU between sessions, so a hog in ours would only
slow the test runner): the probes get about a third of that core. On it:

* a compiler-like probe (CPU work in four child processes, 0.5 s each: the kind of work
  the slowest demo cell does in Inductor and the C++ compiler) needs ~2.2 s of CPU, under
  its 3 s timeout, so it would fit on a quiet core, but takes ~3x that in wall time here:
  it ends ``ok``, well past its timeout;
* a ``time.sleep`` hang still ends as ``timeout`` at its timeout;
* a busy infinite loop still ends as ``timeout`` within its documented bound (its CPU
  budget: timeout x 1 core here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from laya_tui.core.watchdog import CEILING_FACTOR, WALL_FACTOR, Bounds
from laya_tui.report.document import validate_report
from tests._util import REPO

pytestmark = pytest.mark.skipif(
    not (os.path.isdir("/proc/self/task") and hasattr(os, "sched_setaffinity")),
    reason="needs Linux (/proc, CPU affinity)")

PROBES = '''
import subprocess, sys, time
from laya_tui.api import probe

BURN = "import time\\nend = time.process_time() + 0.5\\nwhile time.process_time() < end: pass\\n"


@probe(family="load", timeout=3)
def compiler_like(ctx):
    for i in range(4):
        ctx.step(f"compile {i}")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-S", "-c", BURN], check=True)
        ctx.timing(f"compile {i}", time.perf_counter() - t0)


@probe(family="sleeper", timeout=2)
def hangs(ctx):
    ctx.timing("setup", 0.0)
    ctx.step("waiting on nothing")
    time.sleep(600)


@probe(family="spinner", timeout=2)
def spins(ctx):
    while True:
        pass
'''


def _pin(core: int):
    return lambda: os.sched_setaffinity(0, {core})


@pytest.fixture(scope="module")
def loaded_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("load")
    ws = tmp / "ws"
    (ws / "probes").mkdir(parents=True)
    (ws / "probes" / "load.py").write_text(PROBES)
    core = max(os.sched_getaffinity(0))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             start_new_session=True, preexec_fn=_pin(core))
            for _ in range(2)]
    out = tmp / "report.json"
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "laya_tui", "--workspace", str(ws), "--headless",
             "--no-cache", "--jobs", "1", "--json", str(out)],
            cwd=ws, capture_output=True, text=True, timeout=180, preexec_fn=_pin(core),
            stdin=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(REPO)))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert out.is_file(), proc.stderr
    report = json.loads(out.read_text())
    validate_report(report)  # budget is in the schema
    return proc, {p["id"]: p for p in report["probes"]}


def test_a_working_probe_on_a_loaded_core_passes_its_timeout(loaded_run):
    _, probes = loaded_run
    p = probes["load/compiler_like"]
    assert p["status"] == "ok", p["reason"]
    budget = p["budget"]
    # it ran past its 3 s timeout in wall time, on ~2 s of CPU: the old rule ended it
    assert p["seconds"] > 3.0 and budget["timeout"] == 3
    assert 1.8 <= budget["cpu_seconds"] < budget["cpu_budget"] == 3.0
    assert budget["longest_idle"] < budget["idle_window"] and "ended_by" not in budget
    # its own time: the wall time less its waits for the core the hogs took
    assert budget["own_seconds"] < 0.6 * budget["seconds"]


def test_a_sleeping_probe_still_ends_at_its_timeout(loaded_run):
    _, probes = loaded_run
    p = probes["sleeper/hangs"]
    b = Bounds.of(2, cores=1)
    assert p["status"] == "timeout" and p["budget"]["ended_by"] == "idle"
    assert 2.0 <= p["seconds"] <= 2 + b.idle + 2 * b.interval + 1.0  # + the kill
    assert p["reason"].startswith("timed out after 2 s: no progress for ")
    assert "in step waiting on nothing" in p["reason"]
    assert "last signal: timing setup 0.0 s" in p["reason"]


def test_a_busy_loop_still_ends_within_its_bound(loaded_run):
    proc, probes = loaded_run
    p = probes["spinner/spins"]
    # CPU budget: 2 s of CPU at a third of the core, ~6 s of wall time
    assert p["status"] == "timeout" and p["budget"]["ended_by"] == "cpu", p["reason"]
    assert p["seconds"] <= 2 * WALL_FACTOR + 1.0
    assert "past its budget of 2 s (2 s timeout x 1 core)" in p["reason"]
    assert proc.returncode == 1 and "timeout: spinner/spins: timed out after" in proc.stderr


def test_the_bounds_are_in_the_docs():
    doc = (REPO / "docs" / "architecture.md").read_text()
    readme = (REPO / "docs" / "guide.md").read_text()  # the README's user guide
    for text in (doc, readme):
        assert f"{CEILING_FACTOR:g} x" in text and f"{WALL_FACTOR:g} x" in text
    assert "Timeouts: work, not load" in doc

