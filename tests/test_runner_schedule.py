"""Scheduling by recorded durations: longest cells first headless, shortest first watched."""

from __future__ import annotations

import asyncio
import textwrap
from typing import cast

from laya_tui.core.events import Event, ProbeFinished
from laya_tui.core.report_types import CellSpec, ResultDict
from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions
from laya_tui.core.shard import read_cache_durations, record_durations
from tests._signals import partial_result


def _cells(fam: str, *names: str) -> list[CellSpec]:
    # partial cells: the schedule reads only their id and family
    return [cast(CellSpec, {"id": f"{fam}/{n}", "family": fam}) for n in names]


def _durations(seconds: dict[str, float]) -> list[ResultDict]:
    # partial results: the durations record keeps only their id and seconds
    return [partial_result({"id": pid, "seconds": s}) for pid, s in seconds.items()]


def _runner(tmp_path, order: str = "longest-first") -> Runner:
    cfg = RunOptions(workspace=str(tmp_path), probes=(), cache_dir=str(tmp_path / "c"),
                    order=order)
    return Runner(cfg)


def test_durations_survive_and_order_cells_longest_first(tmp_path):
    seconds = {"a/x": 1.0, "a/y": 30.0, "b/z": 200.0, "env/p": 0.1}
    record_durations(tmp_path / "c", _durations(seconds))
    assert read_cache_durations(tmp_path / "c")["b/z"] == 200.0
    runner = _runner(tmp_path)
    by_family = {"a": _cells("a", "x", "new", "y"), "b": _cells("b", "z"),
                 "env": _cells("env", "p")}
    families = runner._schedule(by_family)
    assert families == ["env", "b", "a"]  # env first, then the longest family
    # its quickest cell first (every family shows a result early), then longest first
    assert [p["id"] for p in by_family["a"]] == ["a/x", "a/y", "a/new"]


def test_watched_dashboard_runs_shortest_first(tmp_path):
    record_durations(tmp_path / "c", _durations({"a/x": 1.0, "a/y": 30.0}))
    by_family = {"a": _cells("a", "y", "x")}
    _runner(tmp_path, "shortest-first")._schedule(by_family)
    assert [p["id"] for p in by_family["a"]] == ["a/x", "a/y"]


def test_no_durations_keep_discovery_order(tmp_path):
    by_family = {"b": _cells("b", "2", "1"), "a": _cells("a", "1")}
    assert _runner(tmp_path)._schedule(by_family) == ["b", "a"]
    assert [p["id"] for p in by_family["b"]] == ["b/2", "b/1"]


def test_every_family_shows_its_first_result_before_any_second(tmp_path):
    """One job slot, three families of three cells: in a real run the first three results
    are one per family (issue 45: the last family's first result no longer waits for the
    other families to finish)."""
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "p.py").write_text(textwrap.dedent("""
        from laya_tui import probe, param

        @probe("fa", params=[param(str(i), i=i) for i in range(3)])
        def a(ctx, i):
            ctx.log(f"cell {i}")

        @probe("fb", params=[param(str(i), i=i) for i in range(3)])
        def b(ctx, i):
            ctx.log(f"cell {i}")

        @probe("fc", params=[param(str(i), i=i) for i in range(3)])
        def c(ctx, i):
            ctx.log(f"cell {i}")
    """))
    finished: list[str] = []
    config = RunOptions(workspace=str(tmp_path), probes=(str(probes),), jobs=1,
                        cache_dir=str(tmp_path / "cache"), use_cache=False)

    async def go():
        def on_event(e: Event) -> None:
            if isinstance(e, ProbeFinished):
                finished.append(e.result["id"])

        runner = Runner(config, on_event=on_event)
        try:
            found = await runner.discover()
            assert not found.errors, found.errors
            return await runner.run(found.probes)
        finally:
            await runner.close()

    results = asyncio.run(go())
    assert [r["status"] for r in results] == ["ok"] * 9, results[0].get("reason")
    assert sorted(f.split("/")[0] for f in finished[:3]) == ["fa", "fb", "fc"]
    assert len(set(finished)) == 9
