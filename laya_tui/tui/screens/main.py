"""The overview: probe tree, signals table for the selected family or probe, detail pane."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Input, Static, Tree

from laya_tui.core.signals import KINDS
from laya_tui.tui.loop_pass import MAX_WAITS, later
from laya_tui.tui.model import ALL, Changes, Scope
from laya_tui.tui.textual_fence import PacedScreen
from laya_tui.tui.widgets.detail import DetailPane
from laya_tui.tui.widgets.footer import KeyFooter
from laya_tui.tui.widgets.probe_tree import ProbeTree, is_failing
from laya_tui.tui.widgets.signal_table import COLUMN_KEYS, SignalTable, TableFilter
from laya_tui.tui.widgets.summary import SummaryBar

if TYPE_CHECKING:
    from textual.widget import AwaitMount

    from laya_tui.tui.app import LayaApp

SORT_CYCLE: tuple[str | None, ...] = (None, *COLUMN_KEYS)
#: The tree takes what its labels need, up to this share of the terminal's width.
TREE_SHARE = 0.4
TREE_MIN = 20


class MainScreen(PacedScreen):
    """Families -> probes -> signals -> one signal's detail."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,h", "back", "Back",
                tooltip="back up one level (a filter first: Esc clears it)"),
        Binding("slash", "filter", "Filter", tooltip="filter signals by text in any column"),
        Binding("f", "toggle_failing", "Only failing", show=False,
                tooltip="toggle: only failing signals"),
        Binding("t", "cycle_kind", "Kind", show=False,
                tooltip="cycle the kind filter over the kinds present"),
        Binding("s", "cycle_sort", "Sort", show=False,
                tooltip="sort by the next column (on raw values)"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, tooltip="reverse the sort"),
        Binding("z", "toggle_tree", "Tree", show=False,
                tooltip="hide or show the probe tree (the table takes the whole width)"),
        Binding("m", "matrix", "Matrix", show=False,
                tooltip="lowering matrix of the tilelang family"),
        Binding("p", "runs", "Runs plot", show=False,
                tooltip="plot the selected probe's tolerance deltas and timings over runs"),
        Binding("o", "open_editor", "Edit site", show=False,
                tooltip="open the signal's call site in $EDITOR at its line"),
    ]

    #: Screen's own ``focused`` repaints the whole screen on every focus change (a full
    #: frame: every widget's lines cut and composed again, ~15 ms); the widgets that gain
    #: and lose the focus repaint themselves (Widget's focus and blur handlers), so nothing else
    #: on the screen needs it.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    def __init__(self) -> None:
        super().__init__(id="main")
        self.scope: Scope = ALL
        self._shown_once = False
        self.tree_shown = True
        self._detail_due = False  # a detail update waits for the next frame
        self._update_waits = 0  # times the screen's update let other work go first
        self._update_later: asyncio.TimerHandle | None = None  # the update waiting

    def update_due(self, update: Callable[[], None]) -> None:
        """Textual's screen update (its repaint timer, through the fence); right after a pump
        slice or the widgets' update it waits a moment (:mod:`laya_tui.tui.loop_pass`)."""
        passes = self.laya.loop_pass
        if self._update_later is not None:  # one update at a time: the timer's or the wait's
            self._update_later.cancel()
            self._update_later = None
        if passes.just_worked("paint") and self._update_waits < MAX_WAITS:
            self._update_waits += 1
            self._update_later = later(self.update_due, update)
            return
        self._update_waits = 0
        try:
            update()
        finally:
            passes.worked("paint")

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Runs before Screen's own handler (a subclass's handler comes first): the first
        time, skip its restyle of every widget, which were all styled as they mounted a
        moment ago and restyled on each later class change (a whole styling pass, ~a fifth
        of the time to the first frame). Later resumes (back from another screen) restyle
        as usual."""
        if not self._shown_once:
            self._shown_once = True
            event.refresh_styles = False

    @property
    def laya(self) -> LayaApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        model = self.laya.model
        yield SummaryBar(id="summary")
        with Horizontal(id="body"):
            yield ProbeTree(model, id="tree")
            with Vertical(id="right"):
                yield Static(id="table-status")
                yield SignalTable(id="signals")
                yield DetailPane(id="detail")
        yield KeyFooter(auto_focus_first=True)

    def on_mount(self) -> None:
        model = self.laya.model
        self.tree.sync_structure()
        self.table.segments_of = lambda: model.segments(self.scope)
        self.table.rank_of = lambda pid: model.probes[pid].rank if pid in model.probes else 0
        self.table.budget = self.laya.pump.budget
        self.table.on_taken = self._status_line  # rows taken in on a later tick (apply)
        self.table.rebuild()
        self.tree.focus()
        self._fit_tree()
        self.refresh_summary()
        self._status_line()
        self._update_detail()
        self.call_after_refresh(self._premount_filter)

    # -- widgets ------------------------------------------------------------------------
    @property
    def tree(self) -> ProbeTree:  # type: ignore[override]  # Textual's DOM tree: not used here
        return self.query_one("#tree", ProbeTree)

    @property
    def table(self) -> SignalTable:
        return self.query_one("#signals", SignalTable)

    @property
    def detail(self) -> DetailPane:
        return self.query_one("#detail", DetailPane)

    @property
    def filter_input(self) -> Input | None:
        """The filter box, once ``/`` has mounted it (one widget less at start-up)."""
        found = self.query("#filter")
        return found.first(Input) if found else None

    def on_resize(self, event: events.Resize) -> None:
        self._fit_tree()

    def _fit_tree(self) -> None:
        """Give the tree the width its labels need, up to TREE_SHARE of the terminal."""
        if not self.tree_shown:
            return
        width = self.size.width or self.app.size.width
        cap = max(TREE_MIN, int(width * TREE_SHARE))
        want = max(min(self.tree.width_needed(), cap), min(TREE_MIN, width // 3))
        tree = self.tree
        if tree.label_width != want:
            tree.styles.width = want
            tree.fit_labels(want)

    # -- run updates --------------------------------------------------------------------
    def apply_changes(self, changes: Changes) -> None:
        """Fold one coalesced batch into the widgets, by key."""
        if changes.structure:
            self.tree.sync_structure()
        if changes.probes:
            self.tree.update_probes(changes.probes)
        if changes.structure:
            self._fit_tree()
        if changes.added or changes.updated or changes.removed or changes.structure:
            self.table.apply(changes.added, changes.updated, changes.removed,
                             structure=changes.structure)
            self._status_line()
        elif changes.finished:
            self._status_line()  # the empty text depends on the probe's status
        self.refresh_summary()
        subject = self.detail.subject
        if subject is None:
            self._update_detail()
        elif subject[0] == "probe" and subject[1] in changes.probes:
            self._update_detail()
        elif subject[0] == "signal" and (
                any(r.key == subject[1] for r in changes.updated)
                or any(r.key == subject[1] for r in changes.removed)
                or changes.finished):
            self._update_detail()

    def refresh_summary(self) -> None:
        self.query_one(SummaryBar).show(self.laya.model, watching=self.laya.watching)
        self.laya.evaluate_gates()  # when the summary could not (many signals to read)

    def tick(self) -> None:
        """Once a second while probes run: elapsed times in the tree."""
        self.tree.tick_running()

    def _status_line(self) -> None:
        """The line above the table: the filter first (it hides rows: it must show at any
        width), then what is shown, how many rows, the sort."""
        t = self.table
        line = Text()
        if t.filter.active:
            line.append(f" filter: {t.filter.describe()} ", style="reverse bold")
            line.append(" Esc clears  ·  ", style="italic")
        what, name = self.scope
        line.append("all probes" if what == "all" else str(name), style="bold")
        line.append(f"  ·  {t.row_count:,} rows")
        busy = t.busy_text()
        if busy:
            line.append(f"  ·  {busy}", style="bold")
        if t.sort_column or t.sort_reverse:
            line.append(f"  ·  sort: {t.sort_column or 'arrival'} "
                        f"{'▼' if t.sort_reverse else '▲'}")
        if not self.tree_shown:
            line.append("  ·  z: tree", style="italic")
        status = self.query("#table-status")
        if not status:  # the app is closing: a table step's callback outlived the line
            return
        status.first(Static).update(line, layout=False)
        t.empty_text = self._empty_text()

    def _empty_text(self) -> str:
        model, t = self.laya.model, self.table
        if t.filter.active:
            return f"no signal here matches the filter ({t.filter.describe()}); Esc clears it"
        what, name = self.scope
        if what == "probe" and name in model.probes:
            st = model.probes[name]
            if st.status in ("pending", "queued", "running"):
                return "loading…" if model.replay else "no signals yet"
            if is_failing(st):
                return f"no signals: the probe {st.status} (Enter shows why)"
        return "no signals"

    def _update_detail(self) -> None:
        model, ws = self.laya.model, self.laya.workspace
        key = self.table.cursor_key
        what, name = self.scope
        prefer_probe = what == "probe" and (self.focused is not self.table or key is None)
        if prefer_probe and name in model.probes:
            self.detail.show_probe(model.probes[name], ws)
        elif key is not None and key in model.rows:
            row = model.rows[key]
            self.detail.show_signal(row, model.probes.get(row.probe), ws)
        elif not model.discovered:
            self.detail.show_text("loading the report…" if model.replay
                                  else "discovering probes…")
        else:
            self.detail.show_text("no signal selected")

    # -- tree ---------------------------------------------------------------------------
    @on(Tree.NodeHighlighted, "#tree")
    def _scope_moved(self, event: Tree.NodeHighlighted[Scope]) -> None:
        scope = event.node.data or ALL
        if scope != self.scope:
            self.scope = scope
            self.table.rebuild()
            self._status_line()
        self._update_detail()

    @on(Tree.NodeSelected, "#tree")
    def _drill_from_tree(self, event: Tree.NodeSelected[Scope]) -> None:
        event.stop()
        node = event.node
        what, name = node.data or ALL
        if what == "probe" or not node.children:
            self.table.focus()
            if what == "probe":
                self.open_failure(str(name))
            return
        node.expand()
        self.tree.move_cursor(node.children[0])

    def open_failure(self, pid: str) -> bool:
        """Enter on a failing probe: its first failing signal, full screen (the cursor on
        it in the table), or the probe's own failure (a crash, a timeout) when no signal
        says it. False when the probe is not failing."""
        st = self.laya.model.probes.get(pid)
        if st is None or not is_failing(st):
            return False
        from laya_tui.tui.screens.signal import SignalScreen

        row = st.first_failing()
        if row is not None:
            self.table.select_row(row)
            self.app.push_screen(SignalScreen(row.key))
        else:
            self.app.push_screen(SignalScreen(probe=pid))
        return True

    # -- table --------------------------------------------------------------------------
    def on_signal_table_signal_highlighted(self, event: SignalTable.SignalHighlighted) -> None:
        # after the frame with the cursor moved: the key shows at once, the detail follows
        if not self._detail_due:
            self._detail_due = True
            self.call_after_refresh(self._deferred_detail)

    def _deferred_detail(self) -> None:
        self._detail_due = False
        self._update_detail()

    def on_signal_table_signal_chosen(self, event: SignalTable.SignalChosen) -> None:
        from laya_tui.tui.screens.signal import SignalScreen

        if event.key in self.laya.model.rows:
            self.app.push_screen(SignalScreen(event.key))

    def on_signal_table_sort_changed(self, event: SignalTable.SortChanged) -> None:
        self._status_line()

    def on_descendant_focus(self) -> None:
        self._update_detail()

    # -- actions ------------------------------------------------------------------------
    def action_back(self) -> None:
        box = self.filter_input
        if box is not None and self.focused is box:
            box.value = ""
            box.add_class("-hidden")
            self.table.focus()
            return
        if self.table.filter.active and self.focused is not self.tree:
            self.clear_filter()
            return
        if self.focused is self.table:
            if self.tree_shown:
                self.tree.focus()
            return
        node = self.tree.cursor_node
        if node is not None and node.parent is not None:
            self.tree.move_cursor(node.parent)

    def clear_filter(self) -> None:
        """Every filter off (kind, text, only failing)."""
        box = self.filter_input
        if box is not None:
            with box.prevent(Input.Changed):
                box.value = ""
            box.add_class("-hidden")
        self._set_filter(text="", kind=None, only_failing=False)

    def _filter_box(self) -> tuple[Input, AwaitMount | None]:
        """The filter box, mounted hidden when it is not yet (and the await of that).

        It is the screen's first child: the compositor numbers a container's widgets from
        its last placement back, and the box's layer comes after the panes' when the box
        comes after them, so showing it would renumber every pane and repaint them all."""
        box = self.filter_input
        if box is not None:
            return box, None
        box = Input(placeholder="filter: text in any column (Enter keeps it, Esc clears)",
                    id="filter", classes="-hidden")
        return box, self.mount(box, before=0)

    def _premount_filter(self) -> None:
        """Mount the filter box, hidden, once the first frame is out: mounted by ``/``
        itself, its styling and the new layout cost that key about 60 ms before its frame
        (the first paint does not wait for it either way)."""
        self._filter_box()

    async def action_filter(self) -> None:
        box, mounting = self._filter_box()
        if mounting is not None:
            await mounting
        box.remove_class("-hidden")
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        self._set_filter(text=event.value)

    @on(Input.Submitted, "#filter")
    def _filter_kept(self, event: Input.Submitted) -> None:
        if not event.value:
            event.input.add_class("-hidden")
        self.table.focus()

    def _set_filter(self, **changes: object) -> None:
        t = self.table
        new: TableFilter = replace(t.filter, **changes)  # type: ignore[arg-type]
        if new == t.filter:
            return
        t.filter = new
        t.rebuild()
        self._status_line()

    def action_toggle_failing(self) -> None:
        self._set_filter(only_failing=not self.table.filter.only_failing)

    def action_cycle_kind(self) -> None:
        present = {k for st in self.laya.model.probes_in(self.scope)
                   for k, n in st.kinds.items() if n}
        kinds: list[str | None] = [None, *(k for k in KINDS if k in present)]
        current = self.table.filter.kind
        nxt = kinds[(kinds.index(current) + 1) % len(kinds)] if current in kinds else None
        self.set_kind(nxt)

    def set_kind(self, kind: str | None) -> None:
        """Show only ``kind`` (None: every kind)."""
        self._set_filter(kind=kind)

    def action_cycle_sort(self) -> None:
        t = self.table
        nxt = SORT_CYCLE[(SORT_CYCLE.index(t.sort_column) + 1) % len(SORT_CYCLE)]
        numeric = nxt in ("count", "bytes", "value")
        t.set_sort(nxt, numeric)

    def action_reverse_sort(self) -> None:
        t = self.table
        t.set_sort(t.sort_column, not t.sort_reverse)

    def action_toggle_tree(self) -> None:
        """Hide the tree (the table takes the whole width) or show it again."""
        self.tree_shown = not self.tree_shown
        self.tree.display = self.tree_shown
        if self.tree_shown:
            self.tree.label_width = None
            self._fit_tree()
        elif self.focused is self.tree:
            self.table.focus()
        self._status_line()

    def select_scope(self, scope: Scope) -> None:
        """Jump the tree (and so the table) to ``scope``."""
        if not self.tree_shown:
            self.action_toggle_tree()
        self.tree.select_scope(scope)
        self.tree.focus()

    def action_matrix(self) -> None:
        from laya_tui.tui.screens.matrix import MatrixScreen

        self.app.push_screen(MatrixScreen())

    def action_runs(self) -> None:
        pid = self.selected_probe()
        if pid is None:
            self.app.notify("select a probe (or one of its signals) to plot its runs",
                            severity="warning")
            return
        from laya_tui.tui.screens.runs import RunsScreen

        self.app.push_screen(RunsScreen(pid))

    def selected_probe(self) -> str | None:
        """The probe in focus: the tree's probe, or the highlighted signal's probe."""
        what, name = self.scope
        if what == "probe":
            return name
        key = self.table.cursor_key
        if key is not None and key in self.laya.model.rows:
            return self.laya.model.rows[key].probe
        return None

    def action_open_editor(self) -> None:
        key = self.table.cursor_key
        row = self.laya.model.rows.get(key) if key else None
        self.laya.open_site(row)
