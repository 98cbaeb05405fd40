"""The typed dicts of core/report_types.py say what report/schema.json says: the same
fields, the same required ones (a field added to one and not the other fails here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import SCHEMA_DEFS, SCHEMA_PATHS

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "laya_tui" / "report" /
                     "schema.json").read_text())


@pytest.mark.parametrize("name", sorted(SCHEMA_DEFS))
def test_each_typed_dict_mirrors_its_schema_definition(name: str) -> None:
    typed: Any = SCHEMA_DEFS[name]  # a TypedDict class: mypy has no type for "any TypedDict"
    spec = SCHEMA["$defs"][name]
    assert set(typed.__annotations__) == set(spec["properties"]), name
    assert set(typed.__required_keys__) == set(spec.get("required", ())), name


@pytest.mark.parametrize("path", sorted(SCHEMA_PATHS))
def test_each_nested_typed_dict_mirrors_its_schema_object(path: str) -> None:
    """Objects inside a probe or the report (a result's error and budget, a file error)."""
    typed: Any = SCHEMA_PATHS[path]  # a TypedDict class
    spec = SCHEMA
    for key in path.split("/") if path else ():  # "": the report itself
        spec = spec[key]
    assert set(typed.__annotations__) == set(spec["properties"]), path
    assert set(typed.__required_keys__) == set(spec.get("required", ())), path


def test_a_real_result_fits_its_typed_dict() -> None:
    from laya_tui.core.results import make_result
    from laya_tui.core.signals import STATUSES

    res = make_result({"id": "f/p", "family": "f", "params": {}, "file": "p.py"}, "ok", None,
                      seconds=0.1, deps=[], signals=[{"kind": "log", "probe": "f/p"}])
    fields = SCHEMA_DEFS["probe"].__annotations__
    assert set(res) <= set(fields) and res["status"] in STATUSES


def test_a_watch_record_has_every_key_its_typed_dict_names() -> None:
    from laya_tui.watch.record_types import WatchRecord
    from laya_tui.watch.records import new_record

    rec = new_record("result", "fam/p", "probes/p.py")
    required = WatchRecord.__required_keys__
    assert set(rec) == set(required)


def test_a_discovered_cell_has_the_keys_of_its_typed_dict(tmp_path) -> None:
    """The runner's own discovery (in a worker) of a real probe file."""
    import asyncio

    from laya_tui.core.report_types import CellSpec
    from laya_tui.core.runner import Runner
    from laya_tui.core.settings import RunOptions

    (tmp_path / "probes").mkdir()
    (tmp_path / "probes" / "p.py").write_text(
        "from laya_tui import param, probe\n\n\n@probe('fam', params=[param('a', x=1)])\n"
        "def cell(ctx, x):\n    return None\n")
    runner = Runner(RunOptions(workspace=str(tmp_path), probes=(str(tmp_path / "probes"),),
                               cache_dir=str(tmp_path / "cache"), use_cache=False))

    async def go():
        try:
            return await runner.discover()
        finally:
            await runner.close()

    disc = asyncio.run(go())
    assert [c["id"] for c in disc.probes] == ["fam/cell[a]"]
    for cell in disc.probes:
        assert set(CellSpec.__required_keys__) <= set(cell) <= set(CellSpec.__annotations__)
