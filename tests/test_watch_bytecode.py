"""Watch mode with bytecode written (Python's default; some CI machines set
PYTHONDONTWRITEBYTECODE=1, which hid this): a save that keeps the file's size within the
same second must still re-run the new code, not a stale ``.pyc`` Python trusts."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import py_compile
from pathlib import Path

import pytest

from laya_tui.core.files import drop_bytecode
from tests._watch_util import WatchHarness, kernel_source, make_workspace, save, signal_value


def test_drop_bytecode_removes_the_cached_pyc_only(tmp_path: Path) -> None:
    src = tmp_path / "mod.py"
    src.write_text("X = 1\n")
    pyc = Path(importlib.util.cache_from_source(str(src)))
    py_compile.compile(str(src), cfile=str(pyc))
    other = pyc.parent / "mod.cpython-399.pyc"  # another interpreter's (an --env's)
    other.write_bytes(pyc.read_bytes())
    keep = pyc.parent / "model.cpython-311.pyc"  # another module's
    keep.write_bytes(b"")
    drop_bytecode(str(src))
    assert not pyc.exists() and not other.exists() and keep.exists() and src.is_file()
    drop_bytecode(str(src))  # nothing left: no error
    drop_bytecode(str(tmp_path / "notes.txt"))  # not Python source: nothing to do


@pytest.mark.asyncio
@pytest.mark.timeout(180)
async def test_a_same_size_save_within_a_second_reruns_the_new_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # the workers write .pyc
    ws = make_workspace(tmp_path)
    foo = ws / "kernels" / "foo.py"
    async with WatchHarness(ws) as h:
        assert Path(importlib.util.cache_from_source(str(foo))).is_file()  # it was cached
        old, new = kernel_source(3.0, 2, name="FOO"), kernel_source(4.0, 2, name="FOO")
        assert len(old) == len(new)
        save(foo, old)
        rec = await h.until(lambda r: r["type"] == "result")
        assert signal_value(rec, "scale") == 3.0
        stamp = os.stat(foo).st_mtime
        save(foo, new)
        os.utime(foo, (stamp, stamp))  # the same second, the same size: only the code moved
        rec = await h.until(lambda r: r["type"] == "result")
        assert signal_value(rec, "scale") == 4.0


@pytest.mark.asyncio
@pytest.mark.timeout(180)
async def test_a_save_that_cancels_a_run_reruns_the_new_code_in_the_fresh_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cancelled run's worker is replaced, and a fresh worker gets no invalidation of
    its own: the runner drops the ``.pyc`` as the change arrives."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    ws = make_workspace(tmp_path)
    foo = ws / "kernels" / "foo.py"
    async with WatchHarness(ws) as h:
        slow, quick = (kernel_source(6.0, 2, delay=3.0, name="FOO"),
                       kernel_source(8.0, 2, name="FOO"))
        assert len(slow) == len(quick)
        save(foo, slow)
        stamp = os.stat(foo).st_mtime
        await asyncio.sleep(0.8)  # its run is in flight, its module imported (and cached)
        save(foo, quick)
        os.utime(foo, (stamp, stamp))
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "kern/cell[foo]" and rec["status"] == "ok"
        assert signal_value(rec, "scale") == 8.0
