"""One screen for a project with nothing configured: the hint, and ``q`` to quit.

Textual only, imported when the dashboard would start (never torch & co).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App


def hint_app(text: str) -> App[None]:
    """A Textual app showing ``text`` until q, Esc or Enter."""
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Footer, Header, Static

    class HintApp(App[None]):
        TITLE = "laya-tui: nothing to examine yet"
        CSS = "VerticalScroll { padding: 1 2; } #hint { width: 100%; }"
        BINDINGS = [("q", "quit", "Quit"), ("escape", "quit", "Quit"),
                    ("enter", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Header()
            with VerticalScroll():
                yield Static(text.removeprefix("laya-tui: "), id="hint", markup=False)
            yield Footer()

    return HintApp()


def show_hint(text: str) -> None:
    """Show ``text`` full screen until the user quits."""
    hint_app(text).run()
