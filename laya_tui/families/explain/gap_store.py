"""The gap table's fp32 records (:mod:`laya_tui.families.explain.gap_table`): kept in
memory up to a budget (``LAYA_TUI_NUMERICS_MB``, else 256 MB), spilled with ``torch.save``
to a temporary folder beyond it, each taken once. Worker side (torch inside functions).

What is counted is everything the store hands out or keeps: records kept in memory
(``resident``) and the records of the last take (``loaned``: the call being compared, read
back from disk or not; its caller drops them before it takes the next). ``peak`` is the
most of both at once. A record read back from disk that does not fit beside the others
first spills the records kept in memory, latest kept first, so ``peak`` stays within the
budget unless one call's record alone is larger."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["DEFAULT_BUDGET_MB", "Store", "budget_bytes"]

#: Memory budget of the fp32 records (MB) unless ``LAYA_TUI_NUMERICS_MB`` says otherwise.
DEFAULT_BUDGET_MB = 256.0

K = TypeVar("K", bound=Hashable)
#: A record: what ``torch.save`` writes and ``torch.load(weights_only=True)`` reads back
#: (tensors, and lists/tuples/dicts of them).
V = TypeVar("V")


def budget_bytes() -> int | None:
    """The records' memory budget: env ``LAYA_TUI_NUMERICS_MB``, else 256 MB; ``0`` or less:
    no budget (all in memory)."""
    raw = os.environ.get("LAYA_TUI_NUMERICS_MB")
    try:
        mb = float(raw) if raw not in (None, "") else DEFAULT_BUDGET_MB
    except ValueError as exc:
        raise ValueError(f"LAYA_TUI_NUMERICS_MB={raw!r}: not a number of MB") from exc
    return None if mb <= 0 else int(mb * 1024 * 1024)


class Store(Generic[K, V]):
    """fp32 records by key: in memory up to ``budget`` bytes, spilled to ``folder`` beyond;
    each taken once, counted until the next take."""

    def __init__(self, budget: int | None, folder: str | None) -> None:
        self.budget, self.folder = budget, folder
        self.mem: dict[K, tuple[V, int]] = {}
        self.disk: dict[K, tuple[str, int]] = {}
        self.resident = self.loaned = self.peak = self.total = 0
        self.spilled = self.files = 0
        self._dir: str | None = None

    def _fits(self, nbytes: int) -> bool:
        return self.budget is None or self.resident + self.loaned + nbytes <= self.budget

    def _count(self) -> None:
        self.peak = max(self.peak, self.resident + self.loaned)

    def _spill(self, key: K, value: V, nbytes: int) -> None:
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

    def put(self, key: K, value: V, nbytes: int) -> None:
        """Keep ``value`` in memory if it fits the budget, else spill it."""
        self.total += nbytes
        if not self._fits(nbytes):
            self._spill(key, value, nbytes)
            return
        self.mem[key] = (value, nbytes)
        self.resident += nbytes
        self._count()

    def take(self, key: K) -> V | None:
        """The record (None when there is none), dropped from the store: see
        :meth:`take_all`."""
        return self.take_all([key])[0]

    def take_all(self, keys: list[K]) -> list[V | None]:
        """The records of ``keys`` (None for a missing one), dropped from the store. The
        caller holds them until its next take: their bytes count (``loaned``) until then,
        those of the previous take no longer."""
        self.loaned = 0
        return [self._take(k) for k in keys]

    def _take(self, key: K) -> V | None:
        if key in self.mem:
            value, nbytes = self.mem.pop(key)
            self.resident -= nbytes
            self.loaned += nbytes
            return value
        if key not in self.disk:
            return None
        import torch

        path, nbytes = self.disk.pop(key)
        while self.mem and not self._fits(nbytes):  # make room: latest kept first
            k, (v, n) = self.mem.popitem()
            self.resident -= n
            self._spill(k, v, n)
        value = torch.load(path, weights_only=True)
        os.unlink(path)
        self.loaned += nbytes
        self._count()
        return value

    def close(self) -> None:
        self.mem.clear()
        self.disk.clear()
        self.resident = self.loaned = 0
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
