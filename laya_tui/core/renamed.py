"""What an earlier laya-tui wrote differently, read as this run writes it when an earlier
report is a baseline or a ``--durations`` file (standard library only): cell ids, and the
failing stage a lowering reason now starts with.

A TileLang cell id's dtype part is its kernel's data dtype (``cast[c,bf16-fp8e4m3]``);
reports written before labelled some kernels by their first tensor parameter
(``cast[c,int32]``) or by the input side alone (``widen[c,fp16]`` for fp16 in, fp32 out).
Such an old id, absent from this run, is mapped to the one id of this run that differs from
it in the dtype part only (same family, kernel, target, specialization and ``@env``), when
exactly one old and one new id share all of that; anything ambiguous stays unmapped (a
probe gone and a new one, as before). Subjects of the old cell's signals
(``cast[c,int32]/out0``) follow their cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

from laya_tui.core.cellid import parse
from laya_tui.core.results import SignalKey

#: what a baseline's index holds per cell, per signal and per lowering cell (kept as given)
_Status = TypeVar("_Status")
_Agg = TypeVar("_Agg")
_Cell = TypeVar("_Cell")

#: families whose cell ids carry a dtype part that changed meaning (``target,dtype[,spec]``)
FAMILIES = ("tilelang",)


def _slot(probe_id: str) -> tuple[str, ...] | None:
    """What must match for two ids to be one cell: all but the dtype part."""
    cid = parse(probe_id)
    if cid.family not in FAMILIES or len(cid.parts) not in (2, 3):
        return None
    return (cid.family, cid.name, cid.env or "", cid.parts[0], *cid.parts[2:])


def renamed_ids(old_ids: Iterable[str], new_ids: Iterable[str]) -> dict[str, str]:
    """``{old id: new id}`` for the cells this run names differently (see the module
    docstring); empty when every old id is still in use."""
    old, new = set(old_ids), set(new_ids)
    gone: dict[tuple[str, ...], list[str]] = {}
    for pid in old - new:
        slot = _slot(pid)
        if slot is not None:
            gone.setdefault(slot, []).append(pid)
    if not gone:
        return {}
    came: dict[tuple[str, ...], list[str]] = {}
    for pid in new - old:
        slot = _slot(pid)
        if slot in gone:
            came.setdefault(slot, []).append(pid)
    return {gone[s][0]: ids[0] for s, ids in came.items() if len(ids) == 1 and len(gone[s]) == 1}


def renamed_subject(subject: str, old_id: str, new_id: str) -> str:
    """``cast[c,int32]/out0`` -> ``cast[c,bf16-fp8e4m3]/out0``; other subjects unchanged."""
    old_leaf, new_leaf = parse(old_id).leaf, parse(new_id).leaf
    if subject == old_leaf or subject.startswith(old_leaf + "/"):
        return new_leaf + subject[len(old_leaf):]
    return subject


def with_renamed(durations: Mapping[str, float], ids: Iterable[str]) -> dict[str, float]:
    """``durations`` (an earlier report's seconds by id, in run order) with old ids under
    this run's."""
    renames = renamed_ids(durations, ids)
    return {renames.get(k, k): v for k, v in durations.items()}  # in their order (run order)


def renamed_index(renames: dict[str, str], status: dict[str, _Status],
                  agg: dict[SignalKey, _Agg], cells: dict[tuple[str, str], _Cell]
                  ) -> tuple[dict[str, _Status], dict[SignalKey, _Agg],
                             dict[tuple[str, str], _Cell]]:
    """A baseline's index (statuses by id, signals by (id, kind, subject, reason), lowering
    cells by (id, subject)) with its old ids and their signals' subjects renamed."""
    def pid(p: str) -> str:
        return renames.get(p, p)

    def subject(p: str, s: str) -> str:
        return renamed_subject(s, p, renames[p]) if p in renames else s

    return ({pid(p): v for p, v in status.items()},
            {(pid(p), k, subject(p, s), r): v for (p, k, s, r), v in agg.items()},
            {(pid(p), subject(p, s)): v for (p, s), v in cells.items()})


#: the failing stage a TileLang lowering reason starts with (``build failed (g++): ...``)
STAGE_PREFIX = re.compile(r"^(?:import|trace|lower|build|run|compare) failed(?: \([^)]*\))?: ")


def same_lowering_reason(old: str, new: str) -> bool:
    """Whether a lowering cell's first diagnostic is unchanged; an earlier reason that does
    not name the failing stage compares with the new one's text after the stage."""
    if old == new:
        return True
    return not STAGE_PREFIX.match(old) and STAGE_PREFIX.sub("", new, count=1) == old
