"""One pass over one TORCH_TRACE log: what it says per compile (start stack, metrics, graph
breaks, failing guards, guard origins, cache events), its failed exports and its counts, for
:mod:`laya_tui.report.trace_import` (docs/architecture.md, 'TORCH_TRACE: reading the logs
users have'). Standard library only.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from laya_tui.core.open_types import JsonObject
from laya_tui.core.tracelog import CompileKey, LogStats, Record, TraceFrame, read_records
from laya_tui.report import trace_facts as tf

_CACHE = re.compile(r"^(\w+?)_cache_(hit|miss|bypass)$")
#: Payloads the import reads (the rest are skipped unread).
_PAYLOAD_ARTIFACTS = frozenset(("dynamo_graph_break_reason", "recompile_reasons", "dynamo_error",
                                "make_fx_fail_partial", "torch_version"))
_PAYLOAD_TYPES = frozenset(("dynamo_cpp_guards_str",))


def want_payload(kind: str, meta: object) -> bool:
    """Whether the import reads a record's payload (the rest are skipped unread)."""
    if kind == "artifact":
        return isinstance(meta, dict) and meta.get("name") in _PAYLOAD_ARTIFACTS
    return kind in _PAYLOAD_TYPES


class Unbacked(TypedDict):
    """The last unbacked symbol the log created (``u0``) and the user line that made it."""

    symbol: object  # as the record has it (a str from torch)
    site: TraceFrame | None


class ExportFailure(TypedDict):
    """A failed export the log records: ``kind`` (``make_fx_fail_partial``,
    ``missing_fake_kernel``, ``mismatched_fake_kernel``), its ``line`` in the log, the stack,
    and per kind where the partial graph stopped or the fake kernel's op and reason."""

    kind: str
    line: int
    stack: list[TraceFrame]
    stop: NotRequired[tf.CodeSite | None]
    unbacked: NotRequired[Unbacked | None]
    op: NotRequired[object]  # as the record has it (shown in a message)
    reason: NotRequired[object]


@dataclass
class Compile:
    """What the log said about one compile of one frame."""

    key: CompileKey
    start_stack: list[TraceFrame] = field(default_factory=list)
    metrics: JsonObject | None = None  # the compilation_metrics record, as torch wrote it
    breaks: list[tf.GraphBreakFacts] = field(default_factory=list)
    guard_failures: list[str] = field(default_factory=list)
    origins: dict[str, tf.CodeSite] = field(default_factory=dict)
    cache: Counter[str] = field(default_factory=Counter)
    error: str | None = None


@dataclass
class TraceLog:
    """Everything one log file said, gathered in one pass."""

    stats: LogStats
    compiles: dict[CompileKey, Compile] = field(default_factory=dict)
    exports: list[ExportFailure] = field(default_factory=list)
    unbacked: Unbacked | None = None
    cache: Counter[str] = field(default_factory=Counter)
    torch_version: str | None = None

    def compile(self, key: CompileKey) -> Compile:
        c = self.compiles.get(key)
        if c is None:
            c = self.compiles[key] = Compile(key)
        return c


def read_log(path: str) -> TraceLog:
    """One pass over one log: compiles by compile id, exports, counts."""
    log = TraceLog(LogStats(path))
    stats = log.stats
    for rec in read_records(path, stats, want_payload):
        key = rec.compile_key
        kind, name = rec.type, rec.name
        if kind == "chromium_event":
            continue
        if kind == "artifact" and name:
            m = _CACHE.match(name)
            if m:
                event = f"{m.group(1)}:{m.group(2)}"
                log.cache[event] += 1
                if key is not None:
                    log.compile(key).cache[event] += 1
                continue
            _artifact(log, rec, key, name)
        elif key is not None:
            _compile_record(log, rec, key)
        elif kind == "create_unbacked_symbol" and isinstance(rec.meta, dict):
            stack = tf.user_only(stats.stack(rec.meta.get("user_stack")))
            log.unbacked = {"symbol": rec.meta.get("symbol"),
                            "site": stack[-1] if stack else None}
        elif kind in ("missing_fake_kernel", "mismatched_fake_kernel") and isinstance(
                rec.meta, dict):
            log.exports.append({"kind": kind, "line": rec.line, "op": rec.meta.get("op"),
                                "reason": rec.meta.get("reason"), "stack": []})
    return log


def _artifact(log: TraceLog, rec: Record, key: CompileKey | None, name: str) -> None:
    if name == "torch_version":
        data = rec.json_payload()
        if isinstance(data, dict) and data.get("pytorch_version"):
            log.torch_version = str(data["pytorch_version"])
    elif key is None and name == "make_fx_fail_partial":
        stack = log.stats.stack(rec.envelope.get("stack"))
        log.exports.append({"kind": name, "line": rec.line, "stack": stack,
                            "stop": tf.partial_graph_stop(rec.payload or ""),
                            "unbacked": log.unbacked})
    elif key is None:
        return
    elif name == "dynamo_graph_break_reason" and rec.payload is not None:
        gb = tf.parse_graph_break(rec.payload)
        gb["record_line"] = rec.line
        log.compile(key).breaks.append(gb)
    elif name == "recompile_reasons":
        # one reason is written as its text, several as a JSON list (torch/_dynamo/guards.py)
        data = rec.json_payload()
        if isinstance(data, list):
            reasons = [str(r) for r in data]
        else:
            reasons = [data] if isinstance(data, str) else [rec.payload or ""]
        log.compile(key).guard_failures.extend(r for r in reasons if r.strip())
    elif name == "dynamo_error" and rec.payload:
        lines = [ln for ln in rec.payload.strip().splitlines() if ln.strip()]
        log.compile(key).error = lines[-1].strip() if lines else None


def _compile_record(log: TraceLog, rec: Record, key: CompileKey) -> None:
    kind = rec.type
    if kind == "dynamo_start" and isinstance(rec.meta, dict):
        log.compile(key).start_stack = log.stats.stack(rec.meta.get("stack"))
    elif kind == "compilation_metrics" and isinstance(rec.meta, dict):
        log.compile(key).metrics = rec.meta
    elif kind == "dynamo_cpp_guards_str" and rec.payload:
        log.compile(key).origins = tf.guard_origins(rec.payload)
