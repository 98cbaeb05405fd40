"""The dashboard's messages: small, past-tense, one module (docs/architecture.md,
'The dashboard').

Runner events never become one message each: the event pump folds them into the model
and posts one :class:`RunUpdated` per flush (at most ~30 a second, whatever the rate of
signals on the pipe).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from laya_tui.tui.model import Changes

if TYPE_CHECKING:
    from laya_tui.core.report_types import FileErrorDict, WatchRecord


class ProbesDiscovered(Message):
    """Discovery finished: ``count`` probe cells, ``errors`` per broken probe file."""

    def __init__(self, count: int, errors: list[FileErrorDict]) -> None:
        super().__init__()
        self.count = count
        self.errors = errors


class RunUpdated(Message):
    """A coalesced batch of runner events was folded into the model."""

    def __init__(self, changes: Changes) -> None:
        super().__init__()
        self.changes = changes


class RunCompleted(Message):
    """A run ended (``cancelled`` when the user quit or a new run superseded it)."""

    def __init__(self, what: str, count: int, cancelled: bool = False) -> None:
        super().__init__()
        self.what = what
        self.count = count
        self.cancelled = cancelled


class RunFailed(Message):
    """The runner itself raised (not a probe: probes fail as results)."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class SignalHighlighted(Message):
    """The table cursor moved to the row ``key`` (None: the table is empty)."""

    def __init__(self, key: str | None) -> None:
        super().__init__()
        self.key = key


class SignalChosen(Message):
    """Enter on a row: drill down to the full detail of signal ``key``."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


class SortChanged(Message):
    """The table is now sorted by ``column`` (None: arrival order)."""

    def __init__(self, column: str | None, reverse: bool) -> None:
        super().__init__()
        self.column = column
        self.reverse = reverse


class ReportExported(Message):
    """``e`` wrote the report document to ``path``."""

    def __init__(self, path: str, probes: int, passed: bool) -> None:
        super().__init__()
        self.path = path
        self.probes = probes
        self.passed = passed


class WatchToggled(Message):
    """Watch mode was switched on or off."""

    def __init__(self, on: bool) -> None:
        super().__init__()
        self.on = on


class WatchChanged(Message):
    """The watch engine re-ran a probe: ``record`` is its change record."""

    def __init__(self, record: WatchRecord) -> None:
        super().__init__()
        self.record = record
