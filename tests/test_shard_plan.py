"""``--shard K/N`` planning: disjoint, covering, deterministic, balanced, families kept whole."""

from __future__ import annotations

import json
import random
from typing import Any, cast

import pytest

from laya_tui.core.errors import UsageError
from laya_tui.core.report_types import CellSpec
from laya_tui.core.shard import (
    TARGET,
    make_plan,
    parse_shard,
    read_cache_durations,
    record_durations,
    select_shard,
)
from laya_tui.report.saved import durations_from_report
from tests._signals import partial_result


def demo_like_cells() -> list[tuple[str, str]]:
    """Ids and families shaped like the demo workspace (110 cells in 5 families)."""
    cells = [(f"env/library[{n}]", "env") for n in "abcdefghij"]
    cells += [(f"aoti/decision[{d}]", "aoti") for d in ("fp32", "bf16", "bf16,cuda")]
    for m in ("tiny_llama", "tiny_modernbert"):
        for mode in ("eager", "compile", "padded", "decode"):
            for dt in ("fp32", "bf16"):
                cells.append((f"explain/{m}[{dt},{mode}]", "explain"))
    cells += [(f"mlx/encoder[{i}]", "mlx") for i in range(6)]
    for k in ("add_ln", "attn", "gemm", "geglu", "rope"):
        for t in ("c", "cuda"):
            for dt in ("fp32", "fp16", "bf16"):
                for sp in ("cpu", "gpu"):
                    cells.append((f"tilelang/{k}[{t},{dt},{sp}]", "tilelang"))
    return cells


def seeded_durations(cells: list[tuple[str, str]], seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    scale = {"env": 0.2, "aoti": 40.0, "explain": 8.0, "mlx": 3.0, "tilelang": 4.0}
    return {pid: round(scale[fam] * rng.uniform(0.3, 1.7), 3) for pid, fam in cells}


@pytest.mark.parametrize("text,expected", [("1/1", (1, 1)), ("2/3", (2, 3)),
                                           (" 7 / 7 ", (7, 7))])
def test_parse_shard(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "3", "a/b", "-1/3", "1/3/4", ""])
def test_parse_shard_rejects(text):
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


@pytest.mark.parametrize("timed", [False, True])
@pytest.mark.parametrize("n", range(1, 8))
def test_parts_are_disjoint_and_cover(n, timed):
    cells = demo_like_cells()
    durations = seeded_durations(cells, n) if timed else None
    plan = make_plan(cells, n, durations)
    assert len(plan.parts) == n
    flat = [pid for part in plan.parts for pid in part]
    assert len(flat) == len(set(flat)) == len(cells)
    assert set(flat) == {pid for pid, _ in cells}
    # select_shard agrees with the plan, part by part
    # partial cells: the shard split reads only their id and family
    probes = [cast(CellSpec, {"id": pid, "family": fam}) for pid, fam in cells]
    chosen = [select_shard(probes, (k, n), durations, "report")[0] for k in range(1, n + 1)]
    assert sorted(p["id"] for part in chosen for p in part) == sorted(flat)


def test_tiny_selections_cover_every_cell():
    cells = [("a/x", "a"), ("a/y", "a"), ("b/z", "b")]
    for n in range(1, 8):
        plan = make_plan(cells, n)
        assert sorted(pid for p in plan.parts for pid in p) == ["a/x", "a/y", "b/z"]
        assert sum(1 for p in plan.parts if p) == min(n, 3)


def test_plan_depends_only_on_ids_families_n_and_durations():
    cells = demo_like_cells()
    durations = seeded_durations(cells, 1)
    plan = make_plan(cells, 3, durations)
    shuffled = list(cells)
    random.Random(5).shuffle(shuffled)
    again = make_plan(shuffled, 3, dict(durations))
    assert again.parts == plan.parts and again.digest == plan.digest
    assert make_plan(cells, 3, None).digest != plan.digest
    assert make_plan(cells, 4, durations).digest != plan.digest


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n", range(2, 8))
def test_balance_on_recorded_durations(n, seed):
    cells = demo_like_cells()
    durations = seeded_durations(cells, seed)
    plan = make_plan(cells, n, durations)
    loads = [sum(durations[c] for c in part) for part in plan.parts]
    mean = sum(loads) / n
    biggest = max(durations.values())
    if biggest <= mean:  # the cells allow an even split
        assert max(loads) <= TARGET * mean, (loads, mean)
    assert plan.balance == "report"
    # the estimates add a start-up for each extra part a family runs in
    assert sum(plan.estimates) >= sum(loads) - 1e-6


