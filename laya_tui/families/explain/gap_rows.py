"""The gap table's rows and what they say (:mod:`laya_tui.families.explain.gap_table`
makes them): a module call's error, local error, limit and share; the ranking, the one-line
summary, the signal detail and the JSON artifact of every row. Worker side, no torch."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from laya_tui.families.explain.drift import ROOT
from laya_tui.families.explain.records import Detail, GapRowDict

__all__ = ["MAX_ROWS", "WHOLE", "GapTable", "Row", "ranking", "rounded", "row_detail",
           "summary", "write_artifact"]

#: Rows kept in the signal detail (ranked); the artifact holds every row.
MAX_ROWS = 200
WHOLE = ("fed no floating input: its local error is all it computes (ranked after the "
         "modules inside it)")


@dataclass
class Row:
    """One module call of the table."""

    module: str
    type: str
    call: int
    dtype: str | None
    error: float
    local: float | None
    limit: float
    order: int
    note: str = ""

    #: a module with submodules fed no floating input: its local error is all it computes
    #: (as the whole model's), ranked after the others
    whole: bool = False

    @property
    def share(self) -> float | None:
        if self.local is None or not self.error > 0:
            return None
        return min(1.0, self.local / self.error)

    def ratio(self) -> float:
        """local / limit (the rank key; an empty local ranks last)."""
        if self.local is None:
            return -1.0
        return self.local / self.limit if self.limit > 0 else float("inf")


@dataclass
class GapTable:
    rows: list[Row] = field(default_factory=list)
    budget_bytes: int | None = None
    peak_bytes: int = 0
    activation_bytes: int = 0
    spilled_bytes: int = 0
    spilled_files: int = 0
    seconds: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)
    note: str = ""

    def ranked(self) -> list[Row]:
        """Rows by local / limit, largest first (the whole model left out)."""
        rows = [r for r in self.rows if r.module != ROOT]
        return sorted(rows, key=lambda r: (r.whole, -r.ratio(), r.order))

    def detail(self, *, path: str = "eager", artifact: str | None = None) -> Detail:
        """The ``gap_table`` entry of the signal detail (ranked rows, at most MAX_ROWS)."""
        ranked = self.ranked()
        root = next((r for r in self.rows if r.module == ROOT), None)
        out: Detail = {
            "path": path,
            "rows": [row_detail(r) for r in ranked[:MAX_ROWS]],
            "modules": len(self.rows),
            "output": None if root is None else row_detail(root),
            "budget_bytes": self.budget_bytes, "peak_bytes": self.peak_bytes,
            "activation_bytes": self.activation_bytes, "spilled_bytes": self.spilled_bytes,
            "spilled_files": self.spilled_files, "seconds": round(self.seconds, 4),
        }
        if self.skipped:
            out["skipped"] = [{"module": k, "reason": v} for k, v in
                              list(self.skipped.items())[:20]]
        if self.note:
            out["note"] = self.note
        if len(ranked) > MAX_ROWS:
            out["rows_shown"] = MAX_ROWS
        if artifact:
            out["artifact"] = artifact
        return out


def rounded(x: float | None) -> float | None:
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return None
    return float(f"{x:.4g}")


def row_detail(r: Row) -> GapRowDict:
    out: GapRowDict = {"module": r.module, "type": r.type, "call": r.call, "dtype": r.dtype,
           "error": rounded(r.error), "local": rounded(r.local), "limit": rounded(r.limit),
           "share": rounded(r.share)}
    if r.note:
        out["note"] = r.note
    return out


def ranking(table: GapTable) -> list[str]:
    """Module names whose own error passes their limit, worst first."""
    out: list[str] = []
    for r in table.ranked():
        if r.local is not None and r.local > r.limit and r.module not in out:
            out.append(r.module)
    return out


def summary(table: GapTable) -> str:
    """One line: the module that makes most error, and the memory the table took."""
    from laya_tui.core.units import human_bytes

    top = next(iter(table.ranked()), None)
    mem = (f"peak {human_bytes(table.peak_bytes)} of fp32 records in memory"
           + (f" (budget {human_bytes(table.budget_bytes)}, "
              f"{human_bytes(table.spilled_bytes)} spilled)" if table.budget_bytes else "")
           + f", {human_bytes(table.activation_bytes)} in all")
    if top is None or top.local is None:
        return f"gap table: {len(table.rows)} module call(s), no local error; {mem}"
    share = "" if top.share is None else f", {top.share:.0%} of its output error"
    return (f"gap table: {len(table.rows)} module call(s); most own error: {top.module} "
            f"({top.type}) local {top.local:.3g} vs limit {top.limit:.3g}{share}; {mem}")


def write_artifact(table: GapTable, folder: str, name: str, path: str) -> str:
    """Every row as JSON in ``folder``; returns its path."""
    import json

    os.makedirs(folder, exist_ok=True)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:120]
    out = os.path.join(folder, f"{safe}.gap.json")
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"path": path, "rows": [row_detail(r) for r in table.ranked()],
                   "execution_order": [row_detail(r) for r in table.rows]}, fh, indent=1)
    return out
