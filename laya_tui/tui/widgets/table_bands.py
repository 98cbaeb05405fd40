"""The signal table's default order: findings first, by severity (issue 42), cheap at
200,000 rows (no Textual here).

The rows of each probe are split by :class:`~laya_tui.report.severity.Severity` band into
lists that keep their arrival order; the table shows every probe's list of the most severe
band, then every probe's of the next, and so on (probes in discovery order within a band),
so environment facts and counted kinds that did not occur come last. The split is kept
per probe and grows with it: rows streaming in are ranked once, when they arrive; a scope
change reuses it (O(probes)). A probe whose rows all fall in one band (the common case: a
flood of fallbacks) is shown as the model's own list, no copy.
"""

from __future__ import annotations

from bisect import bisect_left
from operator import attrgetter

from laya_tui.report.severity import severity
from laya_tui.tui.model import SignalRow

_seq = attrgetter("seq")
#: rows gone from one probe in one change taken out one at a time (bisection and ``del``);
#: more: one pass over its lists
DROP_ONE_BY_ONE = 256
Segments = list[tuple[str, list[SignalRow]]]


def row_band(row: SignalRow) -> int:
    """The severity band of a table row (lower: shown first)."""
    sig = row.sig
    return severity(sig.kind, row.failing, sig.count)


class _Split:
    """One probe's rows split by band: ``src`` is the model's list, ``done`` how many of it
    are split; ``single`` the band of every row while they share one (``lists`` unused)."""

    __slots__ = ("done", "gone", "last", "lists", "single", "src")

    def __init__(self, src: list[SignalRow]) -> None:
        self.src = src
        self.done = 0
        self.single: int | None = None
        self.lists: dict[int, list[SignalRow]] = {}
        self.last = -1  # the seq of the last row split
        self.gone = 0  # split rows gone since the model's list was last replaced

    def grow(self) -> None:
        """Split the rows that came since the last call."""
        src, start = self.src, self.done
        if start == len(src):
            return
        single, lists = self.single, self.lists
        for i in range(start, len(src)):
            row = src[i]
            b = row_band(row)
            if i == 0:
                single = b
                continue
            if single is not None:
                if b == single:
                    continue
                lists[single] = src[:i]  # the rows so far, all of one band
                single = None
            lst = lists.get(b)
            if lst is None:
                lists[b] = [row]
            else:
                lst.append(row)
        self.single, self.done, self.last = single, len(src), src[-1].seq

    def move(self, row: SignalRow, band: int) -> None:
        """``row`` (changed in place) is of ``band`` now: out of its old list, into the
        new one at its arrival place. A row not split yet is left to :meth:`grow`."""
        src = self.src
        i = bisect_left(src, row.seq, 0, self.done, key=_seq)
        if i >= self.done or src[i] is not row:
            return
        single, lists = self.single, self.lists
        if single is not None:
            if band != single:  # the first row of another band: the model's list is copied
                keep = [r for r in src[:self.done] if r is not row]
                if keep:
                    lists[single] = keep
                lists[band] = [row]
                self.single = None
            return
        for old, lst in lists.items():
            j = bisect_left(lst, row.seq, key=_seq)
            if j < len(lst) and lst[j] is row:
                if old == band:
                    return
                del lst[j]
                if not lst:
                    del lists[old]
                break
        dst = lists.setdefault(band, [])
        dst.insert(bisect_left(dst, row.seq, key=_seq), row)

    def drop(self, rows: list[SignalRow]) -> None:
        """``rows`` went away (the model lists its rows anew without them): out of the
        lists; :meth:`rebase` takes the new list."""
        rows = [r for r in rows if r.seq <= self.last]  # the others were never split
        self.gone += len(rows)
        if self.single is not None or not rows:
            return
        lists = self.lists
        if len(rows) > DROP_ONE_BY_ONE:  # many: one pass over the lists, not a del each
            ids = {id(r) for r in rows}
            kept = {b: [r for r in lst if id(r) not in ids] for b, lst in lists.items()}
            self.lists = {b: lst for b, lst in kept.items() if lst}
            return
        for row in rows:
            for b, lst in lists.items():
                j = bisect_left(lst, row.seq, key=_seq)
                if j < len(lst) and lst[j] is row:
                    del lst[j]
                    if not lst:
                        del lists[b]
                    break

    def rebase(self, rows: list[SignalRow]) -> bool:
        """Take the model's new list (its old one less the rows dropped, then any new):
        False when it is not that (it is split anew)."""
        done = self.done - self.gone
        if not 0 <= done <= len(rows):
            return False
        if done and rows[done - 1].seq > self.last or done < len(rows) and \
                rows[done].seq <= self.last:
            return False
        self.src, self.done, self.gone = rows, done, 0
        return True

    def bands(self) -> list[tuple[int, list[SignalRow]]]:
        if self.single is not None:
            return [(self.single, self.src)]
        return sorted(self.lists.items())


class BandedOrder:
    """Every probe's :class:`_Split`, kept while its list is the model's same list."""

    def __init__(self) -> None:
        self._splits: dict[str, _Split] = {}

    def _split(self, pid: str, rows: list[SignalRow]) -> _Split:
        s = self._splits.get(pid)
        if s is not None and s.src is not rows and not s.rebase(rows):
            s = None
        if s is None or s.done > len(rows):
            s = self._splits[pid] = _Split(rows)  # a list unlike the one split: anew
        s.grow()
        return s

    def segments(self, segments: Segments) -> Segments:
        """``segments`` (probe id, its rows) as the table shows them: one segment per band
        and probe, most severe band first; a segment's id is ``band \\x1f probe``."""
        out: list[tuple[int, int, str, list[SignalRow]]] = []
        for n, (pid, rows) in enumerate(segments):
            for band, lst in self._split(pid, rows).bands():
                out.append((band, n, pid, lst))
        out.sort(key=lambda t: (t[0], t[1]))
        return [(f"{band}\x1f{pid}", lst) for band, _, pid, lst in out]

    def moved(self, rows: list[SignalRow]) -> None:
        """Rows changed in place (a re-run): each goes to the list of its band now."""
        for row in rows:
            s = self._splits.get(row.probe)
            if s is not None:
                s.move(row, row_band(row))

    def removed(self, rows: list[SignalRow]) -> None:
        """Rows went away (a re-run): out of their probe's lists (see :meth:`_Split.drop`)."""
        by_probe: dict[str, list[SignalRow]] = {}
        for row in rows:
            by_probe.setdefault(row.probe, []).append(row)
        for pid, gone in by_probe.items():
            s = self._splits.get(pid)
            if s is not None:
                s.drop(gone)

    def forget(self) -> None:
        self._splits.clear()


def segment_id(row: SignalRow) -> str:
    """The id of the segment ``row`` is shown in (see :meth:`BandedOrder.segments`)."""
    return f"{row_band(row)}\x1f{row.probe}"
