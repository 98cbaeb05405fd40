"""The ``?`` help screen: every key of the app and the overview (from their bindings), how to
move, and what the status and matrix marks mean. It fits the terminal (80x24 too) and
scrolls with the arrows, j/k and the page keys."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from laya_tui.report.views.legend import LIVE_MARKS, MATRIX_LEGEND, STATE_LEGEND

NAVIGATION = [
    ("↑ ↓  /  k j", "move in the tree, the table or the matrix"),
    ("h l  (matrix)", "move left / right between cells"),
    ("g G", "first / last row"),
    ("Enter  /  l", "drill down: family → probes → signals → one signal; on a failing "
                    "probe: its failure"),
    ("Esc  /  h", "clear the filter, else back up one level"),
    ("Tab", "switch between the tree and the table"),
    ("ctrl+p", "command palette: every action, and jump to any probe by id"),
    ("click a column header", "sort by that column (again: reverse)"),
]
HINT = "↑↓ j k PgUp PgDn scroll  ·  Esc or ? closes"


def _keys(binding: Binding) -> str:
    return " / ".join(k.replace("question_mark", "?").replace("slash", "/")
                      for k in binding.key.split(","))


def _table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold underline",
                  show_header=False, box=None, padding=(0, 1), expand=True)
    table.add_column(style="bold", no_wrap=True, max_width=24)
    table.add_column(ratio=1)
    for keys, what in rows:
        table.add_row(Text(keys), Text(what))
    return table


class HelpBody(VerticalScroll, can_focus=True):
    """The help text, focusable so that it scrolls from the keyboard."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "scroll_down", "Down", show=False),
        Binding("k,up", "scroll_up", "Up", show=False),
        Binding("g,home", "edge(0)", "Top", show=False),
        Binding("G,end", "edge(1)", "Bottom", show=False),
    ]

    def action_edge(self, end: int) -> None:
        if end:
            self.scroll_end(animate=False)
        else:
            self.scroll_home(animate=False)


class HelpScreen(ModalScreen[None]):
    """Keys and what they do, and the legend of the marks."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def __init__(self, bindings: list[Binding], *, off: frozenset[str] = frozenset(),
                 why_off: str | None = None) -> None:
        super().__init__()
        self.bindings = bindings
        self.off = off
        self.why_off = why_off

    def compose(self) -> ComposeResult:
        keys: list[tuple[str, str]] = []
        seen = set()
        for b in self.bindings:
            if b.action in seen or not b.description:
                continue
            seen.add(b.action)
            what = b.tooltip or b.description
            if b.action in self.off:
                what += "  (off: a saved report)"
            keys.append((_keys(b), what))
        body = Group(
            Text(HINT, style="dim"), Text(""),
            _table("keys", keys), Text(""),
            _table("moving around", NAVIGATION), Text(""),
            _table("cell state (tree, summary, every output)", [*STATE_LEGEND, *(
                (m.label, m.meaning) for m in LIVE_MARKS.values())]), Text(""),
            _table("lowering matrix cells (m)", list(MATRIX_LEGEND)))
        with HelpBody(id="help-body"):
            yield Static(body, id="help-text")

    def on_mount(self) -> None:
        self.query_one(HelpBody).focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
