"""Watch records: what changed in a cell's signals between two of its runs, and the
syntax or import error a save left behind (docs/architecture.md, 'Watch mode').

The record shape is documented in :mod:`laya_tui.watch.engine`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import cast

from laya_tui.core.report_types import FileErrorDict, ResultDict, SignalDict
from laya_tui.core.results import failing, signal_key
from laya_tui.core.shapes import as_dict
from laya_tui.watch.record_types import DiagnosticDict, SignalChangeDict, WatchRecord

#: One watch-mode record (every key always present).
Record = WatchRecord

#: Signal fields whose change makes a signal "changed" (besides ``detail.outcome``).
COMPARED_FIELDS = ("count", "bytes", "value", "passed")
DIAGNOSTIC_ERRORS = ("ProbeFileError", "SyntaxError", "IndentationError", "TabError",
                     "ImportError", "ModuleNotFoundError")
#: ``... at FILE:LINE`` ending an import error raised by a module a probe file imports.
AT_FILE_LINE = re.compile(r" at (?P<file>\S+):(?P<line>\d+)$")


def new_record(kind: str, pid: str | None, trigger: str | None, **fields: object) -> Record:
    """A record with every key present (``trigger`` already relative to the workspace)."""
    rec: dict[str, object] = {"type": kind, "probe": pid, "family": None, "trigger": trigger,
                              "seconds": None, "latency": None, "status": None,
                              "reason": None, "previous_status": None, "cached": False,
                              "new": [], "gone": [], "changed": [], "diagnostic": None}
    unknown = set(fields) - set(WatchRecord.__annotations__)
    if unknown:
        raise TypeError(f"not watch record fields: {sorted(unknown)}")
    rec.update(fields)
    return cast(WatchRecord, rec)


def _facts(sig: SignalDict) -> dict[str, object]:
    facts = {k: sig.get(k) for k in COMPARED_FIELDS}
    detail = sig.get("detail")
    facts["outcome"] = detail.get("outcome") if isinstance(detail, dict) else None
    return facts


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def diff_signals(before: Iterable[SignalDict], after: Iterable[SignalDict]
                 ) -> tuple[list[SignalDict], list[SignalDict], list[SignalChangeDict]]:
    """``(new, gone, changed)`` between two signal lists, matched by ``signal_key``.

    Signals sharing a key are paired in order; the unpaired rest are new or gone.
    """
    old: dict[tuple[str, ...], list[SignalDict]] = {}
    for sig in before:
        old.setdefault(signal_key(sig), []).append(sig)
    new: list[SignalDict] = []
    changed: list[SignalChangeDict] = []
    for sig in after:
        bucket = old.get(signal_key(sig))
        if not bucket:
            new.append(sig)
            continue
        prev = bucket.pop(0)
        a, b = _facts(prev), _facts(sig)
        fields = {k: [a[k], b[k]] for k in a if not _same(a[k], b[k])}
        if fields:
            changed.append({"kind": sig.get("kind"), "subject": sig.get("subject"),
                            "reason": sig.get("reason"), "fields": fields})
    gone = [sig for bucket in old.values() for sig in bucket]
    return new, gone, changed


def diagnostic_of(result: ResultDict) -> DiagnosticDict | None:
    """``{file, line, message}`` when a result is a syntax/import error saved mid-edit."""
    err = result.get("error")
    if result.get("status") != "failed":
        return None
    if not isinstance(err, dict) or err.get("type") not in DIAGNOSTIC_ERRORS:
        # A probe may report the import failure itself: a failing signal whose detail
        # names the exception (the lowering probe's ``stage: import`` cells).
        for sig in result.get("signals", []):
            detail = as_dict(sig.get("detail"))
            where = sig.get("site")
            if failing(sig) and detail.get("exception") in DIAGNOSTIC_ERRORS \
                    and where and where.get("file"):
                return {"file": where["file"], "line": where.get("line"),
                        "message": result.get("reason") or sig.get("reason") or ""}
        return None
    message = result.get("reason") or err.get("message") or ""
    site = err.get("site")
    file, line = (site.get("file"), site.get("line")) if site else (None, None)
    m = AT_FILE_LINE.search(err.get("message") or "")
    if m:  # the error is in a file the probe file imports: point at that file
        file, line = m.group("file"), int(m.group("line"))
    return {"file": file, "line": line, "message": message}


def error_line(err: FileErrorDict) -> str:
    """A discovery error (``{file, line, error}``) as one line."""
    where = f"{err['file']}:{err['line']}" if err.get("line") else err.get("file", "")
    return f"{where}: {err.get('error')}"
