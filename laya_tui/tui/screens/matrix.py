"""The lowering matrix of the tilelang family, with the selected cell's diagnostic."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from laya_tui.report.views.legend import MATRIX_LEGEND_SHORT
from laya_tui.tui.model import Changes
from laya_tui.tui.widgets.detail import DetailPane
from laya_tui.tui.widgets.footer import KeyFooter
from laya_tui.tui.widgets.matrix import LoweringMatrix

if TYPE_CHECKING:
    from laya_tui.tui.app import LayaApp

#: The matrix's legend (``report.views.legend``; ``?`` and the page give it in full).
LEGEND = MATRIX_LEGEND_SHORT


class MatrixScreen(Screen[None]):
    """Kernels x (target, dtype, specialization); Enter drills into a cell's signal."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("o", "open_editor", "Edit site", show=False),
    ]

    @property
    def laya(self) -> LayaApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Static("lowering matrix", id="crumbs")
        yield LoweringMatrix(self.laya.model, id="matrix")
        yield Static(LEGEND, id="legend", markup=False)
        yield DetailPane(id="cell-detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        matrix = self.query_one(LoweringMatrix)
        matrix.sync()
        if not matrix.layout_key[0]:
            self.query_one("#crumbs", Static).update(
                "lowering matrix: no lowering signals yet (the tilelang family emits them)")
        matrix.focus()
        if matrix.layout_key[1]:
            matrix.cursor_coordinate = matrix.cursor_coordinate._replace(column=1)
        self._show_cell()

    def apply_changes(self, changes: Changes) -> None:
        """Update cells by key; rebuild only when kernels or columns appeared."""
        lowering = any(r.sig.get("kind") == "lowering"
                       for r in (*changes.added, *changes.updated, *changes.removed))
        if lowering or changes.probes:
            self.query_one(LoweringMatrix).sync()
            self._show_cell()

    @on(DataTable.CellHighlighted, "#matrix")
    def _cell_moved(self, event: DataTable.CellHighlighted) -> None:
        self._show_cell()

    @on(DataTable.CellSelected, "#matrix")
    def _cell_chosen(self, event: DataTable.CellSelected) -> None:
        cell = self.query_one(LoweringMatrix).cell_at_cursor()
        if cell is None:
            return
        from laya_tui.tui.screens.signal import SignalScreen

        if cell.opens_signal and cell.signal in self.laya.model.rows:
            self.app.push_screen(SignalScreen(cell.signal))
        elif cell.probe in self.laya.model.probes:
            self.app.push_screen(SignalScreen(probe=cell.probe))

    def _show_cell(self) -> None:
        model, pane = self.laya.model, self.query_one(DetailPane)
        cell = self.query_one(LoweringMatrix).cell_at_cursor()
        if cell is None:
            pane.show_text("select a cell to see its diagnostic")
        elif cell.opens_signal and cell.signal in model.rows:
            row = model.rows[cell.signal]
            pane.show_signal(row, model.probes.get(row.probe), self.laya.workspace)
        elif cell.probe in model.probes:
            pane.show_probe(model.probes[cell.probe], self.laya.workspace)

    def rerun_targets(self) -> list[str]:
        """``r`` here re-runs the cell under the cursor."""
        cell = self.query_one(LoweringMatrix).cell_at_cursor()
        return [cell.probe] if cell else []

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_open_editor(self) -> None:
        cell = self.query_one(LoweringMatrix).cell_at_cursor()
        row = self.laya.model.rows.get(cell.signal) if cell and cell.signal else None
        self.laya.open_site(row)
