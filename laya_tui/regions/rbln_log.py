"""The RBLN runtime's fallback log (``TORCH_RBLN_LOG_LEVEL=INFO``), parsed and merged.

It sees what ``explain()`` does not (ops with no device kernel at all, attention rejected
for alignment) but gives no counts and, per call site, one TRACE warning (Python shows a
warning once per location). Line shapes::

    [2026-09-14 19:49:00.145][I] `aten::neg` op ran on CPU instead of RBLN
    [2026-09-14 19:49:00.145][W] TRACE
    /x/modeling_llama.py:148: UserWarning: TRACE (Triggered internally at c10/...:266.)
      return torch.cat((-x2, x1), dim=-1)
    [...][I] `sdpa_overrideable (query sequence length 7 not aligned to 32)` op ran on CPU ...

Pure standard library.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from laya_tui.regions.aggregate import Aggregator

_FALLBACK = re.compile(r"`(?P<body>[^`]+)`\s+op ran on CPU\s+instead of RBLN")
_TRACE_WARN = re.compile(r"^(?P<file>\S.*?):(?P<line>\d+): \w*Warning: TRACE\b")
_ALIGN = re.compile(r"not aligned to (\d+)")

LOG_ONLY_REASON = "ran on CPU instead of RBLN (fallback log; no reason given)"


@dataclass
class LogFallback:
    """One (op, reason) from the log: how often, and the traced call sites."""

    op: str
    reason: str | None
    count: int = 0
    sites: list[dict[str, Any]] = field(default_factory=list)
    first_line: int = 0


def split_body(body: str) -> tuple[str, str | None]:
    """```sdpa_overrideable (query ... 32)``` -> ("sdpa_overrideable", "query ... 32")."""
    body = body.strip()
    i = body.find("(")
    if i <= 0 or not body.endswith(")"):
        return body, None
    return body[:i].strip(), body[i + 1:-1].strip() or None


def parse_log(text: str) -> list[LogFallback]:
    """Fallback records in first-seen order; unrelated and truncated lines are skipped."""
    records: dict[tuple[str, str | None], LogFallback] = {}
    last: LogFallback | None = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _FALLBACK.search(line)
        if m:
            op, reason = split_body(m["body"])
            rec = records.get((op, reason))
            if rec is None:
                rec = records[(op, reason)] = LogFallback(op, reason, first_line=i + 1)
            rec.count += 1
            last = rec
            continue
        w = _TRACE_WARN.match(line)
        if w and last is not None:
            site: dict[str, Any] = {"file": w["file"], "line": int(w["line"]), "func": None}
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if nxt[:1].isspace() and nxt.strip():
                site["code"] = nxt.strip()
            if all((s["file"], s["line"]) != (site["file"], site["line"]) for s in last.sites):
                last.sites.append(site)
    return list(records.values())


def op_key(op: str) -> str:
    """``aten::mul.Tensor`` / ``mul`` / ``aten::mul`` -> ``mul`` (how log and region meet)."""
    name = op.split("::", 1)[-1]
    return name.split(".", 1)[0].strip()


def _fix(reason: str | None) -> str:
    m = _ALIGN.search(reason or "")
    if m:
        return (f"pad/bucket that dimension to a multiple of {m.group(1)} so the device "
                "kernel applies")
    return ("no RBLN kernel for this op: it runs on the host every call; keep it out of the "
            "hot path or ask for a device kernel")


def merge_log(agg: Aggregator, records: list[LogFallback], *, region: str | None = None,
              phase: str | None = None) -> Aggregator:
    """Merge log records into ``agg``: same op -> ``detail.rbln_log`` on the region's signal;
    ops only the log saw -> new ``fallback`` entries (op, reason, count, first traced site)."""
    by_op: dict[str, list[Any]] = {}
    for e in agg:
        if e.kind == "fallback":
            by_op.setdefault(op_key(e.subject), []).append(e)
    for rec in records:
        info = {"count": rec.count, "reason": rec.reason,
                "sites": [dict(s) for s in rec.sites]}
        site = _site(rec)
        matched = by_op.get(op_key(rec.op))
        if matched:
            for e in matched:
                e.detail.setdefault("rbln_log", []).append(info)
                if e.site is None and site is not None:
                    e.site = site
            continue
        detail: dict[str, Any] = {"source": "rbln_log", "backend": "rbln"}
        if region is not None:
            detail["region"] = region
        if phase is not None:
            detail["phase"] = phase
        if len(rec.sites) > 1:
            detail["sites"] = info["sites"]
        if rec.sites and rec.sites[0].get("code"):
            detail["code"] = rec.sites[0]["code"]
        agg.add("fallback", rec.op, reason=rec.reason or LOG_ONLY_REASON, site=site,
                count=rec.count, fix=_fix(rec.reason), detail=detail)
    return agg


def _site(rec: LogFallback) -> dict[str, Any] | None:
    if not rec.sites:
        return None
    s = rec.sites[0]
    return {"file": s["file"], "line": s["line"], "func": s.get("func")}


class FdCapture:
    """Capture what is written to fds 1 and 2 and to sys.stdout/err while open (``.text``).

    The captured text is written back to the original stderr on exit, so the probe's log
    still shows it.
    """

    def __init__(self) -> None:
        self.text = ""

    def __enter__(self) -> FdCapture:
        _flush()
        self._tmp = tempfile.TemporaryFile(mode="w+b")
        self._saved = (os.dup(1), os.dup(2))
        os.dup2(self._tmp.fileno(), 1)
        os.dup2(self._tmp.fileno(), 2)
        # Python-level streams too (they may not write through fds 1/2, e.g. under pytest)
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
        return self

    def __exit__(self, *exc: Any) -> None:
        _flush()
        mine = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self._streams
        for stream in mine:
            stream.close()
        out, err = self._saved
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(out)
        os.close(err)
        self._tmp.seek(0)
        data = self._tmp.read()
        self._tmp.close()
        self.text = data.decode("utf-8", "replace")
        if data:
            os.write(2, data)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
