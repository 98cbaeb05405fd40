"""Adapts :class:`laya_tui.watch.engine.Watcher` (a callback engine) to the app's watch hook (an
async iterator of change records). Re-runs go through the app's runner, so their events
reach the dashboard like any other run; records only add the what-changed summary."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from laya_tui.watch.engine import Watcher
from laya_tui.watch.records import Record

if TYPE_CHECKING:
    from laya_tui.core.report_types import CellSpec
    from laya_tui.core.runner_like import RunnerLike
    from laya_tui.tui.app import LayaApp


async def watch_factory(app: LayaApp, runner: RunnerLike, probes: list[CellSpec]
                        ) -> AsyncIterator[Record]:
    """Run a Watcher on the app's live runner, starting from the results already shown."""
    config = runner.config
    if config is None:
        raise RuntimeError("watch mode needs live probes, not a recorded report")
    await app.drained()  # the results the watcher starts from include the last events
    queue: asyncio.Queue[Record] = asyncio.Queue()
    watcher = Watcher(config, runner,  # type: ignore[arg-type]
                      on_record=queue.put_nowait, initial=app.model.results(),
                      ignore_paths=[app.export_path], gate_settings=app.gate_settings)
    task = asyncio.ensure_future(watcher.run())
    try:
        while True:
            get = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({get, task}, return_when=asyncio.FIRST_COMPLETED)
            if get in done:
                yield get.result()
                continue
            get.cancel()
            while not queue.empty():
                yield queue.get_nowait()
            task.result()  # the watcher ended: raise what ended it
            return
    finally:
        watcher.stop()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
            await asyncio.wait_for(task, 10.0)
