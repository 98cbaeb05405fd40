"""The app on the live runner: real worker subprocesses on a copy of the demo workspace."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

import pytest

from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions
from laya_tui.tui.factory import build_app
from tests._tui import DEMO_WS, SIZE, MessageLog

pytestmark = pytest.mark.asyncio


def live_config(tmp_path: Path, *only: str, timeout: float | None = None) -> RunOptions:
    ws = tmp_path / "ws"
    shutil.copytree(DEMO_WS, ws)
    return RunOptions(workspace=str(ws), probes=(str(ws / "probes"),), only=only,
                     use_cache=False, cache_dir=str(tmp_path / "cache"), timeout=timeout)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_crashing_probe_leaves_the_app_running(tmp_path):
    config = live_config(tmp_path, "faults/segfault", "faults/raises", "explain/*")
    app = build_app(config, export_path=str(tmp_path / "r.json"))
    async with app.run_test(size=SIZE) as pilot:
        await app.settled(timeout=120)
        st = app.model.probes["faults/segfault"]
        assert st.status == "crashed" and "SIGSEGV" in (st.reason or "")
        assert app.model.probes["explain/tiny_llama_forward"].status == "ok"
        app.main_screen.select_scope(("probe", "faults/segfault"))
        await pilot.press("r")  # crash it again, on purpose
        await app.settled(timeout=120)
        await pilot.pause()
        assert app.is_running
        assert [r.status for r in st.runs] == ["crashed", "crashed"]
        text = app.main_screen.detail.plain_text()
        assert "stderr tail" in text and "about to segfault" in text
        # the rest of the app still works after the crash
        await pilot.press("j")
        await pilot.pause()
        assert app.main_screen.scope == ("probe", "faults/raises")
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_quit_while_probes_run_ends_their_workers(tmp_path, monkeypatch):
    pidfile = tmp_path / "hang.pid"
    monkeypatch.setenv("LAYA_TEST_PIDFILE", str(pidfile))
    config = live_config(tmp_path, "faults/hangs", "explain/*", timeout=120)
    log = MessageLog()
    app = build_app(config)
    async with app.run_test(size=SIZE, message_hook=log) as pilot:
        for _ in range(600):
            if pidfile.exists() and pidfile.read_text():
                break
            await asyncio.sleep(0.05)
        pid = int(pidfile.read_text())
        assert alive(pid)
        await pilot.pause(0.2)
        assert app.model.probes["faults/hangs"].status == "running"
        runner = app.runner
        assert isinstance(runner, Runner)
        workers = [h.proc.pid for h in runner.workers.values() if h.proc is not None]
        await pilot.press("q")
        await pilot.pause()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (alive(pid) or any(alive(p) for p in workers)):
        await asyncio.sleep(0.05)
    assert not alive(pid)
    assert not any(alive(p) for p in workers)
    assert log.of("RunCompleted")[-1].cancelled


async def test_live_rerun_updates_rows_in_place(tmp_path):
    config = live_config(tmp_path, "explain/tiny_llama_forward")
    app = build_app(config)
    async with app.run_test(size=SIZE) as pilot:
        await app.settled(timeout=120)
        main = app.main_screen
        main.select_scope(("probe", "explain/tiny_llama_forward"))
        await pilot.pause()
        before = {k: app.model.rows[k] for k in main.table.keys()}
        assert len(before) == 8
        await pilot.press("r")
        await app.settled(timeout=120)
        await pilot.pause()
        after = {k: app.model.rows[k] for k in main.table.keys()}
        assert list(after) == list(before) and all(after[k] is before[k] for k in after)
        assert len(app.model.probes["explain/tiny_llama_forward"].runs) == 2


async def test_watch_reruns_the_edited_probe(tmp_path):
    config = live_config(tmp_path, "explain/*")
    log = MessageLog()
    app = build_app(config)
    async with app.run_test(size=SIZE, message_hook=log) as pilot:
        await app.settled(timeout=120)
        await pilot.press("w")
        for _ in range(400):
            if any(m.record.get("type") == "ready" for m in log.of("WatchChanged")):
                break
            await asyncio.sleep(0.05)
        assert app.watching
        probe_file = Path(config.workspace) / "probes" / "demo_explain.py"
        probe_file.write_text(probe_file.read_text().replace(
            'ctx.tolerance("logits", 0.0123, 0.05', 'ctx.tolerance("logits", 0.5, 0.05'))
        record = None
        for _ in range(600):
            recs = [m.record for m in log.of("WatchChanged")
                    if m.record.get("probe") == "explain/tiny_llama_forward"]
            if recs:
                record = recs[-1]
                break
            await asyncio.sleep(0.05)
        assert record is not None, "the watcher did not re-run the edited probe"
        assert record["status"] == "failed"
        assert record["changed"] and record["changed"][0]["subject"] == "logits"
        await app.settled(timeout=60)
        await pilot.pause()
        st = app.model.probes["explain/tiny_llama_forward"]
        # the save may reach the watcher as two batches: each completed run is a run
        assert st.status == "failed" and len(st.runs) >= 2
        assert st.runs[0].tolerances["logits"][0] == 0.0123
        assert st.runs[-1].tolerances["logits"][0] == 0.5
        row = next(r for r in st.rows if r.sig.get("subject") == "logits")
        assert row.failing and row.sig["value"] == 0.5
        await pilot.press("w")
        await pilot.pause()
        assert not app.watching
        await pilot.press("q")
