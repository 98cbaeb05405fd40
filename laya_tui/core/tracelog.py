"""Reading TORCH_TRACE logs: the structured records ``torch._logging.trace_structured`` writes
(docs/architecture.md, 'TORCH_TRACE: reading the logs users have').

One record is a glog line ``V1201 08:59:27.774000 10075 torch/_dynamo/convert_frame.py:303] ``
followed by a JSON envelope: the record's type as its one non-envelope key (``dynamo_start``,
``compilation_metrics``, ``artifact``...) with its metadata, plus envelope fields
(``rank``, ``compiled_autograd_id``, ``frame_id``, ``frame_compile_id``, ``attempt``,
``has_payload``: the md5 of a payload, ``stack``). A payload follows as lines that each start
with a tab. File names in stacks are interned: a ``str`` record ``[text, n]`` says what ``n``
stands for, once per process.

The reader never raises on content: a line that is neither a record nor a payload line, an
envelope that is not JSON, or a payload whose md5 does not match is counted as a bad record
(its line kept) and skipped; a record type it does not know is counted. Reading is streamed
in binary; payloads are decoded only for the records a caller asks for. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, NotRequired, TypedDict

from laya_tui.core.open_types import JsonObject

#: Envelope fields (``trace_structured``'s reserved names and what it adds); every other
#: top-level key of an envelope is the record's type.
ENVELOPE_FIELDS = frozenset((
    "rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "has_payload",
    "stack", "subgraph_name", "severity", "timestamp", "pathname", "thread",
))
#: Record types torch writes that this version knows (tlparse 0.4.3's envelope list, plus
#: the ones torch 2.13 adds); anything else is counted as unknown, never an error.
KNOWN_TYPES = frozenset((
    "str", "dynamo_start", "dynamo_output_graph", "optimize_ddp_split_graph",
    "optimize_ddp_split_child", "compiled_autograd_graph", "dynamo_guards",
    "aot_forward_graph", "aot_backward_graph", "aot_inference_graph", "aot_joint_graph",
    "inductor_pre_grad_graph", "inductor_post_grad_graph", "dynamo_cpp_guards_str",
    "inductor_output_code", "compilation_metrics", "bwd_compilation_metrics",
    "aot_autograd_backward_compilation_metrics", "graph_dump", "link",
    "symbolic_shape_specialization", "propagate_real_tensors_provenance", "guard_added",
    "create_unbacked_symbol", "expression_created", "missing_fake_kernel",
    "mismatched_fake_kernel", "artifact", "describe_storage", "describe_tensor",
    "describe_source", "dump_file", "chromium_event", "guard_added_fast", "exported_program",
    "export", "create_symbol", "propagate_real_tensors", "guard_on_data_dependent_error",
    "compilation_metrics_runtime", "bwd_compilation_metrics_runtime",
))
#: glog prefix: level, MMDD, HH:MM:SS.micro, process id, path:line, "] ".
_PREFIX = re.compile(rb"[VIWEC](\d{4} \d\d:\d\d:\d\d\.\d{6}) (\d+) [^\]\n]*?:\d+\] ")
#: ``dedicated_log_torch_trace_rank_3_abcd1234.log`` (torch's name under torch.distributed).
_RANK_NAME = re.compile(r"dedicated_log_torch_trace_rank_(\d+)_")
#: How many bad records a file keeps with their line numbers (the rest are counted).
KEEP_BAD = 20

CompileKey = tuple[int | None, int | None, int | None]
"""``(compiled_autograd_id, frame_id, frame_compile_id)``: one compile of one frame."""


@dataclass(slots=True)
class Record:
    """One structured record: its type, metadata, envelope, and payload when asked for."""

    type: str
    meta: object  # the record's JSON value: a dict for most types
    envelope: JsonObject
    line: int
    pid: int
    time: str
    payload: str | None = None

    @property
    def name(self) -> str | None:
        """An ``artifact``'s (or ``link``/``dump_file``'s) name."""
        meta = self.meta
        return meta.get("name") if isinstance(meta, dict) else None

    @property
    def compile_key(self) -> CompileKey | None:
        """The compile it belongs to, or None (no frame id: export, a top-level record)."""
        env = self.envelope
        frame = env.get("frame_id")
        if frame is None:
            return None
        return (env.get("compiled_autograd_id"), frame, env.get("frame_compile_id"))

    def json_payload(self) -> object:
        """The payload decoded as JSON (None when absent or not JSON)."""
        if self.payload is None:
            return None
        try:
            return json.loads(self.payload)
        except ValueError:
            return None


class TraceFrame(TypedDict):
    """One stack frame a log records, as a site: ``file`` (as torch wrote it), and ``line``,
    ``func`` and ``code`` (the source line) where the log has them."""

    file: str
    line: NotRequired[int]
    func: NotRequired[str]
    code: NotRequired[str]


class BadLine(TypedDict):
    """A bad record kept for the report: its line in the log and why it was skipped."""

    line: int
    why: str


@dataclass
class LogStats:
    """What reading one log found besides its records: counts, bad lines, interned names."""

    path: str
    bytes: int = 0
    lines: int = 0
    records: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)
    bad: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)
    pids: set[int] = field(default_factory=set)
    strings: dict[int, str] = field(default_factory=dict)
    first_time: str | None = None

    def add_bad(self, line: int, why: str) -> None:
        """Count one bad record; the first :data:`KEEP_BAD` keep their line and reason."""
        self.bad += 1
        if len(self.bad_lines) < KEEP_BAD:
            self.bad_lines.append({"line": line, "why": why})

    @property
    def rank(self) -> int | None:
        """The rank its records name (the lowest if several), else the file name's."""
        if self.ranks:
            return min(self.ranks)
        m = _RANK_NAME.search(os.path.basename(self.path))
        return int(m.group(1)) if m else None

    def frame(self, entry: object) -> TraceFrame | None:
        """A stack entry (``{"filename": n, "line": l, "name": f, "loc": code}``) as a site
        ``{file, line, func}`` (plus ``code``), its interned file name resolved."""
        if not isinstance(entry, dict):
            return None
        fname = entry.get("uninterned_filename")
        if fname is None:
            ref = entry.get("filename")
            fname = self.strings.get(ref, "(unknown)") if isinstance(ref, int) else ref
        if not isinstance(fname, str):
            return None
        site: TraceFrame = {"file": fname}
        if isinstance(entry.get("line"), int):
            site["line"] = entry["line"]
        if isinstance(entry.get("name"), str):
            site["func"] = entry["name"]
        if isinstance(entry.get("loc"), str) and entry["loc"]:
            site["code"] = entry["loc"]
        return site

    def stack(self, entries: object) -> list[TraceFrame]:
        """A whole stack (a list of entries) as sites, outermost first."""
        if not isinstance(entries, list):
            return []
        return [s for s in (self.frame(e) for e in entries) if s is not None]


