"""Watch-mode test helpers: a small real workspace and an async harness around Watcher."""

from __future__ import annotations

import asyncio
import os
import textwrap
import time
from pathlib import Path
from typing import Any

from laya_tui.core.settings import RunOptions
from laya_tui.watch.engine import Watcher
from laya_tui.watch.record_types import WatchRecord

KERN_PROBE = '''
import importlib
import os
import signal
import time

from laya_tui import param, probe

KDIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")


def _cells():
    return [param(f[:-3], mod=f[:-3]) for f in sorted(os.listdir(KDIR))
            if f.endswith(".py") and not f.startswith("_") and f != "common.py"]


@probe(family="kern", params=_cells)
def cell(ctx, mod):
    m = importlib.import_module(f"kernels.{mod}")
    time.sleep(getattr(m, "DELAY", 0))
    if getattr(m, "CRASH", False):
        os.kill(os.getpid(), signal.SIGKILL)
    ctx.tolerance("scale", m.SCALE, 10.0)
    for i in range(m.COUNT):
        ctx.signal("fallback", subject=f"op{i}", count=1, reason="dtype-not-fp16")
'''

OTHER_PROBE = '''
from laya_tui import probe


@probe(family="other")
def lonely(ctx):
    from helpers.util import GREETING

    ctx.signal("log", reason=GREETING)
'''


def kernel_source(scale: float = 1.0, count: int = 2, *, delay: float = 0.0,
                  crash: bool = False, name: str = "FOO") -> str:
    """A fake kernel module: the constants the kern probe turns into signals."""
    return textwrap.dedent(f'''
        from .common import BASE

        SCALE = {scale!r} * BASE
        {name}_SCALE = SCALE
        COUNT = {count}
        DELAY = {delay!r}
        CRASH = {crash!r}
    ''')


def make_workspace(root: Path) -> Path:
    """A workspace shaped like the real one: a kernels package whose __init__ imports
    every kernel, a probe with one cell per kernel file, and an unrelated probe family."""
    ws = root / "ws"
    for d in ("probes", "kernels", "helpers"):
        (ws / d).mkdir(parents=True)
    (ws / "kernels" / "__init__.py").write_text(
        "from .bar import BAR_SCALE\nfrom .foo import FOO_SCALE\n")
    (ws / "kernels" / "common.py").write_text("BASE = 1.0\n")
    (ws / "kernels" / "foo.py").write_text(kernel_source(1.0, 2, name="FOO"))
    (ws / "kernels" / "bar.py").write_text(kernel_source(2.0, 1, name="BAR"))
    (ws / "probes" / "kern.py").write_text(KERN_PROBE)
    (ws / "probes" / "other.py").write_text(OTHER_PROBE)
    (ws / "helpers" / "util.py").write_text('GREETING = "hello"\n')
    (ws / "helpers" / "unused.py").write_text("X = 1\n")
    return ws


def save(path: Path, text: str, *, atomic: bool = True) -> None:
    """Save like an editor: write a temp file beside it and rename it over the target."""
    if not atomic:
        path.write_text(text)
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def config_for(ws: Path, **kw: Any) -> RunOptions:
    """A RunOptions for the test workspace (no cache unless asked)."""
    kw.setdefault("use_cache", False)
    kw.setdefault("cache_dir", str(ws.parent / "cache"))
    return RunOptions(workspace=str(ws), probes=(str(ws / "probes"),),
                     kernels=(str(ws / "kernels"),), **kw)


def signal_value(record: WatchRecord, subject: str) -> Any:
    """The ``value`` of the signal with ``subject`` in a result record's full result."""
    for sig in record["result"]["signals"]:
        if sig.get("subject") == subject:
            return sig.get("value")
    return None


class WatchHarness:
    """Run a Watcher in the background; await its records with timeouts."""

    def __init__(self, ws: Path, debounce_ms: int = 30, **kw: Any) -> None:
        self.ws = ws
        self.records: asyncio.Queue[WatchRecord] = asyncio.Queue()
        self.seen: list[WatchRecord] = []
        self.watcher = Watcher(config_for(ws, **kw), on_record=self._on, debounce_ms=debounce_ms)
        self.task: asyncio.Task[None] | None = None

    def _on(self, record: WatchRecord) -> None:
        self.seen.append(record)
        self.records.put_nowait(record)

    async def __aenter__(self) -> WatchHarness:
        self.task = asyncio.create_task(self.watcher.run())
        self.ready = await self.until(lambda r: r["type"] == "ready", timeout=90)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.watcher.stop()
        assert self.task is not None
        await asyncio.wait_for(self.task, 30)

    async def next(self, timeout: float = 30.0) -> WatchRecord:
        """The next record; fails when the watcher ended or nothing came in time."""
        assert self.task is not None
        get = asyncio.ensure_future(self.records.get())
        done, _ = await asyncio.wait({get, self.task}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        if get in done:
            return get.result()
        get.cancel()
        if self.task in done:
            self.task.result()  # raises the watcher's exception, if any
            raise AssertionError("the watcher ended")
        raise AssertionError(f"no record within {timeout} s; seen: {self.seen[-5:]}")

    async def until(self, pred: Any, timeout: float = 30.0) -> WatchRecord:
        """Skip records until one matches ``pred``."""
        deadline = time.monotonic() + timeout
        while True:
            rec = await self.next(max(0.1, deadline - time.monotonic()))
            if pred(rec):
                return rec

    async def quiet(self, seconds: float = 1.0) -> list[WatchRecord]:
        """Every record that arrives within ``seconds``."""
        got: list[WatchRecord] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                got.append(await asyncio.wait_for(self.records.get(), left))
            except TimeoutError:
                break
        return got
