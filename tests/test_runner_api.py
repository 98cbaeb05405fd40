"""The runner's public API for front ends and the watcher: event subscriptions, a warm
discovery worker that drops changed modules, pending invalidations, cancelled results."""

from __future__ import annotations

import asyncio
import textwrap
from typing import cast

from laya_tui.core.events import Event, ProbeFinished, ProbeStarted
from laya_tui.core.protocol import Command
from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions


def _workspace(tmp_path):
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "helper_cells.py").write_text("CELLS = ['a', 'b']\n")
    (probes / "p.py").write_text(textwrap.dedent("""
        import time
        from laya_tui import probe, param
        from probes.helper_cells import CELLS

        @probe("fam", params=[param(c) for c in CELLS])
        def cell(ctx, value):
            ctx.log(subject=value)

        @probe("slow")
        def sleeper(ctx):
            time.sleep(30)
    """))
    (probes / "__init__.py").write_text("")
    return RunOptions(workspace=str(tmp_path), probes=(str(probes),),
                     cache_dir=str(tmp_path / "cache"), use_cache=False)


def test_listeners_subscribe_beside_each_other(tmp_path):
    first: list[Event] = []
    second: list[Event] = []
    runner = Runner(RunOptions(workspace=str(tmp_path), probes=()), on_event=first.append)
    assert runner.on_event == first.append  # one listener: called directly, no fan-out
    unsubscribe = runner.subscribe(second.append)
    runner.on_event(ProbeStarted("f/x", "f", 0.0))
    unsubscribe()
    runner.on_event(ProbeStarted("f/y", "f", 0.0))
    assert all(isinstance(e, ProbeStarted) for e in first + second)
    assert [e.probe_id for e in first if isinstance(e, ProbeStarted)] == ["f/x", "f/y"]
    assert [e.probe_id for e in second if isinstance(e, ProbeStarted)] == ["f/x"]
    unsubscribe()  # twice is harmless


def test_warm_discovery_reuses_its_worker_and_drops_changed_modules(tmp_path):
    config = _workspace(tmp_path)

    async def go():
        runner = Runner(config)
        try:
            first = await runner.discover(warm=True)
            assert runner._disc is not None and runner._disc.proc is not None
            pid = runner._disc.proc.pid
            helper = tmp_path / "probes" / "helper_cells.py"
            helper.write_text("CELLS = ['a', 'b', 'c']\n")
            stale = await runner.discover(warm=True)  # not invalidated: the old import
            await runner.invalidate({str(helper)})
            fresh = await runner.discover(warm=True)
            assert runner._disc is not None and runner._disc.proc is not None
            same_worker = runner._disc.proc.pid == pid
            await runner.close_discovery()
            gone = runner._disc is None
            return first, stale, fresh, same_worker, gone
        finally:
            await runner.close()

    first, stale, fresh, same_worker, gone = asyncio.run(go())
    assert not first.errors
    cells = [p["id"] for p in first.probes if p["family"] == "fam"]
    assert cells == ["fam/cell[a]", "fam/cell[b]"]
    assert [p["id"] for p in stale.probes] == [p["id"] for p in first.probes]
    assert "fam/cell[c]" in [p["id"] for p in fresh.probes]
    assert same_worker and gone


def test_pending_invalidations_and_a_cancelled_run(tmp_path):
    config = _workspace(tmp_path)
    finished = []

    async def go():
        def on_event(e: Event) -> None:
            if isinstance(e, ProbeFinished):
                finished.append(e.result["id"])

        runner = Runner(config, on_event=on_event)
        try:
            disc = await runner.discover()
            cell = next(p for p in disc.probes if p["id"] == "fam/cell[a]")
            slow = next(p for p in disc.probes if p["family"] == "slow")
            await runner.run_one(cell)  # the fam worker is warm now
            helper = str((tmp_path / "probes" / "helper_cells.py").resolve())
            await runner.invalidate({helper})
            pending = runner.pending_invalidations("fam")
            await runner.run_one(cell)  # applied right before this run
            after = runner.pending_invalidations("fam")
            task = asyncio.ensure_future(runner.run_one(slow))
            while "slow/sleeper" not in runner._running.values():
                await asyncio.sleep(0.05)
            assert runner.cancel("slow/sleeper")
            result = await task
            return pending, after, result
        finally:
            await runner.close()

    pending, after, result = asyncio.run(go())
    assert helper_in(pending) and after == frozenset()
    assert result is None  # superseded: no result at all
    assert finished == ["fam/cell[a]", "fam/cell[a]"]  # the cancelled run is not announced


def helper_in(files: frozenset[str]) -> bool:
    return any(f.endswith("helper_cells.py") for f in files)


def test_each_command_gets_its_named_reply_and_unknown_ops_are_ignored(tmp_path):
    from laya_tui.core.protocol import Op, Reply
    from laya_tui.core.worker_handle import WorkerHandle

    config = _workspace(tmp_path)

    async def go():
        handle = WorkerHandle("_protocol", config, str(tmp_path))
        try:
            await handle.start()  # waits for Reply.READY
            await handle.send(cast(Command, {"op": "no-such-op"}))  # an unknown op, on purpose
            await handle.send({"op": Op.DISCOVER, "paths": config.probes})
            discovered = await handle.next_event(timeout=60.0)
            await handle.send({"op": Op.INVALIDATE, "files": []})
            invalidated = await handle.next_event(timeout=60.0)
            await handle.send({"op": Op.EXIT})
            assert handle.proc is not None
            code = await asyncio.wait_for(handle.proc.wait(), 10.0)
            return discovered, invalidated, code
        finally:
            await handle.close()

    discovered, invalidated, code = asyncio.run(go())
    assert discovered["type"] == Reply.DISCOVERED and len(discovered["probes"]) == 3
    assert invalidated["type"] == Reply.INVALIDATED and invalidated["modules"] == []
    assert code == 0


def test_a_cancel_that_lands_as_a_line_arrives_is_not_dropped():
    """A Ctrl-C (the main task cancelled) just as the worker's "started" line arrives must end
    the wait. Python 3.11's ``asyncio.wait_for`` returned the line and dropped such a cancel
    (laya-tui then waited for the hanging probe's whole timeout: test_orphans flaked)."""
    from laya_tui.core.worker_handle import WorkerHandle

    async def one(steps: int) -> tuple[bool, str]:
        handle = WorkerHandle.__new__(WorkerHandle)  # only its reader is used here
        handle.reader = asyncio.StreamReader()
        task = asyncio.create_task(handle.next_event(30.0))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        handle.reader.feed_data(b'{"type": "started", "id": "x", "pid": 1}\n')
        for _ in range(steps):
            await asyncio.sleep(0)
        accepted = task.cancel()  # False when the event was already returned: fair
        try:
            await task
        except asyncio.CancelledError:
            return accepted, "cancelled"
        return accepted, "returned"

    outcomes = [asyncio.run(one(steps)) for steps in range(4)]
    assert any(accepted for accepted, _ in outcomes)  # the race was exercised
    for accepted, outcome in outcomes:
        assert outcome == ("cancelled" if accepted else "returned"), outcomes
