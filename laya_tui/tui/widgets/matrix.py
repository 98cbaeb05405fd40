"""The lowering matrix: kernels as rows, (target, dtype, specialization) as columns, each cell
coloured by its outcome (lowered / built / ran within tolerance / failed at which stage)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from laya_tui.tui.format import split_cell
from laya_tui.tui.model import RunModel

CellId = tuple[str, str, str]  # (target, dtype, spec)

_ORDER = {"c": 0, "llvm": 1, "cuda": 2, "hip": 3, "fp32": 0, "float32": 0, "fp16": 1,
          "float16": 1, "bf16": 2, "bfloat16": 2, "cpu": 0, "gpu": 1}

#: outcome -> (label, component class suffix)
OUTCOMES: dict[str, tuple[str, str]] = {
    "ran": ("✓ ran", "ran"),
    "built": ("◐ built", "built"),
    "lowered": ("◔ lowered", "lowered"),
    "lower-failed": ("✗ lower", "lower-failed"),
    "build-failed": ("✗ build", "build-failed"),
    "run-failed": ("✗ run", "run-failed"),
    "skipped": ("⊘ skip", "skipped"),
    "crashed": ("✹ crash", "crashed"),
    "timeout": ("◷ timeout", "crashed"),
    "failed": ("✗ probe", "run-failed"),
    "not-examined": ("⚠ n/e", "crashed"),  # could not be examined (status error)
    "error": ("⚠ n/e", "crashed"),
    "ok": ("✓ ok", "ran"),
    "running": ("▶ run…", "pending"),
    "queued": ("○ queue", "pending"),
    "pending": ("·", "pending"),
}


@dataclass
class MatrixCell:
    """What one (kernel, cell) shows, and where its detail lives."""

    outcome: str
    probe: str
    row_key: str | None = None


def _col_order(col: CellId) -> tuple[int, str, int, str, int, str]:
    t, d, s = col
    return (_ORDER.get(t, 9), t, _ORDER.get(d, 9), d, _ORDER.get(s, 9), s)


def matrix_cells(model: RunModel) -> tuple[list[str], list[CellId],
                                           dict[tuple[str, CellId], MatrixCell]]:
    """Kernels, columns and cells from lowering signals and the lowering probes' statuses."""
    cells: dict[tuple[str, CellId], MatrixCell] = {}
    families: set[str] = set()
    kernels: dict[str, None] = {}
    for row in model.rows.values():
        if row.sig.get("kind") != "lowering":
            continue
        d = row.sig.get("detail")
        if not isinstance(d, dict) or not all(d.get(k) for k in ("kernel", "target", "dtype")):
            continue
        col = (str(d["target"]), str(d["dtype"]), str(d.get("spec") or ""))
        outcome = str(d.get("outcome") or ("ran" if row.sig.get("passed") else "lower-failed"))
        kernels.setdefault(str(d["kernel"]), None)
        cells[(str(d["kernel"]), col)] = MatrixCell(outcome, row.probe, row.key)
        families.add(row.family)
    families.add("tilelang")
    for st in model.probes.values():
        if st.family not in families:
            continue
        parsed = split_cell(st.id)
        if parsed is None or len(parsed[1]) != 3:
            continue
        kernel, (t, d, s) = parsed
        key = (kernel, (t, d, s))
        existing = cells.get(key)
        if existing is None or st.status in ("running", "queued", "crashed", "timeout"):
            kernels.setdefault(kernel, None)
            cells[key] = MatrixCell(st.status, st.id,
                                    existing.row_key if existing is not None else None)
    columns = sorted({c for _, c in cells}, key=_col_order)
    return list(kernels), columns, cells


class LoweringMatrix(DataTable):
    """A cell-cursor table; cell keys are ``kernel`` (row) and ``target·dtype·spec`` (column)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("h", "cursor_left", "Left", show=False),
        Binding("l", "cursor_right", "Right", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | {
        f"lowering-matrix--{v[1]}" for v in OUTCOMES.values()} | {"lowering-matrix--missing"}

    def __init__(self, model: RunModel, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="cell", zebra_stripes=False, header_height=2)
        self.model = model
        self.layout_key: tuple[tuple[str, ...], tuple[CellId, ...]] = ((), ())
        self.cells: dict[tuple[str, CellId], MatrixCell] = {}

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"lowering-matrix--{name}", partial=True)

    def _cell_text(self, cell: MatrixCell | None) -> Text:
        if cell is None:
            return Text("·", style=self._style("missing"), justify="center")
        label, cls = OUTCOMES.get(cell.outcome, (cell.outcome, "pending"))
        return Text(label, style=self._style(cls), justify="center")

    def sync(self) -> bool:
        """Bring the table up to date: cells updated by key; rebuilt only if the shape changed.

        Returns True when the shape (rows or columns) changed.
        """
        kernels, columns, cells = matrix_cells(self.model)
        key = (tuple(kernels), tuple(columns))
        old = self.cells
        self.cells = cells
        if key != self.layout_key:
            cursor = self.cursor_coordinate
            self.layout_key = key
            self.clear(columns=True)
            self.add_column(Text("kernel", style="bold"), key="kernel")
            for col in columns:
                target, dtype, spec = col
                label = Text(f"{target}\n{dtype}·{spec}" if spec else f"{target}\n{dtype}",
                             justify="center")
                self.add_column(label, key="·".join(col), width=9)
            for k in kernels:
                self.add_row(Text(k, style="bold"),
                             *(self._cell_text(cells.get((k, c))) for c in columns), key=k)
            self.cursor_coordinate = cursor
            return True
        for (k, col), cell in cells.items():
            prev = old.get((k, col))
            if prev is None or prev.outcome != cell.outcome:
                self.update_cell(k, "·".join(col), self._cell_text(cell))
        return False

    def cell_at_cursor(self) -> MatrixCell | None:
        """The matrix cell under the cursor (None on the kernel-name column)."""
        kernels, columns = self.layout_key
        row, col = self.cursor_coordinate
        if not kernels or col == 0 or row >= len(kernels) or col - 1 >= len(columns):
            return None
        return self.cells.get((kernels[row], columns[col - 1]))

    def outcome_grid(self) -> dict[str, dict[str, str]]:
        """``{kernel: {"c·fp32·cpu": outcome}}`` (for tests)."""
        kernels, columns = self.layout_key
        return {k: {"·".join(c): self.cells[(k, c)].outcome for c in columns
                    if (k, c) in self.cells} for k in kernels}
