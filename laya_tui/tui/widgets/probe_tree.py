"""The probe tree: all probes -> families -> probe cells, each with its live status."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from laya_tui.tui.format import STATUS_GLYPH, human_seconds, leaf_name, one_line
from laya_tui.tui.model import ALL, ProbeState, RunModel, Scope

NodeData = Scope


StyleOf = Callable[[str], Style]
STATUSES = ("pending", "queued", "running", "ok", "failed", "error", "skipped", "crashed",
            "timeout")


def _plain(name: str) -> Style:
    return Style(dim=name in ("pending", "queued", "dim"))


def probe_label(st: ProbeState, now: float | None = None, style: StyleOf = _plain) -> Text:
    """``✓ name  0.42 s`` / ``▶ name  running 3.1 s`` / ``⊘ name  skipped: why``."""
    status = st.status
    text = Text()
    text.append(STATUS_GLYPH.get(status, "?") + " ", style=style(status))
    text.append(leaf_name(st.id))
    if status == "running":
        elapsed = (now if now is not None else time.time()) - (st.started_at or time.time())
        text.append(f"  running {max(0.0, elapsed):.1f} s", style=style("running"))
    elif status in ("queued", "pending"):
        text.append(f"  {status}", style=style("dim"))
    else:
        tag = "cached" if st.cached else human_seconds(st.seconds)
        if status == "ok":
            text.append(f"  {tag}", style=style("dim"))
        else:
            shown = "not examined" if status == "error" else status  # not a finding
            text.append(f"  {shown}", style=style(status))
            if tag:
                text.append(f" {tag}", style=style("dim"))
            if st.reason:
                text.append(f": {one_line(st.reason, 60)}", style=style("dim"))
    return text


def family_label(name: str, model: RunModel, style: StyleOf = _plain) -> Text:
    """``explain  2 · 1 failed`` with the worst statuses counted."""
    states = [model.probes[p] for p in model.families.get(name, [])]
    text = Text(name, style=Style(bold=True))
    text.append(f"  {len(states)}", style=style("dim"))
    for status in ("running", "crashed", "timeout", "error", "failed", "skipped"):
        n = sum(1 for s in states if s.status == status)
        if n:
            text.append(f" · {n} {'not examined' if status == 'error' else status}",
                        style=style(status))
    return text


class ProbeTree(Tree[NodeData]):
    """Probes grouped by family; labels updated in place as statuses change."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "Top", show=False),
        Binding("G", "last", "Bottom", show=False),
        Binding("enter", "select_cursor", "Drill down"),
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

    def status_style(self, name: str) -> Style:
        """The rich style of a status (from the ``probe-tree--STATUS`` component class)."""
        style = self._status_styles.get(name)
        if style is None:
            style = self.get_component_rich_style(f"probe-tree--{name}", partial=True)
            self._status_styles[name] = style
        return style

    def notify_style_update(self) -> None:
        self._status_styles = {}
        super().notify_style_update()

    def sync_structure(self) -> None:
        """Add nodes for families and probes that appeared (never removes or reorders)."""
        for fam, pids in self.model.families.items():
            fnode = self._families.get(fam)
            if fnode is None:
                label = family_label(fam, self.model, self.status_style)
                fnode = self.root.add(label, data=("family", fam), expand=True)
                self._families[fam] = fnode
            for pid in pids:
                if pid not in self._probes:
                    st = self.model.probes[pid]
                    label = probe_label(st, None, self.status_style)
                    self._probes[pid] = fnode.add_leaf(label, data=("probe", pid))
        self.root.expand()

    def update_probes(self, pids: set[str] | list[str]) -> None:
        """Relabel the given probes and their families."""
        now = time.time()
        fams = set()
        for pid in pids:
            node = self._probes.get(pid)
            st = self.model.probes.get(pid)
            if node is None or st is None:
                continue
            node.set_label(probe_label(st, now, self.status_style))
            fams.add(st.family)
        for fam in fams:
            if fam in self._families:
                self._families[fam].set_label(family_label(fam, self.model, self.status_style))

    def tick_running(self) -> None:
        """Refresh elapsed time on running probes (called once a second while a run goes)."""
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
