"""The signal table's rows in display order, cheap at 200,000 rows (no Textual here).

Two shapes (docs/architecture.md, 'The dashboard'):

* **Unfiltered and unsorted** (the default): the table shows row lists one after another:
  the probes' rows split by severity band, findings first (``table_bands``; a probe whose
  rows share one band is the model's own list), each in arrival order. Changing scope is
  O(probes), a row streaming in is ranked once, and a display index maps to its row by a
  bisect over the lists' running lengths.
* **Filtered or sorted**: a list of the accepted rows with a parallel list of sort keys
  (``(value, seq)`` sorted; ``((band, rank), seq)`` filtered only), built in budgeted steps
  (``table_build.ListBuild``): rows are tested and keyed a chunk at a time, sorted in runs,
  then the runs merged.
  A filter without a sort grows in display order, so the first matches show at once; a sort
  is shown when it is done. Streamed rows are inserted by bisection.

The last finished sort of every row in scope is kept (:class:`Shelf`) until a row changes,
the scope does or another build starts: a filter over the same sort is then a scan of it
(it stays sorted, and grows in display order), and clearing that filter or reversing the
sort shows it again at once. Without it, Esc after a filter re-sorted 200,000 rows.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter

from laya_tui.report.views.signals import haystack
from laya_tui.tui.model import SignalRow
from laya_tui.tui.widgets.table_build import Key, ListBuild, ScopeLists, SortKey, Sweepable

#: items freed per step of releasing a list no longer shown (:meth:`RowOrder.sweep`)
SWEEP_CHUNK = 16_384
_seq = attrgetter("seq")
_tkey = attrgetter("tkey")
_probe = attrgetter("probe")


@dataclass(frozen=True)
class TableFilter:
    """Which rows show: one kind (or all), a text, only failing ones."""

    text: str = ""
    kind: str | None = None
    only_failing: bool = False

    @property
    def active(self) -> bool:
        return bool(self.text or self.kind or self.only_failing)

    def describe(self) -> str:
        """``kind fallback · text 'x' · only failing`` (empty when none is set)."""
        parts = [f"kind {self.kind}" if self.kind else "",
                 f"text {self.text!r}" if self.text else "",
                 "only failing" if self.only_failing else ""]
        return " · ".join(p for p in parts if p)

    def accepts(self, row: SignalRow) -> bool:
        if self.kind is not None and row.sig.kind != self.kind:
            return False
        if self.only_failing and not row.failing:
            return False
        if self.text:
            hay = row.hay
            if hay is None:  # kept on the row: the next keystroke searches it again
                hay = row.hay = haystack(row.sig, row.probe)
            if self.text.lower() not in hay:
                return False
        return True


@dataclass
class Shelf:
    """A finished sort of every row in scope: what it was sorted by, the scope's lists
    (and their lengths) then, its list, keys and generation."""

    column: object
    scope: ScopeLists
    rows: list[SignalRow]
    keys: list[Key]
    gen: int
    key_of: Callable[[SignalRow], SortKey]

    def fits(self, column: object, segments: list[tuple[str, list[SignalRow]]]) -> bool:
        """Whether it is the sort by ``column`` of exactly these lists, none grown since."""
        if column != self.column or len(segments) != len(self.scope):
            return False
        return all(pid == p and seg is rows and len(seg) == n
                   for (pid, seg), (p, rows, n) in zip(segments, self.scope, strict=True))


def scope_of(segments: list[tuple[str, list[SignalRow]]]) -> ScopeLists:
    """The segments as a :class:`Shelf` remembers them (lists and lengths)."""
    return [(pid, rows, len(rows)) for pid, rows in segments]


class RowOrder:
    """Display order of the table's rows (see the module docstring)."""

    def __init__(self) -> None:
        self.segments: list[list[SignalRow]] = []
        self._seg_of: dict[str, int] = {}
        self._ends: list[int] = []  # running lengths of the segments
        self._dirty = True
        self.listed = False  # True: the filtered/sorted list below is the order
        self.rows: list[SignalRow] = []
        self.keys: list[Key] = []
        self.reverse = False
        self.key_of: Callable[[SignalRow], SortKey] | None = None
        self._build: ListBuild | None = None
        #: bumped by every build: a row's ``tkey`` is the key it is listed under in
        #: generation ``tgen``; ``list_gen`` is the generation of the list shown (a row of
        #: another generation is not in it)
        self.gen = 0
        self.list_gen = 0
        self._pending_reverse = False
        #: lists no longer shown, freed a slice per step (:meth:`sweep`), not at once
        self.trash: list[Sweepable] = []
        #: the last finished sort of every row in scope (see the module docstring)
        self.shelf: Shelf | None = None
        #: the id of the segment a row is shown in (the table's: band and probe)
        self.seg_key: Callable[[SignalRow], str] = _probe

    # -- shape ------------------------------------------------------------------------------
    def show_segments(self, segments: list[tuple[str, list[SignalRow]]]) -> None:
        """The unfiltered, unsorted order: these lists, one after another (each named by the
        :attr:`seg_key` of its rows)."""
        self.segments = [rows for _, rows in segments]
        self._seg_of = {pid: i for i, (pid, _) in enumerate(segments)}
        self._dirty = True
        self.listed = False
        self._drop_build()
        old = self.rows, self.keys
        self.rows, self.keys = [], []
        self.discard(*old)

    def _drop_build(self) -> None:
        b, self._build = self._build, None
        if b is not None:  # (a filter's lists are the ones shown: their caller drops them)
            self.discard(b.entries, b.scanned, b.rows, b.keys, *b.holds)

    def discard(self, *lists: Sweepable) -> None:
        """Lists no longer used: long ones are freed over the next steps (:meth:`sweep`).

        Freeing 200,000 sort keys at once holds the loop for tens of milliseconds; a
        slice per step does not. The shelf's lists and the ones shown are kept."""
        shelf = self.shelf
        for items in lists:
            if items is self.rows or items is self.keys:
                continue
            if shelf is not None and (items is shelf.rows or items is shelf.keys):
                continue
            if len(items) > SWEEP_CHUNK and not any(items is t for t in self.trash):
                self.trash.append(items)

    def forget_shelf(self) -> None:
        """Rows changed (or another build starts): the kept sort no longer holds."""
        s, self.shelf = self.shelf, None
        if s is None:
            return
        b = self._build
        if b is not None and b.reads is s.rows:
            b.holds += [s.rows, s.keys]  # a filter still scans it: freed when that ends
        else:
            self.discard(s.rows, s.keys)

    def restore(self, column: object, segments: list[tuple[str, list[SignalRow]]],
                reverse: bool) -> bool:
        """Show the kept sort by ``column`` of ``segments`` again, at once (False: none
        fits; build it)."""
        s = self.shelf
        if s is None or not s.fits(column, segments):
            return False
        self._drop_build()
        old = self.rows, self.keys
        self.listed, self.rows, self.keys = True, s.rows, s.keys
        self.list_gen, self.key_of, self.reverse = s.gen, s.key_of, reverse
        self.discard(*old)
        return True

    def filter_shelf(self, column: object, segments: list[tuple[str, list[SignalRow]]],
                     accept: Callable[[SignalRow], bool], reverse: bool) -> bool:
        """Start a filter over the kept sort (a scan in its order: no sort, no new keys;
        :meth:`step` does the work). False: none fits."""
        s = self.shelf
        if s is None or not s.fits(column, segments):
            return False
        self._drop_build()
        old = self.rows, self.keys
        b = self._build = ListBuild(iter(s.rows), accept, _tkey, False, len(s.rows), s.gen)
        b.reads = s.rows
        # the rows keep the keys they have in the shelf: its generation is the list's
        self.listed, self.key_of, self.reverse, self.list_gen = True, s.key_of, reverse, s.gen
        self.rows, self.keys = b.rows, b.keys
        self._pending_reverse = reverse
        self.discard(*old)
        return True

    def sweep(self, budget: float | None) -> None:
        """Free discarded lists, a slice at a time, for about ``budget`` seconds (None:
        all of them)."""
        deadline = None if budget is None else time.perf_counter() + budget
        trash = self.trash
        while trash:
            items = trash[-1]
            del items[-SWEEP_CHUNK:]
            if not items:
                trash.pop()
            if deadline is not None and time.perf_counter() > deadline:
                return

    def touch(self) -> None:
        """The model's lists grew (rows streamed in)."""
        self._dirty = True

    def _offsets(self) -> list[int]:
        if self._dirty:
            total, ends = 0, []
            for seg in self.segments:
                total += len(seg)
                ends.append(total)
            self._ends, self._dirty = ends, False
        return self._ends

    def __len__(self) -> int:
        if self.listed:
            return len(self.rows)
        ends = self._offsets()
        return ends[-1] if ends else 0

    def at(self, index: int) -> SignalRow | None:
        """The row shown at display ``index`` (None past the end)."""
        n = len(self)
        if not 0 <= index < n:
            return None
        if self.reverse:
            index = n - 1 - index
        if self.listed:
            return self.rows[index]
        ends = self._ends
        i = bisect_right(ends, index)
        start = ends[i - 1] if i else 0
        seg = self.segments[i]
        off = index - start
        return seg[off] if off < len(seg) else None

    def index_of(self, row: SignalRow) -> int | None:
        """Where ``row`` is shown, None when it is not (filtered out, gone)."""
        if self.listed:
            i = self._find(row)
            if i is None:
                return None
            return len(self.rows) - 1 - i if self.reverse else i
        s = self._seg_of.get(self.seg_key(row))
        if s is None or s >= len(self.segments):
            return None
        seg = self.segments[s]
        i = bisect_left(seg, row.seq, key=_seq)
        if i < len(seg) and seg[i] is row:
            ends = self._offsets()
            at = (ends[s - 1] if s else 0) + i
            return len(self) - 1 - at if self.reverse else at
        return None

    def shown(self) -> Iterator[SignalRow]:
        """Every row shown, in display order (one pass over every row)."""
        return (r for r in map(self.at, range(len(self))) if r is not None)

    def first_index(self, rows: Iterable[SignalRow]) -> int:
        """Where the display starts to differ after ``rows`` were appended to their probes'
        lists: the lowest index of the first of them each probe got (the length: none)."""
        heads: dict[str, SignalRow] = {}
        for row in rows:
            heads.setdefault(row.probe, row)
        found = [i for i in map(self.index_of, heads.values()) if i is not None]
        return min(found, default=len(self))

    def _find(self, row: SignalRow) -> int | None:
        """The storage index of ``row`` in the list, by the key it went in under."""
        t = row.tkey
        if t is None or row.tgen != self.list_gen:
            return None
        i = bisect_left(self.keys, t)
        return i if i < len(self.rows) and self.rows[i] is row else None

    def _keyed(self, row: SignalRow) -> SortKey:
        assert self.key_of is not None
        k = self.key_of(row)
        row.tkey, row.tgen = k, self.list_gen
        return k

    # -- the list: built in steps, then kept by bisection ---------------------------------
    def begin(self, source: Iterator[SignalRow], accept: Callable[[SignalRow], bool] | None,
              key_of: Callable[[SignalRow], SortKey], *, sort: bool, reverse: bool,
              total: int, shelve: tuple[object, list[tuple[str, list[SignalRow]]]] | None
              = None) -> None:
        """Start building the filtered/sorted list of ``total`` rows from ``source`` (in
        the segments' display order; ``accept`` None: every row); :meth:`step` does the
        work. A filter alone is shown
        as it grows; a sort replaces the order shown when it is done. ``shelve``: (sort
        column, segments) of a sort of every row, kept as the shelf when it is done."""
        self.forget_shelf()  # this build re-keys rows: the kept sort's keys no longer hold
        self.gen += 1
        gen = self.gen

        def keyed(row: SignalRow) -> SortKey:
            k = row.tkey = key_of(row)
            row.tgen = gen
            return k

        self._drop_build()
        self._build = ListBuild(source, accept, keyed if not sort else key_of, sort, total, gen)
        if shelve is not None and sort and accept is None:
            self._build.shelve = (shelve[0], scope_of(shelve[1]))
        if not sort:  # grows in display order: shown from the first step on
            old = self.rows, self.keys
            self.listed, self.key_of, self.reverse = True, key_of, reverse
            self.list_gen = gen
            self.rows, self.keys = self._build.rows, self._build.keys  # (frozen with it)
            self.discard(*old)
        self._pending_reverse = reverse

    @property
    def building(self) -> bool:
        return self._build is not None

    @property
    def progress(self) -> float:
        """How far the build is (0..1), 1 when none runs."""
        b = self._build
        if b is None:
            return 1.0
        return b.progress()

    def step(self, budget: float | None) -> bool:
        """Build for about ``budget`` seconds (None: to the end); True when done."""
        b = self._build
        if b is None:
            return True
        done = b.run(budget)
        if done:
            self._build = None
            self.discard(b.entries, b.scanned, *b.holds)
            if b.sort:
                self.listed, self.key_of, self.list_gen = True, b.key_of, b.gen
                self.reverse = self._pending_reverse
                old = self.rows, self.keys
                self.rows, self.keys = b.rows, b.keys
                self.discard(*old)
                if b.shelve is not None:
                    self.shelf = Shelf(b.shelve[0], b.shelve[1], b.rows, b.keys, b.gen,
                                       b.key_of)
        return done

    def insert(self, row: SignalRow) -> bool:
        """Put ``row`` in the list at its key (False: it is there already)."""
        if self._find(row) is not None:
            return False
        k = self._keyed(row)
        i = bisect_left(self.keys, k)
        self.keys.insert(i, k)
        self.rows.insert(i, row)
        return True

    def extend(self, rows: list[SignalRow]) -> int | None:
        """Put a burst of rows in (those listed already are skipped); returns the lowest
        storage index that changed, None when none went in."""
        fresh = [r for r in rows if self._find(r) is None]
        if not fresh:
            return None
        pairs = sorted((self._keyed(r), r) for r in fresh)
        if not self.keys or pairs[0][0] > self.keys[-1]:  # arrival order: at the end
            first = len(self.keys)
            self.keys.extend(k for k, _ in pairs)
            self.rows.extend(r for _, r in pairs)
            return first
        first = len(self.keys)
        for k, r in pairs:
            i = bisect_left(self.keys, k)
            self.keys.insert(i, k)
            self.rows.insert(i, r)
            first = min(first, i)
        return first

    def remove(self, row: SignalRow) -> bool:
        """Take ``row`` out of the list (found by the key it went in under)."""
        i = self._find(row)
        if i is None:
            return False
        del self.keys[i]
        del self.rows[i]
        row.tkey, row.tgen = None, -1
        return True

    def refold(self, updated: list[SignalRow], removed: list[SignalRow],
               accept: Callable[[SignalRow], bool]) -> bool:
        """Take ``removed`` out of the list and put ``updated`` in again at their new keys
        (if ``accept`` takes them); True when the list may have changed."""
        changed = bool(updated)
        for row in removed:
            changed = self.remove(row) or changed
        for row in updated:
            self.remove(row)
            if accept(row):
                self.insert(row)
        return changed

    def take(self, queue: deque[SignalRow], accept: Callable[[SignalRow], bool],
             budget: float | None, chunk: int) -> int | None:
        """Put the rows waiting in ``queue`` that ``accept`` takes in, ``chunk`` at a time,
        for about ``budget`` seconds (None: all of them); the lowest storage index that
        changed, None when no row went in."""
        deadline = None if budget is None else time.perf_counter() + budget
        first: int | None = None
        while queue:
            n = min(len(queue), chunk)
            rows = [r for r in (queue.popleft() for _ in range(n)) if accept(r)]
            at = self.extend(rows) if rows else None
            if at is not None:
                first = at if first is None else min(first, at)
            if deadline is not None and time.perf_counter() > deadline:
                break
        return first
