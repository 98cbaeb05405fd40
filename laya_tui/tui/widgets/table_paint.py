"""The signal table's lines as strips: its header, a row, the text of an empty table.

Drawn in the styles of the table's component classes (``signal-table--*``), each looked up
once until the styles change; what the table shows (rows, widths, cursor, sort) is passed
in (docs/architecture.md, 'The dashboard').
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from laya_tui.core.signals import KINDS
from laya_tui.report.views.signals import COLUMNS
from laya_tui.tui.widgets.table_layout import cut_for, fit_cell, row_text

if TYPE_CHECKING:
    from laya_tui.tui.widgets.signal_table import SignalTable

_KINDS = frozenset(KINDS)
_CUTS = [cut_for(i) for i in range(len(COLUMNS))]
#: The table's component classes: the styles its lines are drawn in.
PAINT_CLASSES = frozenset({
    "signal-table--header", "signal-table--header-sorted", "signal-table--cursor",
    "signal-table--failing", "signal-table--empty", *(f"signal-table--kind-{k}" for k in KINDS)})


class TablePaint:
    """Strips of the signal table, in the styles ``style_of("signal-table--NAME")`` gives
    (cached)."""

    def __init__(self, style_of: Callable[[str], Style]) -> None:
        self._style_of = style_of
        self._styles: dict[str, Style] = {}

    def forget_styles(self) -> None:
        """The table's styles changed (a focus change, a new theme): look them up again."""
        self._styles = {}

    def style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self._style_of(f"signal-table--{name}")
        return style

    def line(self, table: SignalTable, y: int, base: Style) -> Strip:
        """Line ``y`` of ``table`` over the style ``base``: the header, a row, or why the
        table is empty."""
        width = table.size.width
        widths = table.layout_cols.fit(width)
        if y == 0:
            return self.header(widths, width, base, sort_column=table.sort_column,
                               reverse=table.sort_reverse)
        index = int(table.scroll_y) + y - 1
        row = table.order.at(index)
        if row is None:
            if index == 0 and not len(table.order):
                return self.empty(table.busy_text() or table.empty_text, width, base)
            return Strip.blank(width, base)
        cells = row_text(row)
        if table.layout_cols.note(row, cells):
            table.call_later(table.refresh)  # a column the sample left out: draw it too
        return self.row(cells, widths, width, base, failing=row.failing,
                        cursor=index == table.cursor)

    def empty(self, text: str, width: int, base: Style) -> Strip:
        """The one line of an empty table: ``text`` (why it is empty)."""
        return Strip([Segment(fit_cell(" " + text, width), base + self.style("empty"))], width)

    def row(self, cells: Sequence[str], widths: Sequence[int], width: int, base: Style, *,
            failing: bool, cursor: bool) -> Strip:
        """A row's ``cells`` in columns ``widths`` wide (0: hidden); the kind in its
        colour unless the cursor is on the row."""
        line_style = base
        if failing:
            line_style = line_style + self.style("failing")
        if cursor:
            line_style = line_style + self.style("cursor")
        segments = [Segment(" ", line_style)]
        for i, (w, text) in enumerate(zip(widths, cells, strict=True)):
            if not w:
                continue
            style = line_style
            if i == 0 and not cursor and text in _KINDS:
                style = line_style + self.style(f"kind-{text}")
            segments.append(Segment(fit_cell(text, w, **_CUTS[i]), style))
            segments.append(Segment(" ", line_style))
        return Strip(segments).adjust_cell_length(width, line_style)

    def header(self, widths: Sequence[int], width: int, base: Style, *,
               sort_column: str | None, reverse: bool) -> Strip:
        """The column labels, the sorted one marked ▲ or ▼."""
        style = base + self.style("header")
        segments = [Segment(" ", style)]
        for col, w in zip(COLUMNS, widths, strict=True):
            if not w:
                continue
            label = col.label
            cstyle = style
            if col.key == sort_column:
                label = f"{label} {'▼' if reverse else '▲'}"
                cstyle = style + self.style("header-sorted")
            segments.append(Segment(fit_cell(label, w, right=col.numeric), cstyle))
            segments.append(Segment(" ", style))
        return Strip(segments).adjust_cell_length(width, style)
