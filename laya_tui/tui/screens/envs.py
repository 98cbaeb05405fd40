"""The ``v`` screen: what differs between the environments of an ``--env`` run, cell by
cell (the report's ``env_comparison``, :mod:`laya_tui.report.envcompare`), kept current
while cells finish. Enter on a row jumps to that cell in the probe tree."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from laya_tui.report.envview import (
    fmt,
    headline,
    one_line,
    state_text,
    timing_shown,
    version_rows,
)
from laya_tui.tui.model import Changes
from laya_tui.tui.widgets.footer import KeyFooter

if TYPE_CHECKING:
    from laya_tui.core.report_types import EnvComparisonDict, EnvInfoDict
    from laya_tui.tui.app import LayaApp

STYLE = {"regression": "red", "improvement": "green", "status": "yellow",
         "diagnostic": "yellow", "note": "dim", "tolerance": "", "timing": "dim"}


def env_rows(section: EnvComparisonDict | None) -> list[tuple[str, str, str, str, str]]:
    """``(cell id, what, reference, candidate, class)`` rows of every candidate: status and
    first-diagnostic changes, regressions, improvements, notes, tolerance, timing."""
    rows: list[tuple[str, str, str, str, str]] = []
    for cand in section["candidates"] if section else ():
        env = cand["env"]
        changed = {i["probe"]: i for i in cand["statuses"]}
        changed.update({i["probe"]: i for i in cand["diagnostics"]})
        for pid, i in sorted(changed.items()):
            what = "status" if i["before"]["status"] != i["after"]["status"] else "diagnostic"
            rows.append((f"{pid}@{env}", what, state_text(i["before"]),
                         state_text(i["after"]), what))
        for cls, items in (("regression", cand["regressions"]),
                           ("improvement", cand["improvements"]), ("note", cand["notes"])):
            for item in items:
                if item["change"] == "status":
                    continue  # already a status row
                rows.append((f"{item['probe']}@{env}", f"{item['change']} {item['kind']}",
                             "", item["message"], cls))
        for t in cand["tolerance"]:
            rows.append((f"{t['probe']}@{env}", f"tolerance {t['subject']}", fmt(t["before"]),
                         f"{fmt(t['after'])} (limit {fmt(t['limit'])})", "tolerance"))
        for d in timing_shown(cand)[:20]:
            rows.append((f"{d['probe']}@{env}", f"timing {d['subject']}",
                         f"{d['before']:.3g} s", f"{d['after']:.3g} s  x{d['ratio']:.2f}",
                         "timing"))
    return rows


class EnvScreen(Screen[None]):
    """Versions side by side, then one row per difference between the environments."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,v", "back", "Back")]

    @property
    def laya(self) -> LayaApp:
        return self.app  # type: ignore[return-value]

    DEFAULT_CSS = """
    EnvScreen #env-versions { height: auto; max-height: 12; }
    EnvScreen #env-changes { height: 1fr; }
    EnvScreen #env-detail { height: auto; max-height: 6; border-top: solid $panel; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[tuple[str, str, str, str, str]] = []

    def compose(self) -> ComposeResult:
        yield Static("environments", id="crumbs")
        yield Static(id="env-versions")
        yield DataTable(id="env-changes", cursor_type="row", zebra_stripes=True)
        yield Static(id="env-detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#env-changes", DataTable)
        w = self.app.size.width
        cell, what = min(36, max(18, w * 3 // 10)), min(20, max(10, w // 8))
        rest = max(20, w - 8 - cell - what)
        for label, width in (("cell", cell), ("what", what), ("reference", rest * 2 // 5),
                             ("candidate", rest - rest * 2 // 5)):
            table.add_column(label, width=width)
        self.refresh_view()
        table.focus()

    def envs_info(self) -> dict[str, EnvInfoDict]:
        """The environments' interpreters and versions: the live run's, else the report's."""
        envs = getattr(self.laya.gate_settings, "envs", None)
        if envs:
            return dict(envs)
        report = self.laya.report_info["report"] if self.laya.report_info else None
        saved = report.get("envs") if report is not None else None
        return dict(saved) if isinstance(saved, dict) else {}

    def section(self) -> EnvComparisonDict | None:
        """The comparison over the results the dashboard holds now."""
        from laya_tui.report.envcompare import compare_envs

        margin = getattr(self.laya.gate_settings, "tolerance_margin", None)
        kwargs = {"margin": margin} if isinstance(margin, float) else {}
        return compare_envs(self.laya.model.results(), self.envs_info(), **kwargs)

    def refresh_view(self) -> None:
        """Recompute the comparison and redraw the versions and the rows."""
        section = self.section()
        crumbs, versions = self.query_one("#crumbs", Static), self.query_one("#env-versions",
                                                                             Static)
        table = self.query_one("#env-changes", DataTable)
        table.clear()
        self._rows = env_rows(section)
        if section is None:
            if self._show_nodes(crumbs, versions):  # --cluster: the nodes side by side
                return
            crumbs.update("environments: nothing to compare yet (run with two --env NAME="
                          "PYTHON; the comparison fills in as cells of both finish)")
            versions.update("")
            return
        crumbs.update("environments: " + "; ".join(headline(c) for c in section["candidates"]))
        grid = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
        grid.add_column("")
        for name in section["envs"]:
            grid.add_column(f"@{name}")
        small = self.app.size.height < 36  # a small terminal: only what differs
        width = max(12, (self.app.size.width - 20) // max(1, len(section["envs"])) - 2)
        for key, vals, differs in version_rows(section, self.envs_info()):
            if small and not differs:
                continue
            style = "bold yellow" if differs else ""
            grid.add_row(key, *(Text(one_line(fmt(v), width), style=style, no_wrap=True,
                                     overflow="ellipsis") for v in vals))
        versions.update(grid)
        for i, (pid, what, before, after, cls) in enumerate(self._rows):
            style = STYLE.get(cls, "")
            table.add_row(Text(pid), Text(what, style=style), Text(one_line(before, 200)),
                          Text(one_line(after, 300), style=style), key=f"{i}|{pid}")

    def _show_nodes(self, crumbs: Static, versions: Static) -> bool:
        """Under ``--cluster``: the nodes the cells ran on, versions side by side (what
        differs in bold); False when no cell ran on a node."""
        from laya_tui.report.views.nodes import node_rows

        names, rows = node_rows(self.laya.model.results())
        if not names:
            return False
        crumbs.update(f"nodes: the {len(names)} cluster node{'s' if len(names) > 1 else ''} "
                      "this run's cells ran on (--cluster); what differs is bold")
        grid = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
        grid.add_column("")
        for name in names:
            grid.add_column(name)
        width = max(12, (self.app.size.width - 20) // len(names) - 2)
        for key, vals, differs in rows:
            grid.add_row(key, *(Text(one_line(v, width), style="bold yellow" if differs
                                     else "", no_wrap=True, overflow="ellipsis")
                                for v in vals))
        versions.update(grid)
        return True

    def apply_changes(self, changes: Changes) -> None:
        """A cell finished: the comparison may have changed."""
        if changes.finished or changes.structure:
            self.refresh_view()

    @on(DataTable.RowHighlighted, "#env-changes")
    def _moved(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted row in full: its cell, and both sides unabridged."""
        i = event.cursor_row
        if not 0 <= i < len(self._rows):
            self.query_one("#env-detail", Static).update("")
            return
        pid, what, before, after, _ = self._rows[i]
        text = Text(f"{pid}  {what}\n", style="bold")
        if before:
            text.append("reference: ", style="dim").append(before + "\n")
        text.append("candidate: " if before else "", style="dim").append(after)
        self.query_one("#env-detail", Static).update(text)

    @on(DataTable.RowSelected, "#env-changes")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        pid = str(event.row_key.value or "").partition("|")[2]
        if pid in self.laya.model.probes:
            self.laya.go_to(("probe", pid))

    def action_back(self) -> None:
        self.app.pop_screen()
