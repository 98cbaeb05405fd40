"""Watch engine: real file edits in a temporary workspace, real probes in warm workers."""

from __future__ import annotations

import asyncio
import os

import pytest

from laya_tui.report.document import validate_report
from tests._watch_util import WatchHarness, kernel_source, make_workspace, save, signal_value

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(180)]


def results(records):
    return [r for r in records if r["type"] == "result"]


async def test_first_run_then_one_kernel_edit_reruns_only_its_cells(tmp_path):
    ws = make_workspace(tmp_path)
    async with WatchHarness(ws) as h:
        first = results(h.seen)
        assert {r["probe"] for r in first} == {"kern/cell[foo]", "kern/cell[bar]",
                                               "other/lonely"}
        assert all(r["trigger"] is None and r["status"] == "ok" for r in first)
        assert h.ready["probes"] == 3 and (h.ready["seconds"] or 0) > 0

        save(ws / "kernels" / "foo.py", kernel_source(3.0, 3, name="FOO"))
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "kern/cell[foo]"
        assert rec["trigger"] == os.path.join("kernels", "foo.py")
        assert rec["status"] == "ok" and rec["previous_status"] == "ok"
        assert [s["subject"] for s in rec["new"]] == ["op2"]
        assert rec["gone"] == []
        assert rec["changed"] == [{"kind": "tolerance", "subject": "scale", "reason": None,
                                   "fields": {"value": [1.0, 3.0]}}]
        assert rec["latency"] is not None and rec["latency"] < 30
        # Nothing else re-ran: not bar's cell (same package), not the other family.
        assert results(await h.quiet(1.5)) == []

        # A shared module re-runs every cell that imports it, and only those.
        save(ws / "kernels" / "common.py", "BASE = 2.0\n")
        got = [await h.until(lambda r: r["type"] == "result") for _ in range(2)]
        got += results(await h.quiet(1.0))
        assert sorted(str(r["probe"]) for r in got) == ["kern/cell[bar]", "kern/cell[foo]"]
        assert {signal_value(r, "scale") for r in got} == {6.0, 4.0}

        # A helper outside the probe/kernel folders is watched through the dependency set.
        save(ws / "helpers" / "util.py", 'GREETING = "bonjour"\n')
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "other/lonely"
        assert [s["reason"] for s in rec["new"]] == ["bonjour"]
        assert [s["reason"] for s in rec["gone"]] == ["hello"]
        validate_report(h.watcher.report())


async def test_unrelated_edits_rerun_nothing(tmp_path):
    ws = make_workspace(tmp_path)
    async with WatchHarness(ws) as h:
        (ws / "kernels" / "notes.txt").write_text("a note\n")
        save(ws / "helpers" / "unused.py", "X = 2\n")
        (ws / "README.md").write_text("# readme\n")
        (ws / "kernels" / "__pycache__").mkdir(exist_ok=True)
        (ws / "kernels" / "__pycache__" / "foo.cpython-311.pyc").write_bytes(b"\0" * 16)
        (ws / "kernels" / "foo.py.swp").write_text("swap")
        (ws / ".git").mkdir()
        (ws / ".git" / "index").write_text("x")
        assert await h.quiet(1.5) == []


async def test_syntax_error_is_a_diagnostic_then_the_fix_recovers(tmp_path):
    ws = make_workspace(tmp_path)
    async with WatchHarness(ws) as h:
        foo = ws / "kernels" / "foo.py"
        save(foo, "from .common import BASE\n\nSCALE = (1.0 *\nCOUNT = 2\n")
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "kern/cell[foo]" and rec["status"] == "failed"
        assert rec["diagnostic"] is not None
        assert rec["diagnostic"]["file"] == str(foo.resolve())
        assert rec["diagnostic"]["line"] in (3, 4)
        assert rec["reason"] is not None
        assert "SyntaxError" in rec["reason"] and f"{foo.resolve()}:" in rec["reason"]
        assert rec["new"] == rec["gone"] == rec["changed"] == []

        # A probe file saved mid-edit: its cell becomes the diagnostic, keeps its place.
        other = ws / "probes" / "other.py"
        good = other.read_text()
        save(other, good.replace("def lonely(ctx):", "def lonely(ctx)"))
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "other/lonely" and rec["status"] == "failed"
        assert rec["diagnostic"] is not None
        assert rec["diagnostic"]["file"] == str(other.resolve())
        assert rec["diagnostic"]["line"] == 6
        assert "other/lonely" in {p["id"] for p in h.watcher.report()["probes"]}

        # The watcher kept going: both recover on the next good save, diffed against the
        # last good result (not against the diagnostic).
        save(foo, kernel_source(5.0, 2, name="FOO"))
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "kern/cell[foo]" and rec["status"] == "ok"
        assert rec["previous_status"] == "failed" and rec["diagnostic"] is None
        assert rec["new"] == [] and rec["gone"] == []
        assert rec["changed"][0]["fields"] == {"value": [1.0, 5.0]}
        save(other, good)
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "other/lonely" and rec["status"] == "ok"
        report = h.watcher.report()
        validate_report(report)
        assert report["errors"] == []
        assert {p["status"] for p in report["probes"]} == {"ok"}


