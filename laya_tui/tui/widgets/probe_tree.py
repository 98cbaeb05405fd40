"""The probe tree: all probes -> families -> probe cells, each with its live status.

Labels are fitted to the tree's width: the status glyph and the status word stay, a long
name loses its middle (``add_ln…[c,fp32,gpu]``), and the reason fills what is left. The tree
asks for the width its labels need (:meth:`ProbeTree.width_needed`); the screen gives it that
much, up to a share of the terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from laya_tui.core.cellid import leaf_name
from laya_tui.core.signals import FAILING_STATUSES, LIVE_STATUSES, Status
from laya_tui.report.views.legend import (
    STATUS_MARKS,
    State,
    cell_state,
    not_run,
    state_mark,
)
from laya_tui.report.views.text import human_seconds, one_line
from laya_tui.tui.model import ALL, ProbeState, RunModel, Scope
from laya_tui.tui.textual_fence import grow_tree_line_cache, tree_line

NodeData = Scope
StyleOf = Callable[[str], Style]
STATUSES = (*(str(s) for s in STATUS_MARKS), "built")
#: Columns left of a label: the guides of a probe (depth 2) and of a family (guides + icon).
PROBE_INDENT, FAMILY_INDENT = 6, 5
#: The tree's own columns besides labels: its right border and its scrollbar.
TREE_CHROME = 2
#: A status tag counts as this wide in the width the tree needs (``not examined``), so the
#: width depends on the names only and a status coming in never resizes the tree.
TAG_CELLS = 12
#: Room for a family's short counts (`` 60 ✗14 ⊘20 ✹1``) in the width the tree needs.
FAMILY_COUNTS = 16


def _plain(name: str) -> Style:
    return Style(dim=name in ("pending", "queued", "dim"))


def elide_name(name: str, width: int) -> str:
    """A cell name in at most ``width`` cells: its param id whole when that fits
    (``add_ln…[c,fp32,gpu]``), else its middle cut out."""
    base, sep, param = name.partition("[")
    if cell_len(name) <= width or not sep or len(param) + 3 > width:
        return elide_middle(name, width)
    return base[: width - len(param) - 2] + "…[" + param


def elide_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its middle cut out (``add_ln…[c,fp32,gpu]``)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 3
    tail = width - 1 - head
    return text[:head] + "…" + text[len(text) - tail:]


#: ``{probe id: (its result, its state)}``: :func:`probe_state` of an ok lowering cell.
_STATES: dict[str, tuple[object, str]] = {}


def probe_state(st: ProbeState) -> str:
    """The cell's state (report.views.legend): an ok cell built but not run or not compared
    is not ok, a failed one whose probe raised could not be examined; live statuses as
    they are. Only a cell with a lowering signal is read further (the only kind that says
    a cell was not run)."""
    status = st.status
    if status == Status.OK:
        entry = st.report_entry
        if entry is not None and st.kinds.get("lowering"):
            hit = _STATES.get(st.id)
            if hit is None or hit[0] is not entry:  # each result read once (the header and
                hit = _STATES[st.id] = (entry, cell_state(entry))  # the tree ask often)
            return hit[1]
        return State.OK
    if status == Status.FAILED:
        return State.NOT_EXAMINED if st.error else State.FINDING
    if status == Status.ERROR:
        return State.NOT_EXAMINED
    return status


def _tag(st: ProbeState, now: float | None, replay: bool,
         state: str | None = None) -> tuple[str, str]:
    """``(tag, style name)``: what follows the name (seconds, a state word, a clock)."""
    status = st.status
    if status in LIVE_STATUSES:
        if replay:
            return "loading", "dim"
        if status == Status.RUNNING:
            elapsed = (now if now is not None else time.time()) - (st.started_at or time.time())
            return f"running {max(0.0, elapsed):.1f} s", "running"
        return status, "dim"
    state = state or probe_state(st)
    if state == State.OK:
        return ("cached" if st.cached else human_seconds(st.seconds)), "dim"
    mark = state_mark(state)
    return mark.word + (" · cached" if st.cached else ""), mark.css


def probe_label(st: ProbeState, now: float | None = None, style: StyleOf = _plain, *,
                width: int | None = None, replay: bool = False) -> Text:
    """``✓ name  0.42 s`` / ``▶ name  running 3.1 s`` / ``⊘ name  skipped: why`` /
    ``◐ name  built, not run: no GPU``, fitted to ``width`` cells (None: whole): the glyph
    and the tag stay, the name loses its middle, the reason takes what is left."""
    live = st.status in LIVE_STATUSES
    state = st.status if live else probe_state(st)
    mark = state_mark(state)
    glyph = "·" if replay and live else mark.glyph
    name = leaf_name(st.id)
    tag, tag_style = _tag(st, now, replay, state)
    if state in (State.NOT_RUN, State.NOT_COMPARED) and st.report_entry is not None:
        reason = not_run(st.report_entry) or ""
    else:
        reason = one_line(st.reason, 200) if not live and state != State.OK else ""
    text = Text()
    text.append(glyph + " ", style=style(mark.css if glyph != "·" else "dim"))
    if width is None:
        text.append(name)
        text.append(f"  {tag}", style=style(tag_style))
        if reason:
            text.append(f": {reason}", style=style("dim"))
        return text
    room = width - 2
    if cell_len(name) + 2 + len(tag) > room:
        tag = ""  # the name first: the glyph says the status
    name_room = room - (len(tag) + 2 if tag else 0)
    shown = elide_name(name, max(1, name_room))
    text.append(shown)
    if tag:
        text.append(f"  {tag}", style=style(tag_style))
    left = room - cell_len(shown) - (len(tag) + 2 if tag else 0)
    if reason and left >= 20:
        shown_reason = f": {reason}"
        if cell_len(shown_reason) > left:
            shown_reason = shown_reason[: left - 1] + "…"
        text.append(shown_reason, style=style("dim"))
    return text


def probe_need(st: ProbeState) -> int:
    """Cells a probe's label needs without its reason (the tag counted TAG_CELLS wide)."""
    return 2 + cell_len(leaf_name(st.id)) + 2 + TAG_CELLS


