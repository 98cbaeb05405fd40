"""The ``?`` help screen: every key of the app and the overview, from their bindings."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

NAVIGATION = [
    ("↑ ↓  /  k j", "move in the tree, the table or the matrix"),
    ("h l  (matrix)", "move left / right between cells"),
    ("g G", "first / last row"),
    ("Enter  /  l", "drill down: family → probes → signals → one signal"),
    ("Esc  /  h", "back up one level"),
    ("Tab", "switch between the tree and the table"),
    ("ctrl+p", "command palette: every action, and jump to any probe by id"),
    ("click a column header", "sort by that column (again: reverse)"),
]


def _keys(binding: Binding) -> str:
    return " / ".join(k.replace("question_mark", "?").replace("slash", "/")
                      for k in binding.key.split(","))


class HelpScreen(ModalScreen[None]):
    """Keys and what they do."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def __init__(self, bindings: list[Binding]) -> None:
        super().__init__()
        self.bindings = bindings

    def compose(self) -> ComposeResult:
        table = Table(title="laya-tui keys", show_header=False, box=None, padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        seen = set()
        for b in self.bindings:
            if b.action in seen or not b.description:
                continue
            seen.add(b.action)
            table.add_row(_keys(b), b.tooltip or b.description)
        table.add_row("", "")
        for keys, what in NAVIGATION:
            table.add_row(keys, what)
        with VerticalScroll(id="help-body"):
            yield Static(table)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
