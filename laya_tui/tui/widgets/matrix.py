"""The lowering matrix: kernels as rows, (target, dtype, specialization) as columns, each cell
coloured by its outcome. The cells come from ``report/views/matrix.py`` (the HTML page's
matrix is the same view); the kernel column stays in place when the matrix scrolls."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from laya_tui.report.views.legend import OUTCOME_MARKS
from laya_tui.report.views.matrix import MatrixCell, MatrixView, build_matrix
from laya_tui.tui.model import RunModel

__all__ = ["LoweringMatrix", "MatrixCell", "matrix_view"]


def matrix_view(model: RunModel) -> MatrixView:
    """The matrix of the model's lowering signals and probe statuses (a cell's ``signal``
    is its row key)."""
    lowering = ((row.sig, row.probe, row.family, row.key) for st in model.probes.values()
                if st.kinds.get("lowering") for row in st.rows if row.sig.kind == "lowering")
    probes = ((st.id, st.family, str(st.status)) for st in model.probes.values())
    return build_matrix(lowering, probes)


class LoweringMatrix(DataTable[Text]):
    """A cell-cursor table; cell keys are ``kernel`` (row) and ``target·dtype·spec`` (column)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("h", "cursor_left", "Left", show=False),
        Binding("l", "cursor_right", "Right", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | {
        f"lowering-matrix--{m.css}" for m in OUTCOME_MARKS.values()} | {
        "lowering-matrix--missing"}

    def __init__(self, model: RunModel, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="cell", zebra_stripes=False, header_height=2)
        self.fixed_columns = 1  # the kernel names stay when the cells scroll sideways
        self.model = model
        self.layout_key: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self.view = MatrixView()

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"lowering-matrix--{name}", partial=True)

    def _cell_text(self, cell: MatrixCell | None) -> Text:
        if cell is None:
            return Text("·", style=self._style("missing"), justify="center")
        mark = cell.mark
        return Text(mark.label, style=self._style(mark.css), justify="center")

    def sync(self) -> bool:
        """Bring the table up to date: cells updated by key; rebuilt only if the shape changed.

        Returns True when the shape (rows or columns) changed.
        """
        view = matrix_view(self.model)
        key = (tuple(view.kernels), tuple(c.key for c in view.columns))
        old = self.view
        self.view = view
        if key != self.layout_key:
            cursor = self.cursor_coordinate
            self.layout_key = key
            self.clear(columns=True)
            self.add_column(Text("kernel", style="bold"), key="kernel")
            for col in view.columns:
                self.add_column(Text(f"{col.head}\n{col.sub}", justify="center"), key=col.key,
                                width=9)
            for k in view.kernels:
                self.add_row(Text(k, style="bold"),
                             *(self._cell_text(view.cell(k, c)) for c in view.columns), key=k)
            self.cursor_coordinate = cursor
            return True
        for (k, column_key), cell in view.cells.items():
            prev = old.cells.get((k, column_key))
            if prev is None or prev.outcome != cell.outcome:
                self.update_cell(k, column_key, self._cell_text(cell))
        return False

    def cell_at_cursor(self) -> MatrixCell | None:
        """The matrix cell under the cursor (None on the kernel-name column)."""
        view = self.view
        row, col = self.cursor_coordinate
        if not view.kernels or col == 0 or row >= len(view.kernels) or \
                col - 1 >= len(view.columns):
            return None
        return view.cell(view.kernels[row], view.columns[col - 1])

    def outcome_grid(self) -> dict[str, dict[str, str]]:
        """``{kernel: {"c·fp32·cpu": outcome}}`` (for tests)."""
        view = self.view
        return {k: {c.key: cell.outcome for c in view.columns
                    if (cell := view.cell(k, c)) is not None} for k in view.kernels}
