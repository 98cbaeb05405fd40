"""The signals table: a virtual, keyed, sortable and filterable table of signal rows.

Only the visible lines are rendered. Which rows show, in which order, is a
:class:`~laya_tui.tui.widgets.table_rows.RowOrder`: the model's own row lists while nothing
is filtered or sorted (a scope change or a stream costs nothing per row), else a list built
in budgeted steps between frames and kept by bisection on raw sort values. The columns are
laid out by :class:`~laya_tui.tui.widgets.table_layout.ColumnLayout` (docs/architecture.md,
'The dashboard').
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from laya_tui.report.views.signals import COLUMN_KEYS, COLUMNS, SORT_KEYS
from laya_tui.tui.model import SignalRow
from laya_tui.tui.textual_fence import repaint_due, update_scrollbars
from laya_tui.tui.widgets.table_bands import BandedOrder, row_band, segment_id
from laya_tui.tui.widgets.table_build import SortKey
from laya_tui.tui.widgets.table_layout import ColumnLayout, row_text
from laya_tui.tui.widgets.table_paint import PAINT_CLASSES, TablePaint
from laya_tui.tui.widgets.table_rows import RowOrder, TableFilter

__all__ = ["COLUMN_KEYS", "SignalTable", "TableFilter", "TableMessage", "row_text"]

#: streamed rows taken in per step (the time budget is checked between steps)
PENDING_CHUNK = 1024
#: seconds until rows still waiting (or a build under way) get their next step: a timer,
#: so frames and input run between steps
PENDING_TICK_S = 0.005
#: seconds of one step of a build (a filter or a sort of every row): well under the 50 ms a
#: keypress may wait, over the streaming budget so 200,000 rows take few steps
BUILD_BUDGET_S = 0.015
#: steps of a build in a row that wait for a repaint due first (see SignalTable._continue)
YIELD_TO_PAINT = 2
#: seconds between two measurements of the columns while rows stream in
MEASURE_EVERY_S = 0.5


@dataclass
class TableMessage(Message):
    """A message a :class:`SignalTable` posts; its ``control`` is the table."""

    table: SignalTable

    @property
    def control(self) -> SignalTable:
        return self.table


class SignalTable(ScrollView, can_focus=True):
    """Signal rows in display order; sorted on raw values; only visible lines rendered."""

    @dataclass
    class SignalHighlighted(TableMessage):
        """The cursor moved to the row ``key`` (None: the table is empty)."""

        key: str | None

    @dataclass
    class SignalChosen(TableMessage):
        """Enter on a row: drill down to the full detail of signal ``key``."""

        key: str

    @dataclass
    class SortChanged(TableMessage):
        """The table is now sorted by ``column`` (None: arrival order)."""

        column: str | None
        reverse: bool

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
        Binding("enter", "choose", "Open", tooltip="open the signal's full detail"),
        Binding("l", "choose", "Drill down", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = set(PAINT_CLASSES)

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.order = RowOrder()
        self.order.seg_key = segment_id
        #: the default order: every probe's rows split by severity band (findings first)
        self.bands = BandedOrder()
        #: the row lists of the scope shown (the model's own; see RowOrder)
        self.segments_of: Callable[[], list[tuple[str, list[SignalRow]]]] = lambda: []
        #: a probe's discovery order (the order across probes of a filtered table)
        self.rank_of: Callable[[str], int] = lambda probe: 0
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.filter = TableFilter()
        self.empty_text = "no signals"
        self.layout_cols = ColumnLayout()
        self.paint = TablePaint(lambda name: self.get_component_rich_style(name, partial=True))
        self._paint_style: Style | None = None  # rich_style during one render_lines
        self._cursor_row: SignalRow | None = None
        self._first_changed = 0  # see _after_change
        #: seconds of work per step taking streamed rows in (the app's event budget)
        self.budget = 0.008
        self._pending: deque[SignalRow] = deque()
        self._deferred: list[tuple[list[SignalRow], list[SignalRow], list[SignalRow]]] = []
        self._scheduled = False
        self._yielded = 0  # steps in a row that waited for a repaint (_continue)
        self._measured_at = 0.0
        #: called after rows waiting (or a build) were taken in on a later tick
        self.on_taken: Callable[[], None] | None = None
        #: work in budgeted steps before the widget is mounted too (tests drive the steps)
        self.step_unmounted = False

    # -- contents -----------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.order)

    @property
    def building(self) -> bool:
        """A filtered or sorted list is being built (over several ticks)."""
        return self.order.building

    def busy_text(self) -> str:
        """``sorting… 40%`` / ``filtering… 12%`` while a build runs, else empty."""
        if not self.order.building:
            return ""
        what = "sorting" if self.sort_column is not None else "filtering"
        return f"{what}… {int(100 * self.order.progress)}%"

    def keys(self) -> list[str]:
        """Row keys in display order (tests, export: one pass over every row)."""
        return [r.key for r in self.order.shown()]

    def key_at(self, index: int) -> str | None:
        row = self.order.at(index)
        return row.key if row is not None else None

    def row_at(self, index: int) -> SignalRow | None:
        return self.order.at(index)

    def index_of(self, row: SignalRow) -> int | None:
        return self.order.index_of(row)

    @property
    def cursor_key(self) -> str | None:
        return self.key_at(self.cursor)

    @property
    def cursor_row(self) -> SignalRow | None:
        return self.order.at(self.cursor)

    def column_values(self, column: str) -> list[str]:
        """Display text of one column, in display order (for tests and export)."""
        i = COLUMN_KEYS.index(column)
        return [row_text(r)[i] for r in self.order.shown()]

    def accepts(self, row: SignalRow) -> bool:
        return self.filter.accepts(row)

    def _key_of(self) -> Callable[[SignalRow], SortKey]:
        """The key rows are listed under: ``(sort value, seq)`` sorted, else
        ``((band, probe rank), seq)`` (the segments' order)."""
        column = self.sort_column
        if column is None:
            rank = self.rank_of
            return lambda row: ((row_band(row), rank(row.probe)), row.seq)
        value = SORT_KEYS[column]
        return lambda row: (value(row.sig, row.probe), row.seq)

    def rebuild(self) -> None:
        """Re-select every row (scope, filter or sort changed): segments at once, or a list
        built over the next ticks."""
        keep = self._cursor_row
        self._pending.clear()  # the scope's lists hold every row, waiting ones too
        self._deferred.clear()
        segments = self.bands.segments(self.segments_of())
        column, order, filtered = self.sort_column, self.order, self.filter.active
        if not filtered and column is None:
            order.show_segments(segments)
            order.reverse = self.sort_reverse
            at_once = True
        else:  # the sort kept: shown again at once
            at_once = not filtered and order.restore(column, segments, self.sort_reverse)
        if at_once:
            self._measure()
            self._after_change(keep, announce=True)
            self._schedule()  # frees the list shown before, a slice per tick
            return
        if column is None or not filtered or not order.filter_shelf(
                column, segments, self.accepts, self.sort_reverse):
            source: Iterator[SignalRow] = (r for _, seg in segments for r in seg)
            order.begin(source, self.accepts if filtered else None, self._key_of(),
                        sort=column is not None, reverse=self.sort_reverse,
                        total=sum(len(s) for _, s in segments),
                        shelve=None if filtered else (column, segments))
        if self.is_mounted:  # the key's own frame first ("sorting… 0%"), the work after it
            self._after_change(keep, announce=False)
            self._schedule()
        else:
            self._step_build(keep, first=True)

    def _step_build(self, keep: SignalRow | None, first: bool = False) -> None:
        done = self.order.step(self._budget(build=True))
        if done:
            if self._deferred:
                self.order.forget_shelf()  # rows changed while it was sorted
            for added, updated, removed in self._deferred:
                self._apply_listed(added, updated, removed)
            self._deferred.clear()
            self._measure()
        elif first and self.order.listed:
            self._measure()
        if self.order.listed and not done:
            self._first_changed = 0  # a filter growing: what is shown changes
        # the detail follows the cursor's row: announced when the order is done (not on
        # every step of a sort, which would draw the same detail again each time)
        self._after_change(keep, announce=done)
        self._schedule()

    def apply(self, added: Iterable[SignalRow], updated: Iterable[SignalRow],
              removed: Iterable[SignalRow], *, structure: bool = False) -> None:
        """Rows streamed in, changed or went away (no rebuild).

        Unfiltered and unsorted, the rows are already in the model's lists: only the
        display is updated. Otherwise new rows are taken in for at most :attr:`budget`
        seconds per call; the rest wait in :attr:`pending` for the next ticks (every row
        arrives, in order), and changes that come during a build wait for its end.
        ``structure``: probes appeared (their lists join the scope's).
        """
        added, updated, removed = list(added), list(updated), list(removed)
        keep = self._cursor_row
        if added or updated or removed or structure:
            self.order.forget_shelf()  # a kept sort no longer holds every row in its place
        # the split by band follows every change at once, shown or not: a sort or filter
        # shown while rows stream in leaves no probe to split whole when it is cleared
        self.bands.moved(updated)  # a row whose band changed moves to its new one
        self.bands.removed(removed)  # out of their lists, not a new split of the probe
        # new rows ranked; a probe's new list taken as it is
        segments = self.bands.segments(self.segments_of())
        if self.order.building:
            self._deferred.append((added, updated, removed))
            return
        if not self.order.listed:
            # new rows may open a band of their probe (a segment of its own): O(probes)
            reverse = self.order.reverse
            self.order.show_segments(segments)
            self.order.reverse = reverse
            if removed or updated or self.order.reverse:
                first = 0
            else:  # the first row each probe got: where the display starts to differ
                first = self.order.first_index(added)
            self._maybe_measure(bool(added))
            self._first_changed = first
            self._after_change(keep, announce=keep is not None and self.index_of(keep) is None)
            return
        changed = self._apply_listed(added, updated, removed)
        if changed is not None:
            self._first_changed = 0 if self.order.reverse else changed
            self._maybe_measure(True)
            self._after_change(keep, announce=keep is not None and self.index_of(keep) is None)
        self._schedule()

    def _apply_listed(self, added: list[SignalRow], updated: list[SignalRow],
                      removed: list[SignalRow]) -> int | None:
        """Fold changes into the filtered/sorted list; the first storage index changed."""
        order = self.order
        first: int | None = None
        if self._pending and (updated or removed):
            self._take_pending(None)  # rows waiting come before the changes that follow
        if order.refold(updated, removed, self.accepts):
            first = 0
        self._pending.extend(added)
        taken = self._take_pending(self._budget())
        if taken is not None:
            first = taken if first is None else min(first, taken)
        return first

    def _budget(self, build: bool = False) -> float | None:
        """The time budget of one step (a build's at least BUILD_BUDGET_S); None (do it all)
        before the widget can step."""
        if not (self.is_mounted or self.step_unmounted):
            return None
        return max(self.budget, BUILD_BUDGET_S) if build else self.budget

    @property
    def pending(self) -> int:
        """Streamed rows not yet taken in, plus one while a build runs (see :meth:`apply`)."""
        return len(self._pending) + (1 if self.order.building else 0)

    def _schedule(self) -> None:
        if not self.is_mounted:
            self.order.sweep(None)
            return
        if (self._pending or self.order.building or self.order.trash) and not self._scheduled:
            self._scheduled = True
            # a timer, not call_later: the loop runs other callbacks (and frames) first
            self.set_timer(PENDING_TICK_S, self._continue)

    def _continue(self) -> None:
        self._scheduled = False
        if self.order.building and self._yielded < YIELD_TO_PAINT and \
                repaint_due(self.screen, self):
            # A repaint is due (the key's own frame, the last step's rows; not the table's
            # own after its last step, or a filter growing would wait for a frame at every
            # step): let it run in a loop pass of its own first. A step and a repaint in one
            # pass held the loop for both (Esc: the filter box hidden and the table
            # refocused, then a sort step).
            self._yielded += 1
            self._schedule()
            return
        self._yielded = 0
        keep = self._cursor_row
        if not (self.order.building or self._pending):
            self.order.sweep(self.budget)  # only lists no longer shown are left to free
            self._schedule()
            return
        if self.order.building:
            self._step_build(keep)
        elif self._pending:
            taken = self._take_pending(self.budget)
            if taken is not None:
                self._first_changed = 0 if self.order.reverse else taken
                self._maybe_measure(True)
                self._after_change(keep, announce=keep is not None and
                                   self.index_of(keep) is None)
        if self.on_taken is not None:
            self.on_taken()
        passes = getattr(self.app, "loop_pass", None)
        if passes is not None:
            passes.worked("build")  # the repaint this step asks for waits a moment
        self._schedule()

    def _take_pending(self, budget: float | None) -> int | None:
        """Take waiting rows in (all of them when ``budget`` is None); returns the first
        storage index that changed, None when no row was added."""
        return self.order.take(self._pending, self.accepts, budget, PENDING_CHUNK)

    def set_sort(self, column: str | None, reverse: bool = False) -> None:
        """Sort by ``column``'s raw values (None: arrival order)."""
        if column is not None and column not in COLUMN_KEYS:
            raise ValueError(f"unknown column {column!r}")
        self.sort_column, self.sort_reverse = column, reverse
        self.rebuild()
        self.post_message(self.SortChanged(self, column, reverse))

    def _measure(self) -> None:
        self._measured_at = time.monotonic()
        if self.layout_cols.measure(len(self.order), self.order.at):
            self.refresh()

    def _maybe_measure(self, grew: bool) -> None:
        if grew and (len(self.order) <= 2 * PENDING_CHUNK or
                     time.monotonic() - self._measured_at > MEASURE_EVERY_S):
            self._measure()

    def _after_change(self, keep: SignalRow | None, *, announce: bool) -> None:
        """Resize, keep the cursor on its row, repaint what may have changed.

        ``_first_changed`` (set by :meth:`apply`) is the first display index that may
        differ: rows streaming in below the window repaint nothing but the scrollbar.
        """
        first, self._first_changed = self._first_changed, 0
        n = len(self.order)
        size = Size(self.size.width, n + 1)
        if size != self.virtual_size:
            # not ``self.virtual_size = size``: that reactive lays the whole screen out
            # again (every widget repainted) for what only moves this scrollbar
            self.set_reactive(SignalTable.virtual_size, size)
            update_scrollbars(self, size)
        old = self.cursor
        index = self.order.index_of(keep) if keep is not None else None
        new = index if index is not None else min(self.cursor, max(0, n - 1))
        self.set_reactive(SignalTable.cursor, new)
        new_row = self.order.at(new)
        if announce or new_row is not self._cursor_row:
            self._cursor_row = new_row
            self.post_message(self.SignalHighlighted(self, new_row.key if new_row else None))
        if new != old or first < int(self.scroll_y) + max(1, self.size.height - 1):
            self.refresh()

    # -- cursor -------------------------------------------------------------------------
    def validate_cursor(self, value: int) -> int:
        n = len(self.order)
        return max(0, min(value, n - 1)) if n else 0

    def watch_cursor(self, value: int) -> None:
        row = self.order.at(value)
        if row is not self._cursor_row:
            self._cursor_row = row
            self.post_message(self.SignalHighlighted(self, row.key if row is not None else None))
        self._scroll_to_cursor()
        self.refresh()

    def select_row(self, row: SignalRow) -> bool:
        """Put the cursor on ``row`` (False: it is not shown)."""
        index = self.order.index_of(row)
        if index is None:
            return False
        self.cursor = index
        return True

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
        self.cursor = len(self.order) - 1 if end else 0

    def action_choose(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.SignalChosen(self, key))

    # -- mouse --------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            column = self.column_at(offset.x)
            if column is not None:
                if column == self.sort_column:
                    self.set_sort(column, not self.sort_reverse)
                else:
                    numeric = next(c.numeric for c in COLUMNS if c.key == column)
                    self.set_sort(column, numeric)
            return
        index = int(self.scroll_y) + offset.y - 1
        if 0 <= index < len(self.order):
            self.cursor = index
            if event.chain >= 2:
                self.action_choose()

    def column_at(self, x: int) -> str | None:
        """The column under content offset ``x`` of the header."""
        return self.layout_cols.column_at(x, self.size.width)

    def column_x(self, column: str) -> int | None:
        """Where ``column`` starts in the header (content offset), None when hidden."""
        return self.layout_cols.column_x(column, self.size.width)

    # -- rendering ----------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.order) + 1)

    def on_focus(self) -> None:  # the cursor's style differs with the focus
        self.paint.forget_styles()
        self.refresh()

    on_blur = on_focus

    def notify_style_update(self) -> None:
        self.paint.forget_styles()
        super().notify_style_update()

    def render_lines(self, crop: Region) -> list[Strip]:
        # the base style once per paint, not per line: rich_style walks every ancestor's
        # styles (about a third of a repaint's cost when taken per line)
        self._paint_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._paint_style = None

    def render_line(self, y: int) -> Strip:
        return self.paint.line(self, y, self._paint_style or self.rich_style)
