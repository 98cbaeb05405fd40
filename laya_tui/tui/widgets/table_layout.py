"""The signal table's columns: their text per row, which columns show and how wide, and how
a cell is cut to its width (no Textual here).

Which columns show and their widths follow ``report.views.signals.column_widths``: a column
empty in every row is hidden, and so is the probe when every row has the same one; the
subject gets its width first and is cut at its start (the end tells rows apart:
``…[c,fp32,gpu]/lower``; a leading input-set tag stays: ``1/2 …gap table``); the other
columns are cut at their end. What the columns need is measured on a sample of the rows
(every row up to 500, then 400 spread over them), and a row drawn later that needs a
hidden column shows it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from rich.cells import cell_len, set_cell_size

from laya_tui.report.views.signals import COLUMN_KEYS, COLUMNS, column_needs, column_widths
from laya_tui.report.views.signals import signal_cells as _cells
from laya_tui.tui.model import SignalRow

#: rows measured whole below this many, a spread sample of ``SAMPLE`` above (a row not yet
#: drawn is formatted to be measured: a few hundred keep a measurement to a few ms)
MEASURE_ALL = 500
SAMPLE = 400
_PROBE = COLUMN_KEYS.index("probe")
#: A subject's leading input-set tag (``set 1/2 bfloat16 vs fp32 cpu output gap table``):
#: kept when the subject is cut at its start, since rows of one cell differ only in it.
_SET_TAG = re.compile(r"set (\d+/\d+) ")
_SUBJECT = COLUMN_KEYS.index("subject")


def row_text(row: SignalRow) -> tuple[str, ...]:
    """A row's display text per column, formatted once (cached on the row until it changes).

    Only rows that are drawn, searched or measured are formatted: streaming rows in costs no
    formatting, and the cache is a tuple of strings, which the garbage collector skips.
    """
    if row.cells is None:
        row.cells = _cells(row.sig, row.probe)
    return row.cells


def sample_indices(n: int) -> list[int]:
    """Which of ``n`` rows to measure: all of a few, else the first and last hundred and
    a spread between.

    The spread sits on a grid whose step is a power of two (about ``SAMPLE / 2`` points):
    as rows stream in, the grid keeps its points (a doubled step keeps every other one),
    so a re-measure formats only the rows new to it, not a fresh spread of a few hundred
    (10-20 ms a measure at 200,000 rows, in the pass before a repaint).
    """
    if n <= MEASURE_ALL:
        return list(range(n))
    edge = SAMPLE // 4
    step = 1 << max(0, math.ceil(math.log2(n / (SAMPLE - 2 * edge))))
    return sorted({*range(edge), *range(n - edge, n), *range(edge, n - edge, step)})


class ColumnLayout:
    """What each column needs (measured), and the widths at the table's width."""

    def __init__(self) -> None:
        self.needs: list[int] = [0] * len(COLUMNS)
        self.widths: list[int] = [0] * len(COLUMNS)
        self._width = -1
        self._probe: str | None = None  # the one probe of every measured row, if one

    def measure(self, count: int, at: Callable[[int], SignalRow | None]) -> bool:
        """Measure the rows (``count`` of them, ``at(i)`` the i-th); True when the needs
        changed."""
        rows = [r for r in (at(i) for i in sample_indices(count)) if r is not None]
        texts = [row_text(r) for r in rows]
        needs = column_needs(texts)
        probes = {r.probe for r in rows}
        self._probe = next(iter(probes)) if len(probes) == 1 else None
        changed = needs != self.needs
        self.needs = needs
        if changed:
            self._width = -1
        return changed

    def note(self, row: SignalRow, cells: tuple[str, ...]) -> bool:
        """A row being drawn: True when it needs a column the sample left hidden."""
        needs = self.needs
        for i, text in enumerate(cells):
            if text and needs[i] == 0:
                if i == _PROBE and (self._probe is None or row.probe == self._probe):
                    continue
                needs[i] = max(len(COLUMNS[i].label), len(text))
                self._width = -1
                return True
        return False

    def fit(self, width: int) -> list[int]:
        """Column widths at a table ``width`` (a space before each shown column)."""
        if width != self._width:
            needs = self.needs
            shown = sum(1 for n in needs if n)
            widths = column_widths(needs, max(0, width - shown - 1))
            used = sum(1 for w in widths if w)
            if used < shown:  # the spaces before the columns given up: to the others
                needs = [n if w else 0 for n, w in zip(needs, widths, strict=True)]
                widths = column_widths(needs, max(0, width - used - 1))
            self.widths = widths
            self._width = width
        return self.widths

    def column_at(self, x: int, width: int) -> str | None:
        """The column under header offset ``x`` at a table ``width``."""
        pos = 1
        for col, w in zip(COLUMNS, self.fit(width), strict=True):
            if w and pos <= x < pos + w + 1:
                return col.key
            pos += w + 1 if w else 0
        return None

    def column_x(self, column: str, width: int) -> int | None:
        """Where ``column`` starts in the header at a table ``width`` (None: hidden)."""
        pos = 1
        for col, w in zip(COLUMNS, self.fit(width), strict=True):
            if col.key == column:
                return pos if w else None
            pos += w + 1 if w else 0
        return None


def fit_cell(text: str, width: int, *, right: bool = False, keep_end: bool = False) -> str:
    """``text`` padded or cut to ``width`` cells (``keep_end``: cut at the start)."""
    if width <= 0:
        return ""
    n = cell_len(text) if not text.isascii() else len(text)
    if n > width:
        if width == 1:
            return "…"
        if keep_end:
            tag = _SET_TAG.match(text)  # "set 1/2 …": the one part its rows differ in
            if tag and width >= 2 * len(tag.group(1)) + 2:
                return tag.group(1) + " " + fit_cell(
                    text[tag.end():], width - len(tag.group(1)) - 1, keep_end=True)
            tail = text[-(width - 1):]
            while cell_len(tail) > width - 1:
                tail = tail[1:]
            return "…" + tail
        return set_cell_size(text, width - 1) + "…" if not text.isascii() else \
            text[: width - 1] + "…"
    pad = " " * (width - n)
    return pad + text if right else text + pad


def cut_for(column: int) -> dict[str, bool]:
    """How column ``column`` is cut and aligned (``fit_cell`` keywords)."""
    return {"right": COLUMNS[column].numeric, "keep_end": column == _SUBJECT}

