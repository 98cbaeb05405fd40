"""Placement share of a cell, as text: ``generated kernels 41 ops · outside 3 (6.8%)``.

Reads the ``placement`` field a region writes on its wall-time signal's detail
(``{on_device, fallback, share, unit, outside?, note?}``). No torch here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict, cast

from laya_tui.core.report_types import ResultDict

UNIT_KERNELS = "generated-kernel placement"
UNIT_DEVICE = "device placement"


class PlacementDict(TypedDict, total=False):
    """A region's ``placement`` field (its wall-time signal's detail), as the worker wrote it."""

    on_device: int
    fallback: int
    share: float | None
    unit: str
    outside: dict[str, int]  # outside the generated kernels, by why (extern, fallback...)
    note: str


def placement_text(p: object) -> str | None:
    """One line for a placement field, its note when nothing was counted, else None."""
    if not isinstance(p, Mapping):
        return None
    inside, outside = p.get("on_device"), p.get("fallback")
    if not isinstance(inside, int) or not isinstance(outside, int):
        note = p.get("note")
        return str(note) if note else None
    share = p.get("share")
    pct = f" ({share * 100:.3g}%)" if isinstance(share, (int, float)) else ""
    if p.get("unit") == UNIT_DEVICE:
        return f"on device {inside:,} ops · CPU {outside:,}{pct}"
    text = f"generated kernels {inside:,} ops · outside {outside:,}{pct}"
    split = p.get("outside")
    if isinstance(split, Mapping):
        parts = [f"{k} {n}" for k, n in split.items() if isinstance(n, int) and n]
        if parts:
            text += " [" + ", ".join(parts) + "]"
    return text


def probe_placements(probe: ResultDict) -> list[tuple[str, str, PlacementDict]]:
    """(region and phase, text, field) for each counted placement a cell's signals carry."""
    out: list[tuple[str, str, PlacementDict]] = []
    for sig in probe.get("signals") or ():
        d = sig.get("detail") if isinstance(sig, Mapping) else None
        if not isinstance(d, Mapping):
            continue
        p = d.get("placement")
        if isinstance(p, Mapping) and isinstance(p.get("on_device"), int):
            text = placement_text(p)
            where = " ".join(str(d[k]) for k in ("region", "phase") if d.get(k)) or "?"
            if text:
                out.append((where, text, cast(PlacementDict, p)))  # the worker's JSON
    return out


def placement_lines(probes: Sequence[ResultDict]) -> list[str]:
    """``  placement: explain/x[compile] [fwd cold]: generated kernels 4 ops · outside 1 (20%)``
    (one line per cell and distinct placement; the phases that share it are listed)."""
    lines = []
    for p in probes:
        by_text: dict[str, list[str]] = {}
        for where, text, _ in probe_placements(p):
            by_text.setdefault(text, []).append(where)
        lines += [f"  placement: {p.get('id')} [{', '.join(wheres)}]: {text}"
                  for text, wheres in by_text.items()]
    return lines


def placement_markdown(probes: Sequence[ResultDict]) -> list[str]:
    """A table of the counted placements (none: nothing)."""
    rows = [(p.get("id"), region, f) for p in probes for region, _, f in probe_placements(p)]
    if not rows:
        return []
    lines = ["**Placement** (ops in generated kernels vs outside them: extern, fallback, "
             "custom)", "", "| cell | region | inside | outside | share | unit |",
             "|---|---|---:|---:|---:|---|"]
    for pid, region, f in rows:
        share = f.get("share")
        pct = f"{share * 100:.3g}%" if isinstance(share, (int, float)) else "–"
        lines.append(f"| `{pid}` | {region} | {f['on_device']:,} | {f['fallback']:,} | "
                     f"{pct} | {f.get('unit') or ''} |")
    return lines + [""]
