"""The full detail of one signal, or of one probe's failure (the last step of the drill-down)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from laya_tui.report.views.text import printable
from laya_tui.tui.model import Changes
from laya_tui.tui.widgets.detail import DetailPane
from laya_tui.tui.widgets.footer import KeyFooter

if TYPE_CHECKING:
    from laya_tui.tui.app import LayaApp


class SignalScreen(Screen[None]):
    """One signal (``key``), or one probe (``probe``: a failure with no failing signal,
    such as a crash), everything about it; ``o`` opens its call site in ``$EDITOR``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,h", "back", "Back"),
        Binding("o", "open_editor", "Edit site"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
        Binding("s", "sort_table", "Sort table", show=False),
    ]

    def __init__(self, key: str | None = None, *, probe: str | None = None) -> None:
        super().__init__(classes="signal-screen")
        self.key = key
        self.probe = probe

    @property
    def laya(self) -> LayaApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        model = self.laya.model
        row = model.rows.get(self.key) if self.key is not None else None
        if row is not None:
            title = f"{row.probe}  ›  {row.sig.kind}  {row.sig.subject or ''}"
        elif self.probe is not None:
            title = f"{self.probe}  ›  {model.probes[self.probe].status}" \
                if self.probe in model.probes else self.probe
        else:
            title = self.key or ""
        yield Static(printable(title), id="crumbs", markup=False)
        yield DetailPane(full=True, id="full-detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._show()
        self.query_one(DetailPane).focus()

    def _show(self) -> None:
        model = self.laya.model
        pane = self.query_one(DetailPane)
        if self.key is None:
            st = model.probes.get(self.probe or "")
            if st is None:
                pane.show_text("this probe is gone")
            else:
                pane.show_probe(st, self.laya.workspace)
            return
        row = model.rows.get(self.key)
        if row is None:
            pane.show_text("this signal is gone: the probe's latest run did not emit it")
            return
        pane.show_signal(row, model.probes.get(row.probe), self.laya.workspace)

    def apply_changes(self, changes: Changes) -> None:
        """Refresh when this signal (or probe) changed or went away."""
        if self.key is None:
            if self.probe in changes.probes:
                self._show()
        elif any(r.key == self.key for r in (*changes.updated, *changes.removed)):
            self._show()

    def rerun_targets(self) -> list[str]:
        """``r`` here re-runs the probe of this signal."""
        if self.key is None:
            return [self.probe] if self.probe else []
        row = self.laya.model.rows.get(self.key)
        return [row.probe] if row else []

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_scroll(self, delta: int) -> None:
        pane = self.query_one(DetailPane)
        pane.scroll_relative(y=delta, animate=False)

    def action_sort_table(self) -> None:
        """Sort a detail's table (the gap table) by its next column, then its own order."""
        from laya_tui.tui.widgets.detail import TABLE_SORT

        col = TABLE_SORT[0]
        TABLE_SORT[0] = 0 if col is None else (col + 1 if col < 6 else None)
        self._show()

    def action_open_editor(self) -> None:
        row = self.laya.model.rows.get(self.key) if self.key is not None else None
        self.laya.open_site(row)
