"""The modules a precision plan starts from and points at
(:mod:`laya_tui.families.explain.precision_plan`): the drift's ranking of modules past their
limit, and where each kept module's class defines ``forward`` and is defined (the finding's
site and the SARIF fix's location). Worker side."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from laya_tui.families.explain.drift import ROOT
from laya_tui.families.explain.records import DriftSummary, SiteDict

if TYPE_CHECKING:
    from torch.nn import Module

__all__ = ["class_sites", "module_sites", "ranking_from_drift"]


def ranking_from_drift(drift: DriftSummary | None) -> list[str]:
    """Module names past their limit, in the drift's execution order (its artifact's full
    list when there is one, else the thinned curve), the first past its limit first."""
    if not drift:
        return []
    calls: list[tuple[str, float, float]] = []
    path = drift.get("artifact")
    if path:
        import json

        try:
            with open(path, encoding="utf-8") as fh:
                calls = [(c["module"], c["max_diff"] or float("inf"), c["limit"] or 0.0)
                         for c in json.load(fh)["calls"]]
        except (OSError, ValueError, KeyError, TypeError):
            calls = []
    if not calls:
        calls = [(m, d if d is not None else float("inf"), lim or 0.0)
                 for m, d, lim in drift.get("curve") or []]
    out: list[str] = []
    past = drift.get("first_past_limit")
    first = None if past is None else past.get("module")
    if first and first != ROOT:
        out.append(first)
    for name, diff, lim in calls:
        if diff > lim and name not in out and name != ROOT:
            out.append(name)
    return out


def module_sites(model: Module, names: list[str]) -> dict[str, SiteDict]:
    """Where each kept module's class defines ``forward``: ``{name: {file, line, func}}``
    (modules whose source cannot be found are left out)."""
    return _sites(model, names, lambda module: type(module).forward)


def class_sites(model: Module, names: list[str]) -> dict[str, SiteDict]:
    """Where each kept module's class is defined (its ``class`` line): ``{name: {file, line,
    func}}``, the place a SARIF fix points at (modules whose source cannot be found are left
    out)."""
    return _sites(model, names, type)


def _sites(model: Module, names: list[str],
           source_of: Callable[[Module], Callable[..., object]]) -> dict[str, SiteDict]:
    """``{name: {file, line, func}}`` of ``source_of(module)`` for each named submodule."""
    import inspect

    out: dict[str, SiteDict] = {}
    for name in names:
        try:
            obj = source_of(model.get_submodule(name))
            file = inspect.getsourcefile(obj)
            line = inspect.getsourcelines(obj)[1]
        except (AttributeError, OSError, TypeError):
            continue
        if file:
            out[name] = {"file": file, "line": line, "func": obj.__qualname__}
    return out