def family_label(name: str, model: RunModel, style: StyleOf = _plain, *,
                 width: int | None = None) -> Text:
    """``explain  2 · 1 finding``, the worst states counted in the words of the cells'
    own labels (views.legend); narrow: ``explain 2 ✗1``."""
    states = [probe_state(model.probes[p]) for p in model.families.get(name, [])]
    counts = [(s, states.count(s)) for s in _FAMILY_COUNTED]
    counts = [(s, n) for s, n in counts if n]
    if model.replay:
        counts = [(s, n) for s, n in counts if s != "running"]

    def said(s: str, n: int) -> str:
        word = state_mark(s).word
        return f"{n} {word}s" if s == State.FINDING and n != 1 else f"{n} {word}"

    words = "".join(f" · {said(s, n)}" for s, n in counts)
    text = Text(name, style=Style(bold=True))
    if width is None or cell_len(name) + 2 + len(str(len(states))) + len(words) <= width:
        text.append(f"  {len(states)}", style=style("dim"))
        for s, n in counts:
            text.append(f" · {said(s, n)}", style=style(state_mark(s).css))
        return text
    text.append(f" {len(states)}", style=style("dim"))
    for s, n in counts:
        text.append(f" {state_mark(s).glyph}{n}", style=style(state_mark(s).css))
    return text


#: The states a family's label counts, worst first (ok and built-not-run cells are not).
_FAMILY_COUNTED = (Status.RUNNING, State.CRASHED, State.TIMEOUT, State.NOT_EXAMINED,
                   State.FINDING, State.SKIPPED)


