"""The typed dicts of core/report_types.py say what report/schema.json says: the same
fields, the same required ones (a field added to one and not the other fails here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from laya_tui.core.report_types import SCHEMA_DEFS

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "laya_tui" / "report" /
                     "schema.json").read_text())


@pytest.mark.parametrize("name", sorted(SCHEMA_DEFS))
def test_each_typed_dict_mirrors_its_schema_definition(name: str) -> None:
    typed = SCHEMA_DEFS[name]
    spec = SCHEMA["$defs"][name]
    assert set(typed.__annotations__) == set(spec["properties"]), name
    assert set(typed.__required_keys__) == set(spec.get("required", ())), name


def test_a_real_result_fits_its_typed_dict() -> None:
    from laya_tui.core.results import make_result
    from laya_tui.core.signals import STATUSES

    res = make_result({"id": "f/p", "family": "f", "params": {}, "file": "p.py"}, "ok", None,
                      seconds=0.1, deps=[], signals=[{"kind": "log", "probe": "f/p"}])
    fields = SCHEMA_DEFS["probe"].__annotations__
    assert set(res) <= set(fields) and res["status"] in STATUSES