Wanted = Callable[[str, object], bool]
"""``want(type, meta)``: whether a record's payload is decoded (and its md5 checked)."""


def read_records(path: str, stats: LogStats, want: Wanted | None = None) -> Iterator[Record]:
    """Yield the records of one TORCH_TRACE log, counting into ``stats``.

    ``str`` records are consumed (they fill ``stats.strings``) and not yielded. A record
    whose payload ``want`` asked for comes with it, md5-checked: a mismatch (a cut or
    garbled payload) makes the record bad, and it is not yielded.
    """
    with open(path, "rb") as fh:
        yield from _read(fh, stats, want)


def _read(fh: IO[bytes], stats: LogStats, want: Wanted | None) -> Iterator[Record]:
    match = _PREFIX.match
    loads = json.loads
    lineno = 0
    pending: Record | None = None  # a record whose payload lines are being collected
    payload_parts: list[bytes] = []
    expect_md5: str | None = None
    skipping = False  # payload lines of a record nobody asked for, or of a bad one
    orphan_at = 0  # the first payload line seen with no record before it

    def flush() -> Record | None:
        nonlocal pending, expect_md5
        rec, pending = pending, None
        if rec is None:
            return None
        raw = b"\n".join(payload_parts)
        payload_parts.clear()
        if expect_md5 is not None and hashlib.md5(raw, usedforsecurity=False).hexdigest() \
                != expect_md5:
            stats.add_bad(rec.line, f"payload of {rec.type} does not match its md5 (cut or "
                                    "garbled)")
            expect_md5 = None
            return None
        expect_md5 = None
        rec.payload = raw.decode("utf-8", "replace")
        return rec

    for raw_line in fh:
        lineno += 1
        stats.bytes += len(raw_line)
        if raw_line in (b"\n", b"\r\n"):  # a stutter of the log writer, never a record
            continue
        if raw_line[:1] == b"\t":
            if pending is not None:
                payload_parts.append(raw_line[1:].rstrip(b"\r\n"))
            elif not skipping and not orphan_at:
                orphan_at = lineno
            continue
        if pending is not None:
            done = flush()
            if done is not None:
                yield done
        skipping = False
        if orphan_at:
            stats.add_bad(orphan_at, "payload line with no record before it")
            orphan_at = 0
        line = raw_line.rstrip(b"\r\n")
        m = match(line)
        if m is None:
            stats.add_bad(lineno, "not a TORCH_TRACE record line")
            skipping = True
            continue
        try:
            env = loads(line[m.end():])
        except ValueError as exc:
            stats.add_bad(lineno, f"envelope is not JSON ({getattr(exc, 'msg', exc)})")
            skipping = True
            continue
        if not isinstance(env, dict):
            stats.add_bad(lineno, "envelope is not a JSON object")
            skipping = True
            continue
        kinds = [k for k in env if k not in ENVELOPE_FIELDS]
        if not kinds:
            stats.add_bad(lineno, "envelope names no record type")
            skipping = True
            continue
        kind = kinds[0]
        meta = env[kind]
        stats.records += 1
        stats.by_type[kind] += 1
        if kind not in KNOWN_TYPES:
            stats.unknown[kind] += 1
        if stats.first_time is None:
            stats.first_time = m.group(1).decode()
        pid = int(m.group(2))
        stats.pids.add(pid)
        rank = env.get("rank")
        if isinstance(rank, int):
            stats.ranks.add(rank)
        if kind == "str":
            if isinstance(meta, list) and len(meta) == 2 and isinstance(meta[1], int):
                stats.strings[meta[1]] = str(meta[0])
            skipping = True
            continue
        rec = Record(kind, meta, env, lineno, pid, m.group(1).decode())
        md5 = env.get("has_payload")
        if md5 is None:
            yield rec
            continue
        if want is not None and want(kind, meta):
            pending, expect_md5 = rec, md5 if isinstance(md5, str) else None
        else:
            skipping = True
            yield rec
    if pending is not None:
        done = flush()
        if done is not None:
            yield done
    if orphan_at:
        stats.add_bad(orphan_at, "payload line with no record before it")
    stats.lines = lineno


#: File names torch gives TORCH_TRACE logs (``LOG_PREFIX`` in torch/_logging/_internal.py).
LOG_PREFIX = "dedicated_log_torch_trace"


def trace_files(path: str) -> list[str]:
    """The logs of a TORCH_TRACE folder (torch's ``dedicated_log_torch_trace*.log``; else every
    ``*.log``), sorted by name; a file path is itself. Empty when there is none."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        return []
    names = sorted(n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))
    logs = [n for n in names if n.startswith(LOG_PREFIX) and n.endswith(".log")]
    if not logs:
        logs = [n for n in names if n.endswith(".log")]
    return [os.path.join(path, n) for n in logs]


def looks_like_trace(path: str) -> bool:
    """Whether ``path`` is a TORCH_TRACE folder or a log (its first line is a record)."""
    if os.path.isdir(path):
        return bool(trace_files(path))
    try:
        with open(path, "rb") as fh:
            head = fh.readline(65536)
    except OSError:
        return False
    return _PREFIX.match(head) is not None
