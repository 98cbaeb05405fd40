"""The full detail of one signal (the last step of the drill-down)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from laya_tui.tui.model import Changes
from laya_tui.tui.widgets.detail import DetailPane
from laya_tui.tui.widgets.footer import KeyFooter

if TYPE_CHECKING:
    from laya_tui.tui.app import LayaApp


class SignalScreen(Screen[None]):
    """One signal, everything about it; ``o`` opens its call site in ``$EDITOR``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,h", "back", "Back"),
        Binding("o", "open_editor", "Edit site"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
    ]

    def __init__(self, key: str) -> None:
        super().__init__(classes="signal-screen")
        self.key = key

    @property
    def laya(self) -> LayaApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        row = self.laya.model.rows.get(self.key)
        title = f"{row.probe}  ›  {row.sig.get('kind')}  {row.sig.get('subject', '')}" if row \
            else self.key
        yield Static(title, id="crumbs")
        yield DetailPane(full=True, id="full-detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._show()
        self.query_one(DetailPane).focus()

    def _show(self) -> None:
        model = self.laya.model
        pane = self.query_one(DetailPane)
        row = model.rows.get(self.key)
        if row is None:
            pane.show_text("this signal is gone: the probe's latest run did not emit it")
            return
        pane.show_signal(row, model.probes.get(row.probe), self.laya.workspace)

    def apply_changes(self, changes: Changes) -> None:
        """Refresh when this signal changed or went away."""
        if any(r.key == self.key for r in (*changes.updated, *changes.removed)):
            self._show()

    def rerun_targets(self) -> list[str]:
        """``r`` here re-runs the probe of this signal."""
        row = self.laya.model.rows.get(self.key)
        return [row.probe] if row else []

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_scroll(self, delta: int) -> None:
        pane = self.query_one(DetailPane)
        pane.scroll_relative(y=delta, animate=False)

    def action_open_editor(self) -> None:
        self.laya.open_site(self.laya.model.rows.get(self.key))