async def test_new_kernel_appears_and_deleted_one_goes(tmp_path):
    ws = make_workspace(tmp_path)
    async with WatchHarness(ws) as h:
        baz = ws / "kernels" / "baz.py"
        save(baz, kernel_source(7.0, 1, name="BAZ"))
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "kern/cell[baz]" and rec["status"] == "ok"
        assert rec["previous_status"] is None
        assert rec["trigger"] == os.path.join("kernels", "baz.py")
        assert signal_value(rec, "scale") == 7.0
        assert "kern/cell[baz]" in {p["id"] for p in h.watcher.report()["probes"]}

        baz.unlink()
        rec = await h.until(lambda r: r["type"] in ("removed", "result"))
        assert rec["type"] == "removed" and rec["probe"] == "kern/cell[baz]"
        assert rec["previous_status"] == "ok" and len(rec["gone"]) == 2
        assert results(await h.quiet(1.0)) == []
        ids = {p["id"] for p in h.watcher.report()["probes"]}
        assert ids == {"kern/cell[foo]", "kern/cell[bar]", "other/lonely"}

        # Deleting a kernel its package __init__ imports: its cell goes, and the cells
        # that import through that package re-run and say why they no longer import.
        (ws / "kernels" / "bar.py").unlink()
        got = [await h.until(lambda r: r["type"] in ("removed", "result")) for _ in range(2)]
        by_type = {r["type"]: r for r in got}
        assert by_type["removed"]["probe"] == "kern/cell[bar]"
        assert by_type["result"]["probe"] == "kern/cell[foo]"
        assert by_type["result"]["status"] == "failed"
        assert by_type["result"]["reason"] is not None
        assert "bar" in by_type["result"]["reason"]
        save(ws / "kernels" / "__init__.py", "from .foo import FOO_SCALE\n")
        rec = await h.until(lambda r: r["type"] == "result" and r["status"] == "ok")
        assert rec["probe"] == "kern/cell[foo]"


async def test_two_quick_saves_yield_one_result_for_the_latest_content(tmp_path):
    ws = make_workspace(tmp_path)
    async with WatchHarness(ws) as h:
        foo = ws / "kernels" / "foo.py"
        # Within the debounce: one batch.
        save(foo, kernel_source(4.0, 2, name="FOO"))
        save(foo, kernel_source(5.0, 2, name="FOO"))
        rec = await h.until(lambda r: r["type"] == "result")
        assert signal_value(rec, "scale") == 5.0
        assert results(await h.quiet(1.0)) == []

        # Past the debounce, while the first run is in flight: the newer change cancels
        # it, and only the latest content is reported.
        save(foo, kernel_source(6.0, 2, delay=3.0, name="FOO"))
        await asyncio.sleep(0.8)
        save(foo, kernel_source(8.0, 2, name="FOO"))
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "kern/cell[foo]" and rec["status"] == "ok"
        assert signal_value(rec, "scale") == 8.0
        assert rec["changed"][0]["fields"] == {"value": [5.0, 8.0]}
        assert results(await h.quiet(1.5)) == []


async def test_a_crashed_worker_restarts_for_the_next_change(tmp_path):
    ws = make_workspace(tmp_path)
    async with WatchHarness(ws) as h:
        foo = ws / "kernels" / "foo.py"
        save(foo, kernel_source(1.0, 2, crash=True, name="FOO"))
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "kern/cell[foo]" and rec["status"] == "crashed"
        assert rec["reason"] is not None
        assert "SIGKILL" in rec["reason"]
        save(foo, kernel_source(2.0, 2, name="FOO"))
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["status"] == "ok" and rec["previous_status"] == "crashed"
        assert signal_value(rec, "scale") == 2.0


async def test_new_probe_file_broken_then_fixed_then_deleted(tmp_path):
    ws = make_workspace(tmp_path)
    async with WatchHarness(ws) as h:
        extra = ws / "probes" / "extra.py"
        save(extra, "from laya_tui import probe\n\n@probe(family='other')\ndef extra(ctx)\n")
        rec = await h.until(lambda r: r["type"] == "diagnostic")
        assert rec["diagnostic"] is not None
        assert rec["probe"] is None and rec["diagnostic"]["file"] == str(extra.resolve())
        assert rec["reason"] is not None
        assert rec["diagnostic"]["line"] == 4 and "SyntaxError" in rec["reason"]
        assert h.watcher.report()["errors"][0]["line"] == 4

        save(extra, "from laya_tui import probe\n\n@probe(family='other')\ndef extra(ctx):\n"
                    "    ctx.signal('log', reason='extra')\n")
        rec = await h.until(lambda r: r["type"] == "result")
        assert rec["probe"] == "other/extra" and rec["status"] == "ok"
        assert h.watcher.report()["errors"] == []

        extra.unlink()
        rec = await h.until(lambda r: r["type"] == "removed")
        assert rec["probe"] == "other/extra"
        assert "other/extra" not in {p["id"] for p in h.watcher.report()["probes"]}

