"""The RBLN runtime's log, parsed and merged with a region's signals. Pure standard library.

It sees what ``explain()`` does not (ops with no device kernel at all, attention rejected
for alignment, a whole compiled graph sent to the CPU) but gives no counts and, per call
site, one TRACE warning (Python shows a warning once per location). torch-rbln 0.12.0
writes these shapes, the info lines on **stdout** (spdlog) and the rest on **stderr**, so a
captured log needs both streams; ``TORCH_RBLN_LOG_LEVEL`` is read once, before ``import
torch``::

    [2026-09-14 19:49:00.145][I] `aten::neg` op ran on CPU instead of RBLN     (stdout, INFO)
    [2026-09-14 19:49:00.145][I] `aten::neg` op ran on CPU  instead of RBLN    (also in the wheel)
    [2026-09-14 19:49:00.145][W] TRACE                                         (stdout)
    /x/modeling_llama.py:148: UserWarning: TRACE (Triggered internally at c10/rbln/...:266.)
      return torch.cat((-x2, x1), dim=-1)                                      (stderr)
    [W914 19:49:00.145 RBLNLogging.cpp:266] Warning: TRACE (function log_cpu_fallback)
                                       (stderr: c10's own handler, no Python site)
    [...][I] `sdpa_overrideable (query sequence length 7 not aligned to 32)` op ran on CPU ...
    [TORCH-RBLN][WARNING] <compile error>.                                     (stderr, WARNING)
    Fallback to CPU execution due to RBLN compilation failure. The operation will now ...
    [TORCH-RBLN][WARNING] view-on-device fallback (host materialize via .contiguous()): shape=...
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from types import TracebackType

from laya_tui.families.explain.aggregate import Aggregator
from laya_tui.families.explain.records import Detail, LogSiteDict, SiteDict

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FALLBACK = re.compile(r"`(?P<body>[^`]+)`\s+op ran on CPU\s+instead of RBLN")
_TRACE_WARN = re.compile(r"^(?P<file>\S.*?):(?P<line>\d+): \w*Warning: TRACE\b")
_BARE_TRACE = re.compile(r"Warning: TRACE \(function log_cpu_fallback\)")
_PY_LOG = re.compile(r"^\[TORCH-RBLN\]\[(?P<level>WARNING|ERROR)\] ?(?P<msg>.*)$")
_SPD_LOG = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:.]+\]\[(?P<level>[WE])\]"
                      r"(?:\[[^\]]*\])* ?(?P<msg>.*)$")
_VIEW = re.compile(r"shape=(?P<shape>\([^)]*\)) stride=(?P<stride>\([^)]*\)) "
                   r"offset=(?P<offset>\d+)")
_ALIGN = re.compile(r"not aligned to (\d+)")

COMPILE_SENTENCE = "Fallback to CPU execution due to RBLN compilation failure"
VIEW_PREFIX = "view-on-device fallback"
REENTRANT = "Unexpected CPU fallback: reentrant dispatch"

LOG_ONLY_REASON = "ran on CPU instead of RBLN (fallback log; no reason given)"
COMPILE_SUBJECT = "torch.compile(backend='rbln')"
COMPILE_REASON = ("RBLN compilation failed: the whole compiled graph ran on the CPU "
                  "(fallback log)")
COMPILE_FIX = ("read the compile error (detail.errors) and fix what the RBLN compiler rejects; "
               "TORCH_RBLN_DISABLE_FALLBACK=compile_error makes it raise instead of running "
               "the graph on the CPU")
VIEW_SUBJECT = "view-on-device"
VIEW_REASON = "host materialize via .contiguous() (unrecognized view pattern)"
VIEW_FIX = ("make the tensor contiguous on the device before this op, or use a view pattern "
            "torch-rbln recognises (each pattern is warned once: detail.views)")
REENTRANT_SUBJECT = "reentrant dispatch"
REENTRANT_REASON = "unexpected CPU fallback: already inside an RBLN compile op"
WARNING_SUBJECT = "torch-rbln warning"
UNATTRIBUTED = "(TRACE sites not next to an op line)"
#: How many lines after the op's ``[W] TRACE`` marker (stdout) its Python TRACE warning
#: (stderr) may come; farther away, or with no marker since the op line, the streams were
#: captured apart and the site names no op.
TRACE_WINDOW = 1


@dataclass
class LogFallback:
    """One (kind, op, reason) from the log: how often, traced call sites, per-line facts.

    ``kind``: ``fallback`` (an op ran on CPU), ``compile_fallback`` (a compiled graph ran on
    CPU after RBLN compilation failed), ``view_materialize`` (a device view materialised on
    the host), ``warning`` (any other torch-rbln warning or error line),
    ``unattributed_trace`` (TRACE sites with no op line just before them, as when stdout and
    stderr were captured apart: they still help place basename sites, never an op).
    """

    op: str
    reason: str | None
    count: int = 0
    sites: list[LogSiteDict] = field(default_factory=list)
    first_line: int = 0
    last_line: int = 0
    kind: str = "fallback"
    details: list[Detail] = field(default_factory=list)
    bare_traces: int = 0


def split_body(body: str) -> tuple[str, str | None]:
    """```sdpa_overrideable (query ... 32)``` -> ("sdpa_overrideable", "query ... 32")."""
    body = body.strip()
    i = body.find("(")
    if i <= 0 or not body.endswith(")"):
        return body, None
    return body[:i].strip(), body[i + 1:-1].strip() or None


class _Parser:
    def __init__(self) -> None:
        self.records: dict[tuple[str, str, str | None], LogFallback] = {}
        self.last: LogFallback | None = None
        self.pending: tuple[str, str, int] | None = None  # (level, message, line no.)
        self.marker = 0  # line no. of the last spdlog "[W] TRACE" marker

    def record(self, kind: str, op: str, reason: str | None, line_no: int) -> LogFallback:
        rec = self.records.get((kind, op, reason))
        if rec is None:
            rec = self.records[(kind, op, reason)] = LogFallback(
                op, reason, first_line=line_no, kind=kind)
        rec.count += 1
        rec.last_line = line_no
        return rec

    def flush(self) -> None:
        """A warning not followed by the compile-failure sentence is a plain warning."""
        if self.pending is not None:
            level, msg, line_no = self.pending
            first = msg.strip().splitlines()[0][:200] if msg.strip() else "(empty)"
            rec = self.record("warning", WARNING_SUBJECT, first, line_no)
            if not rec.details:
                rec.details.append({"level": level})
            self.pending = None

    def warning(self, level: str, msg: str, line_no: int) -> None:
        self.flush()
        if COMPILE_SENTENCE in msg:
            self.compile_failure(msg.split(COMPILE_SENTENCE)[0], line_no)
        elif msg.startswith(VIEW_PREFIX):
            rec = self.record("view_materialize", VIEW_SUBJECT, VIEW_REASON, line_no)
            m = _VIEW.search(msg)
            if m:
                rec.details.append({"shape": m["shape"], "stride": m["stride"],
                                    "offset": int(m["offset"])})
        elif msg.startswith(REENTRANT):
            self.record("fallback", REENTRANT_SUBJECT, REENTRANT_REASON, line_no)
        else:
            self.pending = (level, msg, line_no)

    def compile_failure(self, error: str, line_no: int) -> None:
        error = error.strip().rstrip(".").strip()
        rec = self.record("compile_fallback", COMPILE_SUBJECT, COMPILE_REASON, line_no)
        if error and len(rec.details) < 5 and all(d.get("error") != error for d in rec.details):
            rec.details.append({"error": error[:400]})

    def trace(self, lines: list[str], i: int, m: re.Match[str]) -> None:
        target = self.last
        near = target is not None and target.last_line <= self.marker and \
            i + 1 - self.marker <= TRACE_WINDOW
        if target is None or not near:
            # streams captured apart: a TRACE far from any op line names no op
            target = self.records.get(("unattributed_trace", UNATTRIBUTED, None))
            if target is None:
                target = self.records[("unattributed_trace", UNATTRIBUTED, None)] = \
                    LogFallback(UNATTRIBUTED, None, first_line=i + 1, kind="unattributed_trace")
        site: LogSiteDict = {"file": m["file"], "line": int(m["line"]), "func": None}
        nxt = _ANSI.sub("", lines[i + 1]) if i + 1 < len(lines) else ""
        if nxt[:1].isspace() and nxt.strip():
            site["code"] = nxt.strip()
        if all((s["file"], s["line"]) != (site["file"], site["line"]) for s in target.sites):
            target.sites.append(site)


def parse_log(text: str) -> list[LogFallback]:
    """Records in first-seen order; unrelated and truncated lines are skipped."""
    p = _Parser()
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        line = _ANSI.sub("", raw).rstrip("\r")
        m = _FALLBACK.search(line)
        if m:
            op, reason = split_body(m["body"])
            p.last = p.record("fallback", op, reason, i + 1)
            continue
        w = _TRACE_WARN.match(line)
        if w:
            p.trace(lines, i, w)
            continue
        if _BARE_TRACE.search(line):
            if p.last is not None:
                p.last.bare_traces += 1
            continue
        py = _PY_LOG.match(line)
        if py:
            p.warning(py["level"], py["msg"], i + 1)
            continue
        if COMPILE_SENTENCE in line:
            error = p.pending[1] if p.pending is not None else ""
            p.pending = None
            p.compile_failure(error, i + 1)
            continue
        spd = _SPD_LOG.match(line)
        if spd and spd["msg"].strip() == "TRACE":
            p.marker = i + 1
        elif spd:
            p.warning({"W": "WARNING", "E": "ERROR"}[spd["level"]], spd["msg"], i + 1)
    p.flush()
    return list(p.records.values())


def _name(op: str) -> str:
    return op[len("aten::"):] if op.startswith("aten::") else op


def op_key(op: str) -> str:
    """``aten::mul.Tensor`` / ``mul`` / ``aten::mul`` -> ``mul`` (the op without overload)."""
    return _name(op).split("::", 1)[-1].split(".", 1)[0].strip()


def match_ops(log_op: str, ops: list[str]) -> tuple[list[str], bool]:
    """Region ops the log's op name stands for: ``(matches, ambiguous)``.

    The log names an op as torch-rbln's Python fallback path writes it (``aten::where``, no
    overload, for both ``aten::where.self`` and ``aten::where.self_out``); the region keys
    the shim's registered names. A log name with an overload matches only itself; a bare
    name matches the one region op of that name, and is ambiguous (merged into none) when
    several overloads of it ran, even if one of them is the bare name (``aten::max`` next
    to ``aten::max.unary_out``).
    """
    if "." in _name(log_op):
        return [o for o in ops if _name(o) == _name(log_op)], False
    same = [o for o in ops if op_key(o) == op_key(log_op)]
    return same, len(same) > 1


def _fix(reason: str | None) -> str:
    m = _ALIGN.search(reason or "")
    if m:
        return (f"pad/bucket that dimension to a multiple of {m.group(1)} so the device "
                "kernel applies")
    return ("no RBLN kernel for this op: it runs on the host every call; keep it out of the "
            "hot path or ask for a device kernel")


def _info(rec: LogFallback) -> Detail:
    info: Detail = {"op": rec.op, "count": rec.count, "reason": rec.reason,
                            "sites": [dict(s) for s in rec.sites]}
    if rec.bare_traces:
        info["traces_without_site"] = rec.bare_traces
    return info


def merge_log(agg: Aggregator, records: list[LogFallback], *, region: str | None = None,
              phase: str | None = None) -> Aggregator:
    """Merge log records into ``agg``.

    An op the region counted gets ``detail.rbln_log`` (and the log's traced site when the
    region's is missing or only a basename); a bare op name that several overloads in the
    region share is noted on each as ``detail.rbln_log_ambiguous`` and merged into none; ops
    only the log saw, compile failures, view materialisations and other warnings become
    their own signals.
    """
    fallbacks = {e.subject: e for e in agg if e.kind == "fallback"}
    base: Detail = {"source": "rbln_log", "backend": "rbln"}
    if region is not None:
        base["region"] = region
    if phase is not None:
        base["phase"] = phase
    for rec in records:
        if rec.kind == "unattributed_trace":
            continue
        site = _site(rec)
        if rec.kind == "fallback":
            matched, ambiguous = match_ops(rec.op, list(fallbacks))
            if matched and not ambiguous:
                e = fallbacks[matched[0]]
                e.detail.setdefault("rbln_log", []).append(_info(rec))
                if site is not None and _better(e.site, site):
                    e.site = site
                continue
            if ambiguous:
                for op in matched:
                    fallbacks[op].detail.setdefault("rbln_log_ambiguous", []).append(
                        dict(_info(rec), candidates=matched))
                continue
        detail = dict(base)
        if len(rec.sites) > 1:
            detail["sites"] = [dict(s) for s in rec.sites]
        if rec.sites and rec.sites[0].get("code"):
            detail["code"] = rec.sites[0]["code"]
        if rec.bare_traces:
            detail["traces_without_site"] = rec.bare_traces
        if rec.kind == "compile_fallback":
            agg.add("fallback", rec.op, reason=rec.reason, site=site, count=rec.count,
                    fix=COMPILE_FIX, detail=dict(detail, errors=[d["error"] for d in rec.details
                                                             if "error" in d] or None))
        elif rec.kind == "view_materialize":
            agg.add("host_bounce", rec.op, reason=rec.reason, site=site, count=rec.count,
                    fix=VIEW_FIX, detail=dict(detail, direction="d2h2d",
                                              views=rec.details or None))
        elif rec.kind == "warning":
            agg.add("log", rec.op, reason=rec.reason, count=rec.count,
                    detail=dict(detail, level=(rec.details or [{}])[0].get("level")))
        else:
            agg.add("fallback", rec.op, reason=rec.reason or LOG_ONLY_REASON, site=site,
                    count=rec.count, fix=_fix(rec.reason), detail=detail)
    for e in agg:
        e.detail = {k: v for k, v in e.detail.items() if v is not None}
    return agg


def _better(current: SiteDict | None, log_site: SiteDict) -> bool:
    """The log's full-path site beats none, or a basename the resolver could not place."""
    if current is None:
        return True
    return not os.path.isabs(str(current.get("file", ""))) and \
        os.path.basename(str(log_site["file"])) == os.path.basename(str(current.get("file")))


def _site(rec: LogFallback) -> SiteDict | None:
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

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
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
