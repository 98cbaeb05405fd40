"""``--shard K/N``: the K-th of N deterministic, disjoint parts of the selected cells.

The N parts cover every selected cell exactly once. They are balanced by estimated cell
durations: those of ``--durations REPORT.json`` (an earlier report), else the durations the
last full (unsharded) run recorded in the result cache folder, else one unit per cell.
A family's cells stay in one part (one warm-worker start-up) unless the largest part would
then run more than :data:`TARGET` times the mean; then the largest family chunk is split in
two (contiguous in id order) and the parts are packed again, until the split is even or
every chunk is a single cell.

The plan depends only on the selected ids, their families, N and the durations: never on
the machine, the clock or the discovery order. Machines that must agree on a split (a CI
matrix, ssh hosts) should be given the same ``--durations`` file; each shard records a
digest of its plan, and ``laya-tui merge`` fails its ``shards`` gate when the parts of a
split do not fit together. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laya_tui.errors import UsageError

#: The largest part may run this many times the mean before a family is split.
TARGET = 1.25
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


def durations_from_report(path: str) -> dict[str, float]:
    """``{probe id: seconds}`` from an earlier laya-tui report (a UsageError when unusable)."""
    from laya_tui.merge import load_report

    doc = load_report(path, what="--durations report", any_readable=True)
    out: dict[str, float] = {}
    for p in doc["probes"]:
        sec = p.get("seconds")
        if isinstance(p.get("id"), str) and _is_seconds(sec):
            out[p["id"]] = float(sec)
    return out


def _is_seconds(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def read_cache_durations(cache_root: str | os.PathLike[str]) -> dict[str, float]:
    """The durations recorded by earlier unsharded runs (``{}`` when none or unreadable)."""
    try:
        data = json.loads((Path(cache_root) / DURATIONS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(k, str) and _is_seconds(v)}


def record_durations(cache_root: str | os.PathLike[str],
                     results: Iterable[dict[str, Any]]) -> None:
    """Merge the seconds of ``results`` into the cache folder's durations file.

    Only unsharded runs call this: shards read the file and never change it, so shards run
    one after another on one machine plan the same split. Unwritable: silently skipped.
    """
    fresh = {r["id"]: float(r["seconds"]) for r in results
             if isinstance(r.get("id"), str) and _is_seconds(r.get("seconds"))}
    if not fresh:
        return
    root = Path(cache_root)
    data = read_cache_durations(root)
    data.update(fresh)
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f".{DURATIONS_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(dict(sorted(data.items())), indent=0))
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


def estimate(cells: list[tuple[str, str]], durations: dict[str, float]) -> dict[str, float]:
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


def _pack(chunks: list[list[str]], cost: dict[str, float], n: int) -> list[list[int]]:
    """Longest chunk first onto the least loaded part, then improve by moves and swaps."""
    sums = [sum(cost[c] for c in ch) for ch in chunks]
    order = sorted(range(len(chunks)), key=lambda i: (-sums[i], chunks[i][0]))
    parts: list[list[int]] = [[] for _ in range(n)]
    load = [0.0] * n
    for i in order:
        j = min(range(n), key=lambda p: (load[p], p))
        parts[j].append(i)
        load[j] += sums[i]
    for _ in range(4 * len(chunks) + 8):  # bounded local search on the longest part
        hi = max(range(n), key=lambda p: (load[p], -p))
        lo = min(range(n), key=lambda p: (load[p], p))
        gap = load[hi] - load[lo]
        best: tuple[float, int, int | None] | None = None
        for a in parts[hi]:
            if sums[a] < gap and (best is None or abs(gap - 2 * sums[a]) < best[0]):
                best = (abs(gap - 2 * sums[a]), a, None)
            for b in parts[lo]:
                d = sums[a] - sums[b]
                if 0 < d < gap and (best is None or abs(gap - 2 * d) < best[0]):
                    best = (abs(gap - 2 * d), a, b)
        if best is None or best[0] >= gap - 1e-12:
            break
        _, a, b = best
        parts[hi].remove(a)
        parts[lo].append(a)
        load[hi] -= sums[a]
        load[lo] += sums[a]
        if b is not None:
            parts[lo].remove(b)
            parts[hi].append(b)
            load[lo] -= sums[b]
            load[hi] += sums[b]
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


def _balance(cells: list[tuple[str, str]], n: int, cost: dict[str, float]) -> list[list[str]]:
    """Families whole, then the largest family chunk halved until the parts are even."""
    by_family: dict[str, list[str]] = {}
    for pid, fam in cells:
        by_family.setdefault(fam, []).append(pid)
    chunks = [by_family[f] for f in sorted(by_family)]
    mean = sum(cost[c] for c, _ in cells) / n
    best: tuple[float, list[list[str]]] | None = None
    while True:
        packed = _pack(chunks, cost, n) if chunks else [[] for _ in range(n)]
        parts = [sorted(pid for i in p for pid in chunks[i]) for p in packed]
        longest = max((sum(cost[c] for c in p) for p in parts), default=0.0)
        if best is None or longest < best[0] - 1e-9:
            best = (longest, parts)
        if longest <= TARGET * mean + 1e-9:
            break
        splittable = [i for i, ch in enumerate(chunks) if len(ch) > 1]
        if not splittable:
            break
        i = max(splittable, key=lambda j: (sum(cost[c] for c in chunks[j]), -j))
        a, b = _halves(chunks[i], cost)
        chunks = chunks[:i] + [a, b] + chunks[i + 1:]
    return best[1]


def make_plan(cells: list[tuple[str, str]], n: int, durations: dict[str, float] | None = None,
              source: str = "report") -> Plan:
    """Split ``cells`` (``(id, family)`` pairs) into ``n`` parts; see the module docstring."""
    cells = sorted(set(cells))
    durations = durations or {}
    timed = any(pid in durations for pid, _ in cells)
    cost = estimate(cells, durations) if timed else {pid: 1.0 for pid, _ in cells}
    # a cell longer than the mean of what is left gets a part of its own; the rest is
    # balanced over the other parts (so one long cell never leaves a part idle)
    rest = [pid for pid, _ in cells]
    solo: list[list[str]] = []
    while len(solo) < n - 1 and rest:
        longest = max(rest, key=lambda c: (cost[c], c))
        if cost[longest] <= sum(cost[c] for c in rest) / (n - len(solo)):
            break
        solo.append([longest])
        rest.remove(longest)
    family = dict(cells)
    parts = solo + _balance([(c, family[c]) for c in rest], n - len(solo), cost)
    # parts numbered by their first id, so the numbering does not depend on packing ties
    parts.sort(key=lambda p: (not p, p[0] if p else ""))
    digest = hashlib.sha256(json.dumps([n, parts]).encode()).hexdigest()[:16]
    return Plan(parts=parts, estimates=[round(sum(cost[c] for c in p), 3) for p in parts],
                balance=source if timed else "counts", digest=digest)


def select_shard(probes: list[dict[str, Any]], shard: tuple[int, int],
                 durations: dict[str, float] | None, source: str,
                 source_path: str | None = None
                 ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The probes of part K (in their discovery order) and the report's ``shard`` object."""
    k, n = shard
    plan = make_plan([(p["id"], p["family"]) for p in probes], n, durations, source)
    mine = set(plan.parts[k - 1])
    chosen = [p for p in probes if p["id"] in mine]
    info: dict[str, Any] = {
        "index": k, "count": n, "cells": len(chosen), "selected": len(probes),
        "plan": plan.digest, "balance": plan.balance,
        "estimated_seconds": plan.estimates,
    }
    if plan.balance != "counts" and source_path:
        info["durations"] = source_path
    return chosen, info
