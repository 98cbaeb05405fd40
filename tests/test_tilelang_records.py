"""The protocols of laya_tui/families/tilelang/records.py say what the objects handed to the
TileLang cells have: ``ProbeContext`` what ``laya_tui.api.Context`` has, ``Example`` what a
factory's ``kernels.common.Example`` and a plain file's ``RefExample`` have (the same
members, the same parameters); and the typed dicts a dataclass becomes hold its fields."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from laya_tui.api import Context
from laya_tui.families.tilelang.pass_bisect import Bisection, Trial
from laya_tui.families.tilelang.records import (
    BisectionDict,
    Example,
    ProbeContext,
    TrialDict,
)
from laya_tui.families.tilelang.reference import ParamSpec, RefExample


def _members(proto: type) -> list[str]:
    """A protocol's own methods and properties."""
    return sorted(n for n, v in vars(proto).items()
                  if not n.startswith("_") and (callable(v) or isinstance(v, property)))


def _params(fn: Any) -> list[tuple[str, Any]]:
    """``(name, kind)`` of each parameter but ``self``."""
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()
            if p.name != "self"]


def _check(proto: type, impl: Any) -> None:
    members = _members(proto)
    assert members, proto
    for name in members:
        ours = inspect.getattr_static(proto, name)
        assert hasattr(impl, name), f"{type(impl).__name__} has no {name}"
        if isinstance(ours, property):
            continue  # an attribute or a property: read above
        theirs = getattr(impl, name)
        assert _params(ours) == _params(theirs), (proto.__name__, name)


def test_probe_context_is_what_the_api_context_has() -> None:
    ctx = Context("tilelang/x", "tilelang", lambda e: None, opts={"out": "o"},
                  add_dep=lambda p: None)
    _check(ProbeContext, ctx)


@pytest.mark.parametrize("which", ["reference", "factory"])
def test_example_is_what_both_references_have(which: str) -> None:
    if which == "reference":
        impl: Any = RefExample(params=[ParamSpec("A", (2,), "float32"),
                                       ParamSpec("B", (2,), "float32")],
                               n_inputs=1, ref=lambda a: a, seed=0)
    else:
        common = pytest.importorskip("kernels.common")
        impl = common.Example(args=(), kwargs={}, inputs={}, reference=lambda t: t,
                              outputs={}, atol={})
    _check(Example, impl)


@pytest.mark.parametrize(("typed", "cls"), [(BisectionDict, Bisection), (TrialDict, Trial)])
def test_a_detail_dict_holds_its_dataclass_fields(typed: Any, cls: type) -> None:
    fields = [f.name for f in dataclasses.fields(cls)]
    assert list(typed.__annotations__) == fields
    assert set(typed.__required_keys__) == set(fields)


def test_a_bisection_detail_is_what_asdict_gave() -> None:
    """``as_detail`` spells out what ``dataclasses.asdict`` gave before (report unchanged)."""
    b = Bisection(restored_by={"tl.x": True}, pass_name="X", verdict="v", builds=2,
                  seconds=1.5, budget={"builds": 14.0},
                  trials=[Trial(change={"tl.x": True}, passed=True, note="")])
    assert b.as_detail() == dataclasses.asdict(b)
    assert list(b.as_detail()) == list(dataclasses.asdict(b))


def test_cell_kwargs_are_the_probe_functions_parameters() -> None:
    """What discovery puts in a cell's kwargs is what ``run_cell`` (and, for agreement
    cells, ``run_agreement``) takes."""
    from laya_tui.families.tilelang.agree import run_agreement
    from laya_tui.families.tilelang.cell import run_cell
    from laya_tui.families.tilelang.records import CellKwargs

    lowering = [n for n, _ in _params(run_cell) if n != "ctx"]
    agreement = [n for n, _ in _params(run_agreement) if n != "ctx"]
    assert set(CellKwargs.__annotations__) == set(lowering)
    assert set(agreement) <= set(lowering)
