"""One budgeted build of the signal table's filtered or sorted list (no Textual here).

Rows are tested and keyed a chunk at a time, sorted in runs, then the runs merged, each
step for about a time budget so frames and keys run between steps. :class:`RowOrder` in
``table_rows`` starts a build and swaps its list in (docs/architecture.md, 'The dashboard').
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from laya_tui.core.gc_sight import freeze_if_large
from laya_tui.tui.model import SignalRow

#: ``(value, seq)``; a sort lists a row under its entry ``(value, seq, index)``: the seq
#: is unique, so both shapes order alike and a row's key finds its place in either
SortKey = tuple[object, int]
#: a row's key in a built list: its SortKey, or its sort entry ``(value, seq, index)``
Key = SortKey | tuple[object, int, int]


class Sweepable(Protocol):
    """A list freed a slice at a time (``table_rows.RowOrder.sweep``)."""

    def __len__(self) -> int: ...
    def __delitem__(self, index: slice, /) -> None: ...


#: A ``table_rows.Shelf``'s memory of the scope: each segment's id, its list and its length then.
ScopeLists = list[tuple[str, list[SignalRow], int]]
#: rows tested (and keyed) per step of a build; the time budget is checked between steps
BUILD_CHUNK = 512
#: rows merged per step of a sort's merge
MERGE_CHUNK = 1024
#: rows sorted together into one run before the runs are merged (fewer runs: a cheaper merge)
RUN_ROWS = 8_192


class ListBuild:
    """One budgeted build of the filtered/sorted list.

    What it allocates is shaped for the cyclic garbage collector, which pauses the loop
    for a walk of every container it tracks (docs/architecture.md, 'The dashboard'):

    * a sort keys rows as flat ``(value, seq, index)`` tuples, ``index`` naming the row in
      :attr:`scanned`: a tuple of atoms is untracked at the collector's first pass (one
      holding the row stays tracked: 200,000 of them made every full collection during a
      sort a 150-260 ms pause);
    * the runs are slices of one list (:attr:`entries`), sorted in place, not a list each;
    * with ``core.gc_sight.FREEZE_ABOVE`` rows or more, the lists that grow to one item per row
      (``rows``, ``keys``, ``scanned``, ``entries``) are moved out of the collector's sight
      when they are created (``gc.freeze()``), as the model's rows are (``tui/pump.py``):
      a full collection walked each of them, 200,000 items, over again (40-80 ms each).
    """

    def __init__(self, source: Iterator[SignalRow], accept: Callable[[SignalRow], bool] | None,
                 key_of: Callable[[SignalRow], SortKey], sort: bool, total: int,
                 gen: int) -> None:
        self.source, self.accept, self.key_of = source, accept, key_of
        self.sort, self.gen = sort, gen
        self.rows: list[SignalRow] = []
        self.keys: list[Key] = []
        #: a sort's rows in the order they were scanned (an entry's index names one)
        self.scanned: list[SignalRow] = []
        #: a sort's ``(value, seq, index)`` entries; ``runs`` are the sorted slices of it
        self.entries: list[tuple[object, int, int]] = []
        self.runs: list[tuple[int, int]] = []
        self.merge: Iterator[tuple[object, int, int]] | None = None
        self.seen = 0
        self.total = total
        self.merged = 0
        self.exhausted = False
        #: a sort of every row to keep as the shelf when done: (column, its scope's lists)
        self.shelve: tuple[object, ScopeLists] | None = None
        #: the shelf's list a filter scans, and lists to free when this build ends
        self.reads: list[SignalRow] | None = None
        self.holds: list[Sweepable] = []
        freeze_if_large(total)

    def progress(self) -> float:
        if not self.sort:
            return 0.0 if self.total == 0 else min(1.0, self.seen / self.total)
        if not self.exhausted:
            return 0.0 if self.total == 0 else 0.7 * min(1.0, self.seen / self.total)
        return 0.7 + 0.3 * min(1.0, self.merged / (len(self.entries) or 1))

    def run(self, budget: float | None) -> bool:
        deadline = None if budget is None else time.perf_counter() + budget
        while not self.exhausted:
            self._scan()
            if deadline is not None and time.perf_counter() > deadline:
                return False
        if not self.sort:
            return True
        entries = self.entries
        if self.merge is None:
            # flat (value, seq, index): compared in C, the seq is unique
            at = entries.__getitem__  # (not islice: it would step over every entry before a)
            self.merge = heapq.merge(*(map(at, range(a, b)) for a, b in self.runs))
        keys, rows, merge, gen, scanned = self.keys, self.rows, self.merge, self.gen, \
            self.scanned
        while True:
            n = 0
            for e in merge:  # the entry is the row's key: no tuple more per row
                keys.append(e)
                r = scanned[e[2]]
                rows.append(r)
                r.tkey, r.tgen = e, gen
                n += 1
                if n == MERGE_CHUNK:
                    break
            self.merged += n
            if n < MERGE_CHUNK:
                return True
            if deadline is not None and time.perf_counter() > deadline:
                return False

    def _scan(self) -> None:
        accept, key_of, source = self.accept, self.key_of, self.source
        entries, scanned = self.entries, self.scanned
        n = 0
        if accept is None:  # a sort of every row
            for row in source:
                n += 1
                v, q = key_of(row)
                entries.append((v, q, len(scanned)))
                scanned.append(row)
                if n == BUILD_CHUNK:
                    break
        else:
            for row in source:
                n += 1
                if accept(row):
                    if self.sort:
                        v, q = key_of(row)
                        entries.append((v, q, len(scanned)))
                        scanned.append(row)
                    else:
                        self.keys.append(key_of(row))
                        self.rows.append(row)
                if n == BUILD_CHUNK:
                    break
        self.seen += n
        if n < BUILD_CHUNK:
            self.exhausted = True
        start = self.runs[-1][1] if self.runs else 0
        end = len(entries)
        if end > start and (end - start >= RUN_ROWS or self.exhausted):
            entries[start:end] = sorted(entries[start:end])  # in place: no list per run
            self.runs.append((start, end))
