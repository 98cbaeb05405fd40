"""The lowering matrix as a view: kernels as rows, (target, dtype, specialization) as
columns, each cell the stage its lowering signal reached or its probe's status. Built from
the dashboard's model and from a report alike. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from laya_tui.core import cellid
from laya_tui.core.results import SignalLike
from laya_tui.core.signals import COMPLETED_STATUSES, Status
from laya_tui.report.views.legend import Mark, State, not_run_state, outcome_mark

#: Column order: C before LLVM before CUDA; fp32, fp16, bf16; the CPU specialization first.
_ORDER = {"c": 0, "llvm": 1, "cuda": 2, "hip": 3, "fp32": 0, "float32": 0, "fp16": 1,
          "float16": 1, "bf16": 2, "bfloat16": 2, "cpu": 0, "gpu": 1}
#: The family whose cells are matrix cells even before they emit a lowering signal.
MATRIX_FAMILY = "tilelang"


@dataclass(frozen=True, slots=True)
class MatrixColumn:
    """One (target, dtype, spec) column; ``key`` is ``target·dtype·spec``."""

    target: str
    dtype: str
    spec: str

    @property
    def key(self) -> str:
        return "·".join((self.target, self.dtype, self.spec))

    @property
    def head(self) -> str:
        return self.target

    @property
    def sub(self) -> str:
        return f"{self.dtype}·{self.spec}" if self.spec else self.dtype

    def order(self) -> tuple[int | str, ...]:
        return tuple(x for v in (self.target, self.dtype, self.spec)
                     for x in (_ORDER.get(v, 9), v))


@dataclass(frozen=True, slots=True)
class MatrixCell:
    """What one (kernel, column) shows and what it opens.

    ``signal`` is the lowering signal's reference (the caller's: a row key, an index pair)
    or None; ``opens_signal`` says whether Enter or a click opens that signal (its outcome
    came from it) or the probe (its status: crashed, running, …)."""

    outcome: str
    probe: str
    signal: Any = None
    opens_signal: bool = False

    @property
    def mark(self) -> Mark:
        return outcome_mark(self.outcome)


@dataclass
class MatrixView:
    """Kernels (in the order first seen), sorted columns, and the cells by key."""

    kernels: list[str] = field(default_factory=list)
    columns: list[MatrixColumn] = field(default_factory=list)
    cells: dict[tuple[str, str], MatrixCell] = field(default_factory=dict)

    def cell(self, kernel: str, column: MatrixColumn) -> MatrixCell | None:
        return self.cells.get((kernel, column.key))

    def __bool__(self) -> bool:
        return bool(self.cells)


def lowering_outcome(sig: SignalLike) -> tuple[str, MatrixColumn, str] | None:
    """``(kernel, column, outcome)`` of a lowering signal that names its cell, else None."""
    if sig.get("kind") != "lowering":
        return None
    d = sig.get("detail")
    if not isinstance(d, Mapping) or not all(d.get(k) for k in ("kernel", "target", "dtype")):
        return None
    column = MatrixColumn(str(d["target"]), str(d["dtype"]), str(d.get("spec") or ""))
    outcome = str(d.get("outcome") or ("ran" if sig.get("passed") else "lower-failed"))
    if outcome == "built" and d.get("not_run") and \
            not_run_state(str(d["not_run"])) == State.NOT_COMPARED:
        outcome = "not-compared"  # built, nothing to compare with (views.legend's state)
    return str(d["kernel"]), column, outcome


def build_matrix(lowering: Iterable[tuple[SignalLike, str, str, Any]],
                 probes: Iterable[tuple[str, str, str]]) -> MatrixView:
    """The matrix from lowering signals ``(signal, probe id, family, ref)`` and the probes
    ``(id, family, status)``. A cell of a family with lowering signals (and every
    ``tilelang`` cell) shows its probe's status instead when it has no signal yet or its
    status says the run did not finish its subject (running, crashed, timeout, …)."""
    view = MatrixView()
    kernels: dict[str, None] = {}
    columns: dict[MatrixColumn, None] = {}
    families = {MATRIX_FAMILY}
    for sig, probe, family, ref in lowering:
        got = lowering_outcome(sig)
        if got is None:
            continue
        kernel, column, outcome = got
        kernels.setdefault(kernel, None)
        columns.setdefault(column, None)
        view.cells[(kernel, column.key)] = MatrixCell(outcome, probe, ref, True)
        families.add(family)
    for pid, family, status in probes:
        if family not in families:
            continue
        cell = cellid.parse(pid)
        if len(cell.parts) != 3:
            continue
        column = MatrixColumn(*cell.parts)
        key = (cell.name, column.key)
        existing = view.cells.get(key)
        if existing is not None and (status in COMPLETED_STATUSES or status == Status.PENDING):
            continue
        kernels.setdefault(cell.name, None)
        columns.setdefault(column, None)
        view.cells[key] = MatrixCell(status, pid, existing.signal if existing else None, False)
    view.kernels = list(kernels)
    view.columns = sorted(columns, key=MatrixColumn.order)
    return view
