"""``--shard K/N``: the K-th of N deterministic, disjoint parts of the selected cells.

The N parts cover every selected cell exactly once. They are balanced by estimated cell
durations: those of ``--durations REPORT.json`` (an earlier report), else the durations the
last unsharded run recorded in the result cache folder, else one unit per cell. Each part
runs one warm worker per family it holds, and the first cell of a worker pays its start-up
(imports, first build): estimated per family as how much longer the family's first recorded
cell ran than its median, and charged once per part the family lands in. Families start
whole; the largest family chunk is then halved (contiguous in id order) and the parts are
packed again (longest chunk first onto the part it lengthens least, then moves and swaps
off the longest part). Of the splits tried, the one with the fewest cuts whose longest part
is within :data:`SLACK` of the best is kept, so a family is cut only where that pays for
the extra start-up; the largest part ends within :data:`TARGET` times the mean where the
cells allow it. A cell longer than the mean gets a part of its own.

The plan depends only on the selected ids, their families, N and the durations: never on
the machine, the clock or the discovery order. Machines that must agree on a split (a CI
matrix, ssh hosts) should be given the same ``--durations`` file; each shard records a
digest of its plan, and ``laya-tui merge`` fails its ``shards`` gate when the parts of a
split do not fit together. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from laya_tui.core.errors import UsageError
from laya_tui.core.report_types import CellSpec, ResultDict, ShardDict

#: The largest part may run this many times the mean before a family is split.
TARGET = 1.25
#: A split with more cuts is kept only when its longest part is shorter by more than this.
SLACK = 0.02
#: Stop halving chunks once the largest is below this fraction of a part (and TARGET holds).
FINE = 0.05
MAX_SPLITS = 400
#: Stop halving after this many cuts in a row that did not shorten the longest part.
PATIENCE = 12
#: File in the result cache folder where unsharded runs record each cell's seconds.
DURATIONS_FILE = "durations.json"
_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``; anything else (``0/3``, ``4/3``, ``x``) is a UsageError."""
    m = _SHARD_RE.match(str(text))
    if not m:
        raise UsageError(f"--shard expects K/N (e.g. 2/3), got {text!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"--shard {text}: K must be between 1 and N, and N at least 1")
    return k, n


def is_seconds(value: object) -> bool:
    """A finite number of seconds >= 0 (``NaN``/``Infinity`` in a file are not durations)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)


def read_cache_durations(cache_root: str | os.PathLike[str]) -> dict[str, float]:
    """The durations recorded by earlier unsharded runs (``{}`` when none or unreadable)."""
    try:
        data = json.loads((Path(cache_root) / DURATIONS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(k, str) and is_seconds(v)}


def record_durations(cache_root: str | os.PathLike[str],
                     results: Iterable[ResultDict]) -> None:
    """Merge the seconds of ``results`` into the cache folder's durations file.

    Only unsharded runs call this: shards read the file and never change it, so shards run
    one after another on one machine plan the same split. Unwritable: silently skipped.
    """
    fresh = {r["id"]: float(r["seconds"] or 0.0) for r in results
             if isinstance(r.get("id"), str) and is_seconds(r.get("seconds"))}
    if not fresh:
        return
    root = Path(cache_root)
    # run order, this run first: each family's first entry is the cell that paid its start-up
    data = {**fresh, **{k: v for k, v in read_cache_durations(root).items() if k not in fresh}}
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f".{DURATIONS_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(data, indent=0))
        os.replace(tmp, root / DURATIONS_FILE)
    except OSError:
        pass


@dataclass
class Plan:
    """A split of cells into N parts."""

    parts: list[list[str]]  # cell ids per part, in id order
    estimates: list[float]  # estimated seconds per part
    balance: str  # "report", "cache" or "counts": where the estimates came from
    digest: str  # identifies the whole assignment (same digest = same split)

    def part_of(self) -> dict[str, int]:
        """``{cell id: part index (0-based)}``."""
        return {pid: i for i, ids in enumerate(self.parts) for pid in ids}


def estimate(cells: list[tuple[str, str]], durations: Mapping[str, float]) -> dict[str, float]:
    """Seconds per cell: recorded, else the family's median, else the overall median, else 1."""
    known = {pid: durations[pid] for pid, _ in cells if pid in durations}
    overall = statistics.median(known.values()) if known else 1.0
    by_family: dict[str, list[float]] = {}
    for pid, fam in cells:
        if pid in known:
            by_family.setdefault(fam, []).append(known[pid])
    out = {}
    for pid, fam in cells:
        if pid in known:
            out[pid] = known[pid]
        elif fam in by_family:
            out[pid] = statistics.median(by_family[fam])
        else:
            out[pid] = overall
    # a zero-second cell still costs something: keep every cell weighing a little
    floor = max(overall, 1e-3) * 1e-3
    return {pid: max(sec, floor) for pid, sec in out.items()}


def startups(cells: list[tuple[str, str]], durations: Mapping[str, float]) -> dict[str, float]:
    """Estimated warm-worker start-up per family: how much longer the family's first
    recorded cell (the one that started the worker and paid its imports) ran than the
    family's median. ``durations`` is in run order (a report's probe order)."""
    family = dict(cells)
    first: dict[str, str] = {}
    times: dict[str, list[float]] = {}
    for pid, sec in durations.items():
        fam = family.get(pid)
        if fam is not None:
            first.setdefault(fam, pid)
            times.setdefault(fam, []).append(sec)
    return {fam: max(0.0, durations[pid] - statistics.median(times[fam]))
            for fam, pid in first.items() if len(times[fam]) > 1}


class _Model:
    """Part cost = its cells' own seconds + one start-up per family it holds."""

    def __init__(self, cells: list[tuple[str, str]], cost: dict[str, float],
                 durations: Mapping[str, float]) -> None:
        self.family = dict(cells)
        self.startup = startups(cells, durations)
        self.base = dict(cost)  # a cell's seconds without the start-up it happened to pay
        seen: set[str] = set()
        for pid in durations:  # run order: the first recorded cell of each family
            fam = self.family.get(pid)
            if fam is None or fam in seen:
                continue
            seen.add(fam)
            if fam in self.startup:
                self.base[pid] = max(cost[pid] - self.startup[fam], cost[pid] * 1e-3)

    def chunk(self, chunk: list[str]) -> float:
        return sum(self.base[c] for c in chunk) + self.startup.get(self.family[chunk[0]], 0.0)

    def part(self, ids: list[str]) -> float:
        fams = {self.family[c] for c in ids}
        return sum(self.base[c] for c in ids) + sum(self.startup.get(f, 0.0) for f in fams)


def _pack(chunks: list[list[str]], model: _Model, n: int) -> list[list[int]]:
    """Longest chunk first onto the part it lengthens least (a family already in a part
    costs no second start-up there), then improve the longest part by moves and swaps."""
    m = len(chunks)
    fam = [model.family[ch[0]] for ch in chunks]
    base = [sum(model.base[c] for c in ch) for ch in chunks]
    su = [model.startup.get(f, 0.0) for f in fam]
    parts: list[list[int]] = [[] for _ in range(n)]
    count: list[Counter[str]] = [Counter() for _ in range(n)]
    load = [0.0] * n

    def gain(j: int, i: int) -> float:  # what adding chunk i to part j adds
        return base[i] + (su[i] if count[j][fam[i]] == 0 else 0.0)

    def loss(j: int, i: int) -> float:  # what removing chunk i from part j saves
        return base[i] + (su[i] if count[j][fam[i]] == 1 else 0.0)

    def swap(j: int, out: int, into: int) -> float:  # load change of part j
        delta = base[into] - base[out]
        if fam[out] != fam[into]:
            delta -= su[out] if count[j][fam[out]] == 1 else 0.0
            delta += su[into] if count[j][fam[into]] == 0 else 0.0
        return delta

    def move(i: int, src: int | None, dst: int) -> None:
        if src is not None:
            load[src] -= loss(src, i)
            parts[src].remove(i)
            count[src][fam[i]] -= 1
        load[dst] += gain(dst, i)
        parts[dst].append(i)
        count[dst][fam[i]] += 1

    for i in sorted(range(m), key=lambda i: (-(base[i] + su[i]), chunks[i][0])):
        move(i, None, min(range(n), key=lambda j: (load[j] + gain(j, i), j)))
    for _ in range(4 * m + 8):  # bounded local search on the longest part
        hi = max(range(n), key=lambda j: (load[j], -j))
        lo = min(range(n), key=lambda j: (load[j], j))
        if hi == lo:
            break
        best: tuple[float, int, int | None] | None = None
        for a in parts[hi]:
            after = max(load[hi] - loss(hi, a), load[lo] + gain(lo, a))
            if after < load[hi] - 1e-9 and (best is None or after < best[0]):
                best = (after, a, None)
            if len(parts[hi]) * len(parts[lo]) > 40_000:
                continue  # only moves on huge parts
            for b in parts[lo]:
                after = max(load[hi] + swap(hi, a, b), load[lo] + swap(lo, b, a))
                if after < load[hi] - 1e-9 and (best is None or after < best[0]):
                    best = (after, a, b)
        if best is None:
            break
        _, a, swap_in = best
        move(a, hi, lo)
        if swap_in is not None:
            move(swap_in, lo, hi)
    return parts


def _halves(chunk: list[str], cost: dict[str, float]) -> tuple[list[str], list[str]]:
    """Cut a chunk (id order) where the two sides weigh most alike."""
    total = sum(cost[c] for c in chunk)
    acc, best_i, best_d = 0.0, 1, float("inf")
    for i in range(1, len(chunk)):
        acc += cost[chunk[i - 1]]
        d = abs(total - 2 * acc)
        if d < best_d:
            best_i, best_d = i, d
    return chunk[:best_i], chunk[best_i:]


def _balance(cells: list[tuple[str, str]], n: int, model: _Model) -> list[list[str]]:
    """Families whole first; then keep halving the largest family chunk and re-packing.

    Of the splits tried, the one with the fewest cuts whose longest part is within
    :data:`SLACK` of the shortest longest part found is kept: a family is cut only where
    that shortens the longest part by more than a start-up is worth.
    """
    by_family: dict[str, list[str]] = {}
    for pid, fam in cells:
        by_family.setdefault(fam, []).append(pid)
    chunks = [by_family[f] for f in sorted(by_family)]
    mean = model.part([c for c, _ in cells]) / n if cells else 0.0
    tried: list[tuple[float, list[list[str]]]] = []
    for _ in range(MAX_SPLITS + 1):
        sums = [model.chunk(ch) for ch in chunks]
        packed = _pack(chunks, model, n) if chunks else [[] for _ in range(n)]
        parts = [sorted(pid for i in p for pid in chunks[i]) for p in packed]
        tried.append((max((model.part(p) for p in parts), default=0.0), parts))
        best_at = min(range(len(tried)), key=lambda k: (tried[k][0], k))
        if len(tried) - best_at > PATIENCE:
            break  # more cuts stopped helping
        splittable = [i for i, ch in enumerate(chunks) if len(ch) > 1]
        if not splittable:
            break
        i = max(splittable, key=lambda j: (sums[j], -j))
        if sums[i] < FINE * mean and tried[-1][0] <= TARGET * mean:
            break  # every chunk is already small next to a part
        a, b = _halves(chunks[i], model.base)
        chunks = chunks[:i] + [a, b] + chunks[i + 1:]
    shortest = min(t[0] for t in tried)
    good_enough = min(shortest * (1 + SLACK), max(shortest, TARGET * mean))
    return next(parts for longest, parts in tried if longest <= good_enough + 1e-9)


def make_plan(cells: list[tuple[str, str]], n: int, durations: Mapping[str, float] | None = None,
              source: str = "report") -> Plan:
    """Split ``cells`` (``(id, family)`` pairs) into ``n`` parts; see the module docstring."""
    durations = durations or {}
    cells = sorted(set(cells))
    timed = any(pid in durations for pid, _ in cells)
    cost = estimate(cells, durations) if timed else {pid: 1.0 for pid, _ in cells}
    model = _Model(cells, cost, durations if timed else {})
    family = dict(cells)
    # a cell longer than the mean of what is left gets a part of its own; the rest is
    # balanced over the other parts (so one long cell never leaves a part idle)
    rest = [pid for pid, _ in cells]
    solo: list[list[str]] = []
    while len(solo) < n - 1 and rest:
        longest = max(rest, key=lambda c: (model.part([c]), c))
        if model.part([longest]) <= model.part(rest) / (n - len(solo)):
            break
        solo.append([longest])
        rest.remove(longest)
    parts = solo + _balance([(c, family[c]) for c in rest], n - len(solo), model)
    # parts numbered by their first id, so the numbering does not depend on packing ties
    parts.sort(key=lambda p: (not p, p[0] if p else ""))
    digest = hashlib.sha256(json.dumps([n, parts]).encode()).hexdigest()[:16]
    return Plan(parts=parts, estimates=[round(model.part(p), 3) if p else 0.0 for p in parts],
                balance=source if timed else "counts", digest=digest)


def select_shard(probes: list[CellSpec], shard: tuple[int, int],
                 durations: Mapping[str, float] | None, source: str,
                 source_path: str | None = None
                 ) -> tuple[list[CellSpec], ShardDict]:
    """The probes of part K (in their discovery order) and the report's ``shard`` object."""
    from laya_tui.core.envs import worker_key
    from laya_tui.core.renamed import with_renamed

    k, n = shard
    if durations:  # a report written before some ids changed: its seconds under the new ids
        durations = with_renamed(durations, [p["id"] for p in probes])
    # one warm worker per family and environment: each pays its own start-up
    plan = make_plan([(p["id"], worker_key(p)) for p in probes], n, durations, source)
    mine = set(plan.parts[k - 1])
    chosen = [p for p in probes if p["id"] in mine]
    info: ShardDict = {
        "index": k, "count": n, "cells": len(chosen), "selected": len(probes),
        "plan": plan.digest, "balance": plan.balance,
        "estimated_seconds": plan.estimates,
    }
    if plan.balance != "counts" and source_path:
        info["durations"] = source_path
    return chosen, info
