"""Scheduling by recorded durations: longest cells first headless, shortest first watched."""

from __future__ import annotations

from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions
from laya_tui.core.shard import read_cache_durations, record_durations


def _cells(fam: str, *names: str) -> list[dict]:
    return [{"id": f"{fam}/{n}", "family": fam} for n in names]


def _runner(tmp_path, order: str = "longest-first") -> Runner:
    cfg = RunOptions(workspace=str(tmp_path), probes=[], cache_dir=str(tmp_path / "c"),
                    order=order)
    return Runner(cfg)


def test_durations_survive_and_order_cells_longest_first(tmp_path):
    seconds = {"a/x": 1.0, "a/y": 30.0, "b/z": 200.0, "env/p": 0.1}
    record_durations(tmp_path / "c", [{"id": pid, "seconds": s} for pid, s in seconds.items()])
    assert read_cache_durations(tmp_path / "c")["b/z"] == 200.0
    runner = _runner(tmp_path)
    by_family = {"a": _cells("a", "x", "new", "y"), "b": _cells("b", "z"),
                 "env": _cells("env", "p")}
    families = runner._schedule(by_family)
    assert families == ["env", "b", "a"]  # env first, then the longest family
    assert [p["id"] for p in by_family["a"]] == ["a/y", "a/x", "a/new"]


def test_watched_dashboard_runs_shortest_first(tmp_path):
    record_durations(tmp_path / "c", [{"id": "a/x", "seconds": 1.0},
                                      {"id": "a/y", "seconds": 30.0}])
    by_family = {"a": _cells("a", "y", "x")}
    _runner(tmp_path, "shortest-first")._schedule(by_family)
    assert [p["id"] for p in by_family["a"]] == ["a/x", "a/y"]


def test_no_durations_keep_discovery_order(tmp_path):
    by_family = {"b": _cells("b", "2", "1"), "a": _cells("a", "1")}
    assert _runner(tmp_path)._schedule(by_family) == ["b", "a"]
    assert [p["id"] for p in by_family["b"]] == ["b/2", "b/1"]
