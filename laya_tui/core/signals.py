"""The signal: one fact a probe reports, with its cause and, where known, its fix
(docs/architecture.md, 'Signals, results and the report').

Pure standard library: imported by the UI, the runner and the workers alike.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from laya_tui.core.report_types import SignalDict

SCHEMA_ID = "laya-tui.report/5"  # 5: node (--cluster, issue 47)

#: Older report schemas this version still reads (baselines, show, diff, merge).
READABLE_SCHEMAS: tuple[str, ...] = ("laya-tui.report/1", "laya-tui.report/2",
                                     "laya-tui.report/3", "laya-tui.report/4", SCHEMA_ID)

#: The closed set of signal kinds.
KINDS: tuple[str, ...] = (
    "environment",
    "fallback",
    "recompile",
    "compile",
    "host_bounce",
    "cast",
    "tolerance",
    "lowering",
    "timing",
    "artifact",
    "log",
)

#: The signal kinds the default gates read (``laya_tui.report.gates``): ``tolerance``, and
#: the compile kinds (first compiles filed as ``recompile`` by an older laya-tui are upgraded
#: by every evaluation).
DEFAULT_GATE_KINDS = frozenset(("tolerance", "recompile", "compile"))

class Status(StrEnum):
    """A probe cell's status: the six a report holds, then the three a live run adds.

    ``failed`` is a finding about the subject (it does not lower, it drifts); ``error``
    means the probe could not examine its subject at all (unknown kernel arguments, a model
    that does not import, a factory that raises): the tool failing the user, never a passing
    verdict. A member equals its string, so reports and dicts keep plain strings.
    """

    OK = "ok"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    # live only: never in a report
    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"


#: The closed set of probe statuses a report holds, in report order.
STATUSES: tuple[str, ...] = tuple(s.value for s in Status)[:6]
#: A cell not finished yet (the dashboard's live states).
LIVE_STATUSES = frozenset((Status.PENDING, Status.QUEUED, Status.RUNNING))
#: Not a pass: a finding, a probe error, a crash or a timeout.
FAILING_STATUSES = frozenset((Status.FAILED, Status.ERROR, Status.CRASHED, Status.TIMEOUT))
#: The run ended before the probe did (its worker died, or it ran past its deadline).
ABORTED_STATUSES = frozenset((Status.CRASHED, Status.TIMEOUT))
#: The probe looked at its subject and said what it found.
COMPLETED_STATUSES = frozenset((Status.OK, Status.FAILED))
#: Results the result cache keeps (``docs/architecture.md``, 'Result cache and dependency sets').
CACHEABLE_STATUSES = frozenset((Status.OK, Status.FAILED, Status.SKIPPED))

#: Fields a signal may carry besides ``kind`` and ``probe``.
FIELDS: tuple[str, ...] = (
    "subject",
    "count",
    "bytes",
    "reason",
    "site",
    "fix",
    "value",
    "limit",
    "passed",
    "seconds",
    "detail",
)


class SignalError(ValueError):
    """A signal that does not follow the schema."""


_KIND_SET = frozenset(KINDS)
_FIELD_SET = frozenset(FIELDS)
_ORDER: dict[tuple[str, ...], tuple[str, ...]] = {}  # kwargs order -> FIELDS order


def make_signal(kind: str, probe: str, **fields: object) -> SignalDict:
    """Build one signal dict; ``None`` fields are dropped (absent = not applicable)."""
    if kind not in _KIND_SET:
        raise SignalError(f"unknown signal kind {kind!r}; expected one of {', '.join(KINDS)}")
    keys = tuple(fields)
    order = _ORDER.get(keys)  # a call site passes its fields in one order: computed once
    if order is None:
        unknown = set(fields) - _FIELD_SET
        if unknown:
            raise SignalError(f"unknown signal field(s) {sorted(unknown)} for kind {kind!r}")
        order = tuple(k for k in FIELDS if k in fields)
        if len(_ORDER) < 4096:
            _ORDER[keys] = order
    sig: dict[str, object] = {"kind": kind, "probe": probe}
    for key in order:
        value = fields[key]
        if value is not None:
            sig[key] = value
    site = sig.get("site")
    if site is not None and not (isinstance(site, dict) and "file" in site):
        raise SignalError("site must be a dict with at least 'file' (and 'line', 'func')")
    # its fields were checked against FIELDS above; no cast() call: this runs per signal
    return sig  # type: ignore[return-value]


def format_site(site: Mapping[str, object] | None) -> str:
    """``file:line(func)`` for a call site, or an empty string."""
    if not site:
        return ""
    text = str(site.get("file", ""))
    if site.get("line") is not None:
        text += f":{site['line']}"
    if site.get("func"):
        text += f"({site['func']})"
    return text
