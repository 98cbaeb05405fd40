"""A watch-mode record as a typed dict (documented in :mod:`laya_tui.watch.engine`): one
JSON line per re-run cell, removed cell, broken file or ready watcher."""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from typing import NotRequired, TypedDict

from laya_tui.core.report_types import ResultDict, SignalDict


class DiagnosticDict(TypedDict):
    """Where a probe file broke (a syntax or import error saved mid-edit): a watch
    record's ``diagnostic`` (``laya_tui.watch.records.diagnostic_of``)."""

    file: str | None
    line: int | None
    message: str | None


class SignalChangeDict(TypedDict):
    """A signal whose facts moved between two runs of a cell: a watch record's
    ``changed`` (``fields``: field -> [before, after])."""

    kind: str | None
    subject: str | None
    reason: str | None
    fields: dict[str, list[object]]


class WatchRecord(TypedDict):
    """One watch-mode record; every record has every key (``laya_tui.watch.engine``)."""

    type: str  # "result" | "removed" | "diagnostic" | "ready"
    probe: str | None
    family: str | None
    trigger: str | None
    seconds: float | None
    latency: float | None
    status: str | None
    reason: str | None
    previous_status: str | None
    cached: bool
    new: list[SignalDict]
    gone: list[SignalDict]
    changed: list[SignalChangeDict]
    diagnostic: DiagnosticDict | None
    result: NotRequired[ResultDict]
    probes: NotRequired[int]
