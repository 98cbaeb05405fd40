"""What the app asks of its screens (docs/architecture.md, 'The dashboard').

A screen takes part by defining the method; the app checks with ``isinstance`` against
these protocols instead of looking names up.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from laya_tui.tui.model import Changes


@runtime_checkable
class ShowsChanges(Protocol):
    """A screen that shows the model: it applies each drained record of changes by key."""

    def apply_changes(self, changes: Changes) -> None: ...


@runtime_checkable
class PicksRerunTargets(Protocol):
    """A screen that knows what ``r`` re-runs from it (the cells it shows)."""

    def rerun_targets(self) -> list[str]: ...
