"""One save, one re-run: ``--headless --watch`` JSON lines for a plain write, an editor's
write-then-rename and a save of unchanged content (issue 45)."""

from __future__ import annotations

import os
import queue
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests._watch_util import kernel_source, make_workspace, save
from tests.test_watch_headless import Proc

pytestmark = pytest.mark.timeout(180)


def drain(p: Proc, quiet: float = 2.0, timeout: float = 60.0) -> list[dict]:
    """Every record until none came for ``quiet`` seconds (at least one expected)."""
    got = [p.record(timeout)]
    while True:
        try:
            got.append(__import__("json").loads(p.lines.get(timeout=quiet)))
        except queue.Empty:
            return got


def results_per_cell(records: list[dict]) -> Counter[str]:
    return Counter(r["probe"] for r in records if r["type"] == "result")


@pytest.mark.parametrize("atomic", [False, True], ids=["plain-write", "write-then-rename"])
def test_one_save_one_result_per_cell_and_unchanged_save_none(tmp_path: Path,
                                                              atomic: bool) -> None:
    ws = make_workspace(tmp_path)
    p = Proc(ws)
    try:
        p.until(lambda r: r["type"] == "ready", timeout=120)
        foo = ws / "kernels" / "foo.py"
        for value in (2.5, 3.5):
            save(foo, kernel_source(value, 1, name="FOO"), atomic=atomic)
            got = drain(p)
            per_cell = results_per_cell(got)
            assert per_cell["kern/cell[foo]"] == 1, got
            assert set(per_cell.values()) == {1}, got  # no cell reports a save twice
            rec = next(r for r in got if r["probe"] == "kern/cell[foo]")
            assert rec["changed"][0]["fields"] == {"value": [1.0 if value == 2.5 else 2.5,
                                                            value]}
        # The same content saved again (an editor's :w with no edit) re-runs nothing.
        before = foo.stat().st_mtime_ns
        time.sleep(0.05)
        save(foo, kernel_source(3.5, 1, name="FOO"), atomic=atomic)
        assert foo.stat().st_mtime_ns != before  # the file really was written
        with pytest.raises(queue.Empty):
            p.lines.get(timeout=3.0)
        # ... and the next real edit still does.
        save(foo, kernel_source(4.5, 1, name="FOO"), atomic=atomic)
        assert results_per_cell(drain(p))["kern/cell[foo]"] == 1
    finally:
        p.proc.send_signal(signal.SIGTERM)
        assert p.proc.wait(timeout=30) == 0
    assert os.path.exists(ws)