class ProbeTree(Tree[NodeData]):
    """Probes grouped by family; labels updated in place as statuses change."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "Top", show=False),
        Binding("G", "last", "Bottom", show=False),
        Binding("enter", "select_cursor", "Open",
                tooltip="drill down: a family to its probes, a probe to its signals"),
        Binding("l", "select_cursor", "Drill down", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = Tree.COMPONENT_CLASSES | {
        f"probe-tree--{s}" for s in (*STATUSES, "dim")}

    def __init__(self, model: RunModel, *, id: str | None = None) -> None:
        super().__init__("all probes", data=ALL, id=id)
        self.model = model
        self.auto_expand = False
        self.show_root = True
        self.guide_depth = 3
        self._families: dict[str, TreeNode[NodeData]] = {}
        self._probes: dict[str, TreeNode[NodeData]] = {}
        self._status_styles: dict[str, Style] = {}
        self._needs: dict[str, int] = {}
        self.label_width: int | None = None  # the width labels are fitted to
        self._focus_restyle = False  # the style update under way is for a focus change
        self._paint_style: Style | None = None  # rich_style during one render_lines
        self._painted_width = 0  # the width of the last resize Tree handled itself

    def status_style(self, name: str) -> Style:
        """The rich style of a status (from the ``probe-tree--STATUS`` component class)."""
        style = self._status_styles.get(name)
        if style is None:
            style = self.get_component_rich_style(f"probe-tree--{name}", partial=True)
            self._status_styles[name] = style
        return style

    def watch_has_focus(self, has_focus: bool) -> None:
        self._focus_restyle = True
        try:
            super().watch_has_focus(has_focus)
        finally:
            self._focus_restyle = False

    def notify_style_update(self) -> None:
        self._status_styles = {}
        if self._focus_restyle:
            # Tree's own update rebuilds every line and lays the screen out again; the
            # focus only changes colours (Tree's :focus rules, #tree:focus's border) and
            # the tree's line cache is keyed on the pseudo-classes: a repaint is enough,
            # and lines already drawn in this focus state come from the cache.
            Widget.notify_style_update(self)
            self.refresh()
            return
        super().notify_style_update()

    def render_lines(self, crop: Region) -> list[Strip]:
        # Tree.render_line takes rich_style for every line, each a walk over every
        # ancestor's styles (most of a repaint of the tree): once per paint here
        self._paint_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._paint_style = None

    def render_line(self, y: int) -> Strip:
        style = self._paint_style
        if style is None:
            return super().render_line(y)
        scroll_x, scroll_y = self.scroll_offset
        return tree_line(self, y + scroll_y, scroll_x, scroll_x + self.size.width, style)

    def on_resize(self, event: events.Resize) -> None:
        # Runs before Tree's own handler (a subclass's handler comes first), which clears
        # every cached line and lays the tree out again; the lines are cached by width, and
        # only the height changed when the panes beside it move (the filter box shown or
        # hidden): a repaint is enough then
        if event.size.width == self._painted_width and self._painted_width:
            event.prevent_default()  # Tree's handler is skipped
            grow_tree_line_cache(self, event.size.height)
            self.refresh()
            return
        self._painted_width = event.size.width  # Tree's handler runs next

    def width_needed(self) -> int:
        """Cells the tree needs to show every label without its reason: it depends on the
        names only, so it changes when probes appear, never when a status does."""
        families = max((FAMILY_INDENT + cell_len(f) + FAMILY_COUNTS for f in self._families),
                       default=0)
        probes = max(self._needs.values(), default=0)
        return max(families, probes, len("▼ all probes")) + TREE_CHROME

    def fit_labels(self, width: int) -> None:
        """Fit every label to a tree ``width`` cells wide."""
        self.label_width = width
        self.update_probes(list(self._probes), families=list(self._families))

    def _probe_label(self, st: ProbeState, now: float | None) -> Text:
        width = None if self.label_width is None else \
            self.label_width - TREE_CHROME - PROBE_INDENT
        return probe_label(st, now, self.status_style, width=width, replay=self.model.replay)

    def _family_label(self, fam: str) -> Text:
        width = None if self.label_width is None else \
            self.label_width - TREE_CHROME - FAMILY_INDENT
        return family_label(fam, self.model, self.status_style, width=width)

    def sync_structure(self) -> bool:
        """Add nodes for families and probes that appeared (never removes or reorders);
        True when any did."""
        grew = False
        for fam, pids in self.model.families.items():
            fnode = self._families.get(fam)
            if fnode is None:
                fnode = self.root.add(self._family_label(fam), data=("family", fam),
                                      expand=True)
                self._families[fam] = fnode
                grew = True
            for pid in pids:
                if pid not in self._probes:
                    st = self.model.probes[pid]
                    self._probes[pid] = fnode.add_leaf(self._probe_label(st, None),
                                                       data=("probe", pid))
                    self._needs[pid] = PROBE_INDENT + probe_need(st)
                    grew = True
        self.root.expand()
        return grew

    def update_probes(self, pids: set[str] | list[str], *,
                      families: list[str] | None = None) -> None:
        """Relabel the given probes and their families."""
        now = time.time()
        fams = set(families or ())
        for pid in pids:
            node = self._probes.get(pid)
            st = self.model.probes.get(pid)
            if node is None or st is None:
                continue
            node.set_label(self._probe_label(st, now))
            fams.add(st.family)
        for fam in fams:
            if fam in self._families:
                self._families[fam].set_label(self._family_label(fam))

    def tick_running(self) -> None:
        """Refresh elapsed time on running probes (called once a second while a run goes)."""
        if not self.model.replay:
            self.update_probes([st.id for st in self.model.running()])

    def select_scope(self, scope: Scope) -> bool:
        """Move the cursor to the node of ``scope``."""
        what, name = scope
        node: TreeNode[NodeData] | None = self.root
        if what == "family":
            node = self._families.get(name or "")
        elif what == "probe":
            node = self._probes.get(name or "")
            if node is not None and node.parent is not None:
                node.parent.expand()
        if node is None:
            return False
        self.move_cursor(node)
        return True

    def action_first(self) -> None:
        self.cursor_line = 0

    def action_last(self) -> None:
        self.cursor_line = self.last_line

    @property
    def scope(self) -> Scope:
        node = self.cursor_node
        return node.data if node is not None and node.data is not None else ALL


def is_failing(st: ProbeState) -> bool:
    """A probe whose Enter opens its failure: failed, not examined, crashed, timed out."""
    return st.status in FAILING_STATUSES
