"""The ``i`` screen of ``show``/``diff``: where a saved report came from, the environment of
the machine that wrote it, and its gates as recorded."""

from __future__ import annotations

import json
from typing import ClassVar, TypedDict

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from laya_tui.core.report_types import ReportDict
from laya_tui.core.shapes import as_dict


class SavedReportInfo(TypedDict):
    """The saved report a ``show``/``diff`` dashboard shows: its label, its file and the
    report (None until a lazily read one is read)."""

    label: str
    path: str | None
    report: ReportDict | None


def _table(title: str, pairs: list[tuple[str, object]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None,
                  padding=(0, 2), title_style="bold underline")
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    for k, v in pairs:
        table.add_row(str(k), v if isinstance(v, str) else json.dumps(v, default=repr))
    return table


def render_report_info(info: SavedReportInfo) -> RenderableType:
    """Source, tool, environment (host, versions, probed facts) and gates of a report."""
    report = as_dict(info.get("report"))
    env = as_dict(report.get("environment"))
    tool = as_dict(report.get("tool"))
    parts: list[RenderableType] = [Text(str(info.get("label") or "saved report"), style="bold")]
    parts.append(_table("report", [(k, v) for k, v in (
        ("file", info.get("path")), ("schema", report.get("schema")),
        ("written", report.get("created")), ("by", " ".join(
            str(tool.get(k)) for k in ("name", "version") if tool.get(k))),
        ("seconds", as_dict(report.get("summary")).get("seconds"))) if v]))
    for key, title in (("host", "machine"), ("versions", "library versions"),
                       ("probed", "probed environment")):
        section = env.get(key)
        if isinstance(section, dict) and section:
            parts.append(_table(title, [(k, "—" if v is None else v)
                                        for k, v in section.items()]))
    gates = report.get("gates")
    if isinstance(gates, list) and gates:
        parts.append(_table("gates (as recorded)", [
            (str(g.get("name")), ("pass" if g.get("passed") else
                             f"FAIL ({len(g.get('failures') or [])})")
             + (f"  {g['description']}" if g.get("description") else ""))
            for g in gates if isinstance(g, dict)]))
    return Group(*parts)


class ReportInfoScreen(ModalScreen[None]):
    """A saved report's source and machine."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,i", "dismiss", "Close")]

    def __init__(self, info: SavedReportInfo) -> None:
        super().__init__()
        self.info = info

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(render_report_info(self.info), id="report-info")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