def test_one_long_cell_sets_the_floor():
    cells = [("aoti/big", "aoti")] + [(f"t/c{i}", "t") for i in range(20)]
    durations = {"aoti/big": 100.0, **{f"t/c{i}": 1.0 for i in range(20)}}
    plan = make_plan(cells, 3, durations)
    loads = sorted(sum(durations[c] for c in part) for part in plan.parts)
    assert loads == [10.0, 10.0, 100.0]


def test_families_stay_whole_when_the_split_is_even_anyway():
    cells = [(f"{fam}/c{i}", fam) for fam in "abcd" for i in range(5)]
    for n in (2, 4):
        plan = make_plan(cells, n)
        assert sorted(len(p) for p in plan.parts) == [20 // n] * n
        part_of = plan.part_of()
        for fam in "abcd":
            assert len({part_of[pid] for pid, f in cells if f == fam}) == 1, fam


def test_a_big_family_is_split_rather_than_doubling_a_part():
    cells = [(f"tilelang/k{i:02d}", "tilelang") for i in range(20)]
    cells += [(f"env/e{i}", "env") for i in range(2)] + [(f"mlx/m{i}", "mlx") for i in range(2)]
    plan = make_plan(cells, 3)
    loads = [len(p) for p in plan.parts]
    assert max(loads) <= TARGET * sum(loads) / 3
    assert sum(1 for p in plan.parts if any(pid.startswith("tilelang/") for pid in p)) >= 2
    # the small families, which fit, are not cut
    for fam in ("env", "mlx"):
        assert sum(1 for p in plan.parts if any(pid.startswith(fam + "/") for pid in p)) == 1


def test_a_split_family_pays_its_start_up_again():
    # family t: the first recorded cell paid a 30 s start-up, the others take 2 s each
    cells = [(f"t/c{i:02d}", "t") for i in range(10)] + [(f"u/c{i}", "u") for i in range(4)]
    durations = {"t/c00": 32.0, **{f"t/c{i:02d}": 2.0 for i in range(1, 10)},
                 **{f"u/c{i}": 10.0 for i in range(4)}}
    plan = make_plan(cells, 2, durations)
    # cutting t would cost a second 30 s start-up: t stays whole (50 s) beside u (40 s)
    assert sorted(len(p) for p in plan.parts) == [4, 10]
    assert sorted(plan.estimates) == [40.0, 50.0]
    cheap = dict(durations, **{"t/c00": 2.0})  # no start-up: now t is cut to even the parts
    plan = make_plan(cells, 2, cheap)
    assert sorted(plan.estimates) == [29.0, 31.0] or max(plan.estimates) <= 30.0 + 1e-9


def test_missing_durations_are_estimated_from_the_family():
    cells = [(f"a/c{i}", "a") for i in range(4)] + [(f"b/c{i}", "b") for i in range(4)]
    durations = {"a/c0": 10.0, "b/c0": 1.0}  # a's cells cost ~10, b's ~1
    plan = make_plan(cells, 2, durations)
    assert plan.balance == "report"
    assert sum(plan.estimates) == pytest.approx(44.0)


def test_durations_from_report_and_the_cache_record(tmp_path):
    report: dict[str, Any] = {"schema": "laya-tui.report/2", "environment": {}, "summary": {},
              "gates": [],
              "probes": [{"id": "a/x", "status": "ok", "seconds": 2.5, "signals": []},
                         {"id": "a/y", "status": "timeout", "seconds": 60, "signals": []}]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert durations_from_report(str(path)) == {"a/x": 2.5, "a/y": 60.0}
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(UsageError, match="not a laya-tui report"):
        durations_from_report(str(tmp_path / "bad.json"))
    with pytest.raises(UsageError, match="does not exist"):
        durations_from_report(str(tmp_path / "missing.json"))
    cache = tmp_path / "cache"
    assert read_cache_durations(cache) == {}
    record_durations(cache, [partial_result(p) for p in report["probes"]])
    record_durations(cache, [partial_result({"id": "b/z", "seconds": 1.0})])
    assert read_cache_durations(cache) == {"a/x": 2.5, "a/y": 60.0, "b/z": 1.0}
