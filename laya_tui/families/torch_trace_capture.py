"""Each explain and AOTI cell's own TORCH_TRACE: the structured log torch.compile writes,
sliced per cell in a warm worker, beside the cell's artifacts; tlparse's page when tlparse is
installed (docs/architecture.md, 'TORCH_TRACE: reading the logs users have').

torch writes TORCH_TRACE through one logger, ``torch._logging._internal.trace_log``
(``torch.__trace``), whose file handler is set up once per process from the environment.
``trace_structured`` formats a record only while that logger has a handler, so a cell's
slice is a handler of our own added for the cell's run and removed after it, as torch's
own ``torch/_dynamo/test_case.py`` does. It writes torch's format with torch's formatter
(``TorchLogsFormatter(trace=True)``) into ``<out>/torch_trace/<cell>/``. The slice starts
like a fresh process's log: the ``torch_version`` record, then a ``str`` record for every
file name the process interned before the cell (torch interns each name once per process,
so a later cell's log would otherwise name its files by number only).

Standard library only at import time: the worker imports this for every cell, and torch is
looked up in ``sys.modules`` only once a record arrives. ``LAYA_TUI_CELL_TRACE=0`` turns it
off (tracing adds torch's structured-logging time to every compile).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO, TypedDict

from laya_tui.core.open_types import Detail, ProbeOptions

if TYPE_CHECKING:
    from laya_tui.families.probe_context import ProbeContext

#: Families whose cells get their own slice.
TRACED_FAMILIES = ("explain", "aoti")
#: ``LAYA_TUI_CELL_TRACE=0`` turns the per-cell slices off.
ENV_SWITCH = "LAYA_TUI_CELL_TRACE"
#: torch's file name prefix for these logs (``LOG_PREFIX``); tlparse and laya-tui look for it.
LOG_PREFIX = "dedicated_log_torch_trace_"
TLPARSE_HINT = "pip install tlparse (its page of this cell's compiles)"
TLPARSE_TIMEOUT = 120.0
TRACE_LOGGER = "torch.__trace"

#: A trace record's metadata (torch's structured-log header: ``{"str": [text, index]}``,
#: ``{"artifact": {...}}``), written as JSON.
TraceMeta = dict[str, object]


class SliceSummary(TypedDict):
    """Counts of one cell's slice, read back (:func:`slice_summary`)."""

    records: int
    compiles: int
    graph_breaks: int
    recompiles: int
    bad: int
    compile_s: float
    tracing_overhead_s: float


class SliceHandler(logging.Handler):
    """Writes the trace records of one cell to its own log file, opened on the first record."""

    def __init__(self, folder: str) -> None:
        super().__init__(logging.DEBUG)
        self.folder = folder
        self.path: str | None = None
        self.records = 0
        self._stream: TextIO | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = self._stream if self._stream is not None else self._open()
            stream.write(self.format(record) + "\n")
            self.records += 1
        except Exception:  # noqa: BLE001 - logging must never break the compile it watches
            self.handleError(record)

    def _open(self) -> TextIO:
        internal = sys.modules["torch._logging._internal"]
        self.setFormatter(internal.TorchLogsFormatter(trace=True))
        os.makedirs(self.folder, exist_ok=True)
        fd, self.path = tempfile.mkstemp(prefix=LOG_PREFIX, suffix=".log", dir=self.folder)
        stream = self._stream = os.fdopen(fd, "w", encoding="utf-8")
        for meta, payload in header_records():
            stream.write(self.format(_record(meta, payload)) + "\n")
        return stream

    def close(self) -> None:
        try:
            if self._stream is not None:
                self._stream.close()
                self._stream = None
        finally:
            super().close()


def header_records() -> list[tuple[TraceMeta, str | None]]:
    """What a fresh process's log starts with: torch's version, the interned file names."""
    out: list[tuple[TraceMeta, str | None]] = []
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", None)
    if version is not None:
        out.append(({"artifact": {"name": "torch_version", "encoding": "json"}},
                    json.dumps({"pytorch_version": str(version)}, indent=0)))
    structured = sys.modules.get("torch._logging.structured")
    table = getattr(structured, "INTERN_TABLE", None) or {}
    for text, index in sorted(table.items(), key=lambda kv: kv[1]):
        out.append(({"str": [text, index]}, None))
    return out


