"""The gap table's fp32 records (:mod:`laya_tui.families.explain.gap_table`): kept in
memory up to a budget (``LAYA_TUI_NUMERICS_MB``, else 256 MB), spilled with ``torch.save``
to a temporary folder beyond it, each taken once. Worker side (torch inside functions)."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

__all__ = ["DEFAULT_BUDGET_MB", "Store", "budget_bytes"]

#: Memory budget of the fp32 records (MB) unless ``LAYA_TUI_NUMERICS_MB`` says otherwise.
DEFAULT_BUDGET_MB = 256.0


def budget_bytes() -> int | None:
    """The records' memory budget: env ``LAYA_TUI_NUMERICS_MB``, else 256 MB; ``0`` or less:
    no budget (all in memory)."""
    raw = os.environ.get("LAYA_TUI_NUMERICS_MB")
    try:
        mb = float(raw) if raw not in (None, "") else DEFAULT_BUDGET_MB
    except ValueError as exc:
        raise ValueError(f"LAYA_TUI_NUMERICS_MB={raw!r}: not a number of MB") from exc
    return None if mb <= 0 else int(mb * 1024 * 1024)


class Store:
    """fp32 records by key: in memory up to ``budget`` bytes, spilled to ``folder`` beyond;
    each taken once (and then dropped)."""

    def __init__(self, budget: int | None, folder: str | None) -> None:
        self.budget, self.folder = budget, folder
        self.mem: dict[Any, tuple[Any, int]] = {}
        self.disk: dict[Any, tuple[str, int]] = {}
        self.resident = self.peak = self.total = self.spilled = self.files = 0
        self._dir: str | None = None

    def put(self, key: Any, value: Any, nbytes: int) -> None:
        self.total += nbytes
        if self.budget is not None and self.resident + nbytes > self.budget:
            import torch

            if self._dir is None:
                base = self.folder or tempfile.gettempdir()
                os.makedirs(base, exist_ok=True)
                self._dir = tempfile.mkdtemp(prefix="gap-", dir=base)
            path = os.path.join(self._dir, f"{self.files}.pt")
            torch.save(value, path)
            self.disk[key] = (path, nbytes)
            self.spilled += nbytes
            self.files += 1
            return
        self.mem[key] = (value, nbytes)
        self.resident += nbytes
        self.peak = max(self.peak, self.resident)

    def take(self, key: Any) -> Any:
        """The record (None when there is none), dropped from the store."""
        if key in self.mem:
            value, nbytes = self.mem.pop(key)
            self.resident -= nbytes
            return value
        if key in self.disk:
            import torch

            path, _ = self.disk.pop(key)
            value = torch.load(path, weights_only=True)
            os.unlink(path)
            return value
        return None

    def close(self) -> None:
        self.mem.clear()
        self.disk.clear()
        self.resident = 0
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
