"""The records the explain modules hand each other, named for what they hold (worker side).

A site is the report's own :class:`~laya_tui.core.report_types.SiteDict`, a signal its
:class:`~laya_tui.core.report_types.SignalDict`. The open mappings keep a name that says
whose they are: a signal's detail (an open JSON object, ``$defs/signal``), the probe's run
options (JSON from outside) and RBLN's compiler dump (the library's payload).
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from typing import Any, NotRequired, TypeAlias, TypedDict

from laya_tui.core.report_types import SignalDict, SiteDict

__all__ = ["Detail", "EntryFields", "Kwargs", "LogSiteDict", "ProbeOptions", "RblnDump",
           "SignalDict", "SiteDict"]

#: A signal's detail: an open JSON object (``$defs/signal``'s ``detail``).
Detail: TypeAlias = dict[str, Any]
#: The run options probes get (``laya_tui.api.options()``: JSON from ``LAYA_TUI_OPTIONS``).
ProbeOptions: TypeAlias = dict[str, Any]
#: A call's keyword arguments as the caller passed them (handed on as they are).
Kwargs: TypeAlias = dict[str, Any]
#: RBLN's compiler dump (a library payload, read as the compiler writes it).
RblnDump: TypeAlias = dict[str, Any]


class EntryFields(TypedDict):
    """An aggregated entry's keyword arguments for ``ctx.signal(kind, **fields)``."""

    subject: str
    count: int
    bytes: int | None
    reason: str | None
    site: SiteDict | None
    fix: str | None
    seconds: float | None
    detail: Detail | None


class LogSiteDict(SiteDict):
    """A site the RBLN log names, with the source line the log quotes under it."""

    code: NotRequired[str]
