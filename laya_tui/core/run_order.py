"""The order a run takes: families and the cells inside each, by recorded durations."""

from __future__ import annotations

from collections.abc import Mapping

from laya_tui.core.report_types import CellSpec


def run_order(by_family: dict[str, list[CellSpec]], known: Mapping[str, float], *,
              first_cell: bool = True) -> list[str]:
    """Order families and, in place, the cells inside each, by recorded durations ``known``.

    ``env`` first; then the longest families first (``jobs`` run at once, so the longest one
    starts at once); inside a family its quickest cell first and then the longest first
    when ``first_cell`` (``Runner.run`` runs every family's first cell before any second
    one), else shortest first (``order = "shortest-first"``). Cells and families never run
    before have no duration: they keep discovery order, after the timed ones.
    """
    for cells in by_family.values():
        timed = [p for p in cells if p["id"] in known]
        new = [p for p in cells if p["id"] not in known]
        timed.sort(key=lambda p: known[p["id"]], reverse=first_cell)
        cells[:] = timed[-1:] + timed[:-1] + new if first_cell else timed + new
    names = list(by_family)
    total = {f: sum(known.get(p["id"], 0.0) for p in cells) for f, cells in by_family.items()}
    fam = {k: cells[0]["family"] if cells else k for k, cells in by_family.items()}
    return sorted(names, key=lambda f: (fam[f] != "env", -total[f], names.index(f)))