def _record(meta: TraceMeta, payload: str | None) -> logging.LogRecord:
    rec = logging.LogRecord(TRACE_LOGGER, logging.DEBUG, __file__, 0, "", (), None)
    if payload is not None:
        meta = dict(meta, has_payload=hashlib.md5(payload.encode("utf-8"),
                                                  usedforsecurity=False).hexdigest())
    rec.metadata, rec.payload = meta, payload
    return rec


def cell_folder(opts: ProbeOptions, cell: str) -> str:
    """``<out>/torch_trace/<cell, as a file name>`` (the per-user cache without ``--out``)."""
    from laya_tui.core.files import artifact_dir

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", cell).strip("_")[:80]
    digest = hashlib.sha1(cell.encode(), usedforsecurity=False).hexdigest()[:8]
    return os.path.join(artifact_dir(opts, "torch_trace"), f"{slug}-{digest}")


def _clear(folder: str) -> None:
    """The last run's slice and page go: the folder holds this run's only."""
    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.startswith(LOG_PREFIX) and name.endswith(".log"):
            with contextlib.suppress(OSError):
                os.unlink(path)
        elif name == "tlparse" and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)


def enabled(family: str) -> bool:
    """Whether cells of ``family`` get a slice (``LAYA_TUI_CELL_TRACE=0`` turns it off)."""
    return family in TRACED_FAMILIES and os.environ.get(ENV_SWITCH, "1") != "0"


@contextlib.contextmanager
def cell_trace(ctx: ProbeContext) -> Iterator[SliceHandler | None]:
    """Around one cell's run: its TORCH_TRACE slice, then an ``artifact`` signal naming it
    (and tlparse's page). A no-op for other families and when nothing was traced."""
    if not enabled(getattr(ctx, "family", "")):
        yield None
        return
    folder = cell_folder(ctx.options, ctx.id)
    _clear(folder)
    handler = SliceHandler(folder)
    logger = logging.getLogger(TRACE_LOGGER)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        handler.close()
        if handler.path is not None:
            report_slice(ctx, handler.path, handler.records)


def slice_summary(path: str) -> SliceSummary:
    """Counts of the slice's records (compiles, graph breaks, recompiles), read back."""
    from laya_tui.core.tracelog import LogStats, read_records

    stats = LogStats(path)
    compiles = breaks = recompiles = 0
    compile_s = overhead_s = 0.0
    for rec in read_records(path, stats):
        if rec.type == "compilation_metrics":
            compiles += 1
            meta = rec.meta if isinstance(rec.meta, dict) else {}
            compile_s += _number(meta.get("entire_frame_compile_time_s"))
            overhead_s += _number(meta.get("structured_logging_overhead_s"))
        elif rec.type == "artifact" and rec.name == "dynamo_graph_break_reason":
            breaks += 1
        elif rec.type == "artifact" and rec.name == "recompile_reasons":
            recompiles += 1
    # torch's own measure of what the structured logging added to these compiles
    return {"records": stats.records, "compiles": compiles, "graph_breaks": breaks,
            "recompiles": recompiles, "bad": stats.bad, "compile_s": round(compile_s, 6),
            "tracing_overhead_s": round(overhead_s, 6)}


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def tlparse_command() -> str | None:
    """The ``tlparse`` program: beside this interpreter (a venv), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "tlparse")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("tlparse")


def run_tlparse(log: str, out: str) -> tuple[str | None, str | None]:
    """tlparse's page of ``log`` written to ``out``: (index.html, None) or (None, why not)."""
    exe = tlparse_command()
    if exe is None:
        return None, f"tlparse not installed: {TLPARSE_HINT}"
    try:
        proc = subprocess.run([exe, log, "-o", out, "--overwrite", "--no-browser"],
                              capture_output=True, text=True, timeout=TLPARSE_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"tlparse did not run: {type(exc).__name__}: {exc}"[:300]
    index = os.path.join(out, "index.html")
    if proc.returncode != 0 or not os.path.isfile(index):
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or [""]
        return None, f"tlparse exited {proc.returncode}: {tail[0][:200]}"
    return index, None


def report_slice(ctx: ProbeContext, path: str, records: int) -> None:
    """The slice as an ``artifact`` signal, and tlparse's page as another when it ran."""
    try:
        detail: Detail = dict(slice_summary(path))
    except OSError:
        detail = {"records": records}
    folder = os.path.dirname(path)
    detail["open"] = f"laya-tui show {folder}"
    index, why = run_tlparse(path, os.path.join(folder, "tlparse"))
    detail["tlparse"] = index if index else why
    ctx.artifact("torch trace", path, detail=detail)
    if index:
        ctx.artifact("tlparse page", index, detail={"log": path})
