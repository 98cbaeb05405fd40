"""The signals table: a virtual, keyed, sortable and filterable table of signal rows.

Rows are kept by key; streaming rows are inserted at their sorted position (a bisect over
raw sort values, never the formatted text) and updated in place, so a burst of signals
costs O(log n) per row and only the visible lines are ever rendered. Filters, sorting
and scope changes re-select the rows once; results streaming in never rebuild the table.
"""

from __future__ import annotations

import time
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from laya_tui.core.signals import KINDS
from laya_tui.tui.format import human_bytes, leaf_name, number, one_line, short_site
from laya_tui.tui.messages import SignalChosen, SignalHighlighted, SortChanged
from laya_tui.tui.model import SignalRow


@dataclass(frozen=True)
class Column:
    """A table column: fixed ``width`` or a flexible share (``ratio``) of what is left."""

    key: str
    label: str
    width: int | None = None
    ratio: int = 1
    right: bool = False
    numeric: bool = False


COLUMNS: tuple[Column, ...] = (
    Column("kind", "kind", width=11),
    Column("subject", "subject", ratio=4),
    Column("count", "count", width=6, right=True, numeric=True),
    Column("bytes", "bytes", width=10, right=True, numeric=True),
    Column("reason", "reason", ratio=4),
    Column("site", "call site", ratio=3),
    Column("fix", "fix", ratio=4),
    Column("probe", "probe", ratio=3),
)
COLUMN_KEYS: tuple[str, ...] = tuple(c.key for c in COLUMNS)
#: streamed rows taken in per step (the time budget is checked between steps)
PENDING_CHUNK = 1024
#: seconds until rows still waiting are taken in (a timer: frames and input run between)
PENDING_TICK_S = 0.005
_KIND_ORDER = {k: i for i, k in enumerate(KINDS)}


def row_text(row: SignalRow) -> tuple[str, ...]:
    """A row's display text per column, formatted once (cached on the row until it changes).

    Only rows that are drawn (or searched) are formatted: streaming rows in costs no
    formatting, and the cache is a tuple of strings, which the garbage collector skips.
    """
    if row.cells is not None:
        return row.cells
    sig = row.sig
    kind = str(sig.get("kind", ""))
    reason = one_line(sig.get("reason"), 300)
    if not reason and kind == "tolerance" and sig.get("value") is not None:
        op = ">" if sig.get("passed") is False else "<="
        reason = f"{number(sig.get('value'))} {op} {number(sig.get('limit'))}"
    if not reason and kind == "timing" and sig.get("seconds") is not None:
        reason = f"{number(sig.get('seconds'))} s"
    if not reason and kind == "environment" and sig.get("value") is not None:
        reason = one_line(sig.get("value"), 300)
    count = sig.get("count")
    row.cells = (kind, one_line(sig.get("subject"), 200), "" if count is None else str(count),
                 human_bytes(sig.get("bytes")), reason, short_site(sig.get("site")),
                 one_line(sig.get("fix"), 300), leaf_name(row.probe))
    return row.cells


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else float("-inf")


def sort_value(row: SignalRow, column: str) -> Any:
    """The raw value a column sorts on (numbers as numbers, absent ones first)."""
    sig = row.sig
    if column == "kind":
        return _KIND_ORDER.get(str(sig.get("kind")), 99)
    if column in ("count", "bytes"):
        return _number(sig.get(column))
    if column == "site":
        return short_site(sig.get("site")).lower()
    if column == "probe":
        return leaf_name(row.probe).lower()
    return str(sig.get(column) or "").lower()


def haystack(row: SignalRow) -> str:
    """What the text filter searches: every column's raw text, lower-cased."""
    sig = row.sig
    site = sig.get("site")
    where = f"{site.get('file', '')}:{site.get('line', '')}({site.get('func', '')})" \
        if isinstance(site, dict) else ""
    return (f"{sig.get('kind', '')}\x00{sig.get('subject', '')}\x00{sig.get('reason', '')}"
            f"\x00{where}\x00{sig.get('fix', '')}\x00{row.probe}").lower()


@dataclass(frozen=True)
class TableFilter:
    """Which rows show: scope predicate, one kind (or all), a text, only failing ones."""

    text: str = ""
    kind: str | None = None
    only_failing: bool = False

    def accepts(self, row: SignalRow) -> bool:
        if self.kind is not None and row.sig.get("kind") != self.kind:
            return False
        if self.only_failing and not row.failing:
            return False
        if self.text and self.text.lower() not in haystack(row):
            return False
        return True


class SignalTable(ScrollView, can_focus=True):
    """Signal rows by key; sorted on raw values; only visible lines rendered."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
        Binding("enter", "choose", "Drill down"),
        Binding("l", "choose", "Drill down", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "signal-table--header",
        "signal-table--header-sorted",
        "signal-table--cursor",
        "signal-table--failing",
        "signal-table--empty",
        *(f"signal-table--kind-{k}" for k in KINDS),
    }

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: dict[str, SignalRow] = {}
        self._order: list[tuple[Any, int, str]] = []  # ascending (sortval, seq, key)
        self._sortval: dict[str, tuple[Any, int, str]] = {}
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.filter = TableFilter()
        self.scope_test: Callable[[SignalRow], bool] = lambda row: True
        self.empty_text = "no signals"
        self._styles: dict[str, Style] | None = None
        self._widths: tuple[int, list[int]] | None = None
        self._cursor_key: str | None = None
        self._first_changed = 0  # see _after_change
        #: seconds of work per call taking streamed rows in (the app's event budget)
        self.budget = 0.008
        self._pending: deque[SignalRow] = deque()
        self._pending_scheduled = False
        #: called after rows waiting in :attr:`pending` were taken in on a later tick
        self.on_taken: Callable[[], None] | None = None

    # -- contents -----------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._order)

    def keys(self) -> list[str]:
        """Row keys in display order."""
        keys = [k for _, _, k in self._order]
        return keys[::-1] if self.sort_reverse else keys

    def key_at(self, index: int) -> str | None:
        n = len(self._order)
        if not 0 <= index < n:
            return None
        return self._order[n - 1 - index if self.sort_reverse else index][2]

    def index_of(self, key: str) -> int | None:
        sv = self._sortval.get(key)
        if sv is None:
            return None
        i = bisect_left(self._order, sv)
        return len(self._order) - 1 - i if self.sort_reverse else i

    def row(self, key: str) -> SignalRow | None:
        return self._rows.get(key)

    @property
    def cursor_key(self) -> str | None:
        return self.key_at(self.cursor)

    def column_values(self, column: str) -> list[str]:
        """Display text of one column, in display order (for tests and export)."""
        i = COLUMN_KEYS.index(column)
        return [row_text(self._rows[k])[i] for k in self.keys()]

    def _sort_value(self, row: SignalRow) -> tuple[Any, int, str]:
        if self.sort_column is None:
            return ((), row.seq, row.key)
        return (sort_value(row, self.sort_column), row.seq, row.key)

    def _insert(self, row: SignalRow) -> None:
        sv = self._sort_value(row)
        self._rows[row.key] = row
        self._sortval[row.key] = sv
        insort(self._order, sv)

    def _discard(self, key: str) -> None:
        sv = self._sortval.pop(key, None)
        if sv is None:
            return
        del self._rows[key]
        i = bisect_left(self._order, sv)
        if i < len(self._order) and self._order[i] == sv:
            del self._order[i]

    def accepts(self, row: SignalRow) -> bool:
        return self.scope_test(row) and self.filter.accepts(row)

    def rebuild(self, rows: Iterable[SignalRow]) -> None:
        """Re-select every row (scope, filter or sort changed): the one full rebuild."""
        keep = self._cursor_key
        self._pending.clear()  # ``rows`` holds every row of the scope, waiting ones too
        self._rows.clear()
        self._sortval.clear()
        self._order = []
        for row in rows:
            if self.accepts(row):
                sv = self._sort_value(row)
                self._rows[row.key] = row
                self._sortval[row.key] = sv
                self._order.append(sv)
        self._order.sort()
        self._after_change(keep, announce=True)

    def apply(self, added: Iterable[SignalRow], updated: Iterable[SignalRow],
              removed: Iterable[SignalRow]) -> None:
        """Stream rows in by key: insert, update in place, or drop (no rebuild).

        New rows are taken in for at most :attr:`budget` seconds per call; the rest wait
        in :attr:`pending` and are taken in on the next ticks (every row arrives, in
        order), so a burst of thousands never holds the event loop for one long pass.
        """
        keep = self._cursor_key
        updated, removed = list(updated), list(removed)
        if self._pending and (updated or removed):
            self._take_pending(None)  # rows waiting come before the changes that follow
        touched = False
        first = len(self._order)  # the first display index whose row may have changed
        for row in removed:
            if row.key in self._rows:
                self._discard(row.key)
                touched, first = True, 0
        for row in updated:
            if row.key in self._rows:
                self._discard(row.key)
            if self.accepts(row):
                self._insert(row)
            touched, first = True, 0
        self._pending.extend(added)
        taken = self._take_pending(self.budget if self.is_mounted else None)
        if taken is not None:
            touched, first = True, min(first, taken)
        if touched:
            self._changed(keep, first)
        self._schedule_pending()

    @property
    def pending(self) -> int:
        """Streamed rows not yet taken into the table (see :meth:`apply`)."""
        return len(self._pending)

    def _changed(self, keep: str | None, first: int) -> None:
        if self.sort_reverse:
            first = 0  # the end of the order is the top of the display
        self._first_changed = first
        self._after_change(keep, announce=keep is None or keep not in self._rows)

    def _schedule_pending(self) -> None:
        if self._pending and not self._pending_scheduled:
            self._pending_scheduled = True
            # a timer, not call_later: the loop runs other callbacks (and frames) first
            self.set_timer(PENDING_TICK_S, self._continue_pending)

    def _continue_pending(self) -> None:
        self._pending_scheduled = False
        keep = self._cursor_key
        taken = self._take_pending(self.budget)
        if taken is not None:
            self._changed(keep, taken)
            if self.on_taken is not None:
                self.on_taken()
        self._schedule_pending()

    def _take_pending(self, budget: float | None) -> int | None:
        """Take waiting rows in (all of them when ``budget`` is None); returns the first
        display index that changed, None when no row was added."""
        pending = self._pending
        deadline = None if budget is None else time.perf_counter() + budget
        first: int | None = None
        while pending:
            n = min(len(pending), PENDING_CHUNK)
            chunk = [pending.popleft() for _ in range(n)]
            at = self._add_rows(chunk)
            if at is not None:
                first = at if first is None else min(first, at)
            if deadline is not None and time.perf_counter() > deadline:
                break
        return first

    def _add_rows(self, added: list[SignalRow]) -> int | None:
        fresh = [row for row in added if row.key not in self._rows and self.accepts(row)]
        if not fresh:
            return None
        first = len(self._order)
        if len(fresh) > 64:  # a burst: one merge of two sorted runs beats many list inserts
            batch = []
            for row in fresh:
                sv = self._sort_value(row)
                self._rows[row.key] = row
                self._sortval[row.key] = sv
                batch.append(sv)
            batch.sort()
            tail_only = not self._order or batch[0] > self._order[-1]
            first = len(self._order) if tail_only else 0
            self._order.extend(batch)
            if not tail_only:  # arrival order streams in at the end: no sort needed then
                self._order.sort()
        else:
            for row in fresh:
                first = min(first, bisect_left(self._order, self._sort_value(row)))
                self._insert(row)
        return first

    def set_sort(self, column: str | None, reverse: bool = False) -> None:
        """Sort by ``column``'s raw values (None: arrival order)."""
        if column is not None and column not in COLUMN_KEYS:
            raise ValueError(f"unknown column {column!r}")
        self.sort_column, self.sort_reverse = column, reverse
        rows = [*self._rows.values(), *self._pending]
        self.rebuild(rows)
        self.post_message(SortChanged(column, reverse))

    def _after_change(self, keep: str | None, *, announce: bool) -> None:
        """Resize, keep the cursor on its row, repaint what may have changed.

        ``_first_changed`` (set by :meth:`apply`) is the first display index that may
        differ: rows streaming in below the window repaint nothing but the scrollbar.
        """
        first, self._first_changed = self._first_changed, 0
        size = Size(self.size.width, len(self._order) + 1)
        if size != self.virtual_size:
            # not ``self.virtual_size = size``: that reactive lays the whole screen out
            # again (every widget repainted) for what only moves this scrollbar
            self.set_reactive(SignalTable.virtual_size, size)
            self._scroll_update(size)
        old = self.cursor
        index = self.index_of(keep) if keep is not None else None
        new = index if index is not None else min(self.cursor, max(0, len(self._order) - 1))
        self.set_reactive(SignalTable.cursor, new)
        new_key = self.key_at(new)
        if announce or new_key != self._cursor_key:
            self._cursor_key = new_key
            self.post_message(SignalHighlighted(new_key))
        if new != old or first < int(self.scroll_y) + max(1, self.size.height - 1):
            self.refresh()

    # -- cursor -------------------------------------------------------------------------
    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self._order) - 1)) if self._order else 0

    def watch_cursor(self, value: int) -> None:
        key = self.key_at(value)
        if key != self._cursor_key:
            self._cursor_key = key
            self.post_message(SignalHighlighted(key))
        self._scroll_to_cursor()
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        height = max(1, self.size.height - 1)
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def action_cursor(self, delta: int) -> None:
        self.cursor += delta

    def action_page(self, direction: int) -> None:
        self.cursor += direction * max(1, self.size.height - 2)

    def action_edge(self, end: int) -> None:
        self.cursor = len(self._order) - 1 if end else 0

    def action_choose(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(SignalChosen(key))

    # -- mouse --------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            column = self._column_at(offset.x)
            if column is not None:
                if column == self.sort_column:
                    self.set_sort(column, not self.sort_reverse)
                else:
                    numeric = next(c.numeric for c in COLUMNS if c.key == column)
                    self.set_sort(column, numeric)
            return
        index = int(self.scroll_y) + offset.y - 1
        if 0 <= index < len(self._order):
            self.cursor = index
            if event.chain >= 2:
                self.action_choose()

    def _column_at(self, x: int) -> str | None:
        pos = 1
        for col, w in zip(COLUMNS, self._column_widths(self.size.width), strict=True):
            if pos <= x < pos + w + 1:
                return col.key
            pos += w + 1
        return None

    # -- rendering ----------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self._widths = None
        self.virtual_size = Size(event.size.width, len(self._order) + 1)

    def on_focus(self) -> None:
        self._styles = None
        self.refresh()

    def on_blur(self) -> None:
        self._styles = None
        self.refresh()

    def notify_style_update(self) -> None:
        self._styles = None
        super().notify_style_update()

    def _style(self, name: str) -> Style:
        if self._styles is None:
            self._styles = {}
        style = self._styles.get(name)
        if style is None:
            style = self.get_component_rich_style(f"signal-table--{name}", partial=True)
            self._styles[name] = style
        return style

    def _column_widths(self, width: int) -> list[int]:
        if self._widths is not None and self._widths[0] == width:
            return self._widths[1]
        fixed = sum(c.width or 0 for c in COLUMNS)
        gaps = len(COLUMNS) + 1
        flex = [c for c in COLUMNS if c.width is None]
        room = max(len(flex) * 4, width - fixed - gaps)
        total_ratio = sum(c.ratio for c in flex)
        widths, given = [], 0
        for c in COLUMNS:
            if c.width is not None:
                widths.append(c.width)
            else:
                w = max(4, room * c.ratio // total_ratio)
                widths.append(w)
                given += w
        if flex and given < room:  # hand the rounding remainder to the first flex column
            i = COLUMNS.index(flex[0])
            widths[i] += room - given
        self._widths = (width, widths)
        return widths

    @staticmethod
    def _fit(text: str, width: int, right: bool) -> str:
        if len(text) == cell_len(text):
            if len(text) > width:
                return text[: width - 1] + "…" if width > 1 else text[:width]
            return text.rjust(width) if right else text.ljust(width)
        if cell_len(text) > width:
            return set_cell_size(text, width - 1) + "…"
        pad = " " * (width - cell_len(text))
        return pad + text if right else text + pad

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        widths = self._column_widths(width)
        if y == 0:
            return self._header(widths, width, base)
        index = int(self.scroll_y) + y - 1
        key = self.key_at(index)
        if key is None:
            if index == 0 and not self._order:
                text = self._fit(" " + self.empty_text, width, False)
                return Strip([Segment(text, base + self._style("empty"))], width)
            return Strip.blank(width, base)
        row = self._rows[key]
        cells = row_text(row)
        line_style = base
        if row.failing:
            line_style = line_style + self._style("failing")
        if index == self.cursor:
            line_style = line_style + self._style("cursor")
        segments = [Segment(" ", line_style)]
        for col, w, text in zip(COLUMNS, widths, cells, strict=True):
            style = line_style
            if col.key == "kind" and index != self.cursor:
                style = line_style + self._style(f"kind-{text}") if text in _KIND_ORDER \
                    else line_style
            segments.append(Segment(self._fit(text, w, col.right), style))
            segments.append(Segment(" ", line_style))
        return Strip(segments).adjust_cell_length(width, line_style)

    def _header(self, widths: list[int], width: int, base: Style) -> Strip:
        style = base + self._style("header")
        segments = [Segment(" ", style)]
        for col, w in zip(COLUMNS, widths, strict=True):
            label = col.label
            cstyle = style
            if col.key == self.sort_column:
                label = f"{label} {'▼' if self.sort_reverse else '▲'}"
                cstyle = style + self._style("header-sorted")
            segments.append(Segment(self._fit(label, w, col.right), cstyle))
            segments.append(Segment(" ", style))
        return Strip(segments).adjust_cell_length(width, style)
