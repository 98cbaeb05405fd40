"""Load and validate a baseline report (``--baseline``, ``diff``, ``merge``, the SARIF and
dashboard readers of an earlier report): every problem is a one-line UsageError naming the
file. The comparison itself is ``report/baseline.py``'s. Standard library only.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from laya_tui.core import json_chunks
from laya_tui.core.errors import UsageError
from laya_tui.core.gc_sight import freeze_if_large
from laya_tui.core.report_types import ReportDict
from laya_tui.core.results import upgrade_compile_signals
from laya_tui.core.signals import KINDS, READABLE_SCHEMAS, SCHEMA_ID, STATUSES

__all__ = ["CURRENT_VERSION", "PREFIX", "REQUIRED", "Baseline", "load_baseline", "no_gc",
           "parse_baseline"]

PREFIX = "laya-tui.report/"
CURRENT_VERSION = int(SCHEMA_ID.rpartition("/")[2])
REQUIRED = ("schema", "environment", "probes", "summary", "gates")
_KINDS = frozenset(KINDS)
_STATUSES = frozenset(STATUSES)


@dataclass
class Baseline:
    """A loaded, validated earlier report."""

    path: str
    report: ReportDict

    @property
    def created(self) -> str | None:
        """When the baseline report was written (its ``created`` field)."""
        value = self.report.get("created")
        return value if isinstance(value, str) else None


def load_baseline(path: str) -> Baseline:
    """Read and validate a baseline report; every problem is a one-line UsageError."""
    if os.path.isdir(path):
        raise UsageError(f"baseline {path} is a folder, not a laya-tui report")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise UsageError(f"baseline {path} does not exist") from None
    except OSError as exc:
        raise UsageError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    try:
        text = json_chunks.decode_utf8(raw)  # a piece at a time: the loop runs between
    except UnicodeDecodeError:
        raise UsageError(f"baseline {path} is not a laya-tui report (not UTF-8 JSON)") from None
    return parse_baseline(text, path)


def parse_baseline(text: str, path: str = "<baseline>") -> Baseline:
    """Validate the text of a baseline report (see :func:`load_baseline`)."""
    body = text.strip()
    if not body:
        raise UsageError(f"baseline {path} is empty (truncated?); regenerate it with "
                         "laya-tui --headless --json")
    try:
        with no_gc():
            doc = json_chunks.loads(body)  # json.loads in pieces (a loader thread)
            # a tree of plain values (no cycles) that lives as long as its reader: out of
            # the collector's sight before it runs again (its first young collection walked
            # every parsed object, 40 ms of holding the lock at 200,000 signals)
            freeze_if_large(len(body) // 200)  # ~200 characters a signal
    except json.JSONDecodeError as exc:
        if exc.pos >= len(body) or exc.msg.startswith("Unterminated string"):
            raise UsageError(f"baseline {path} is truncated (its JSON stops at line "
                             f"{exc.lineno}, column {exc.colno}); regenerate it") from None
        raise UsageError(f"baseline {path} is not a laya-tui report (invalid JSON: {exc.msg} "
                         f"at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise UsageError(f"baseline {path} is not a laya-tui report (JSON nested too deeply)"
                         ) from None
    _check_report(doc, path)
    # report/1 filed a frame's first compile as a recompile ("cold compile ..."): compile now
    upgrade_compile_signals(doc["probes"])
    return Baseline(path=path, report=doc)


def _check_report(doc: object, path: str) -> None:
    if not isinstance(doc, dict):
        raise UsageError(f"baseline {path} is not a laya-tui report (a JSON "
                         f"{type(doc).__name__.replace('dict', 'object')}, not an object)")
    schema = doc.get("schema")
    if not isinstance(schema, str) or not schema.startswith(PREFIX):
        raise UsageError(f"baseline {path} is not a laya-tui report (no \"schema\": "
                         f"\"{SCHEMA_ID}\" field)")
    version = schema[len(PREFIX):]
    if not version.isdigit():
        raise UsageError(f"baseline {path} is not a laya-tui report (unknown schema "
                         f"{schema!r})")
    if int(version) > CURRENT_VERSION:
        raise UsageError(f"baseline {path} was written by a newer laya-tui (schema {schema}; "
                         f"this laya-tui reads {SCHEMA_ID}): upgrade laya-tui or regenerate "
                         "the baseline")
    if schema not in READABLE_SCHEMAS:
        raise UsageError(f"baseline {path} has the old schema {schema} (this laya-tui reads "
                         f"{SCHEMA_ID}): regenerate the baseline")
    tool = doc.get("tool")
    if isinstance(tool, dict) and tool.get("name") not in (None, "laya-tui"):
        raise UsageError(f"baseline {path} is not a laya-tui report (written by "
                         f"{tool.get('name')!r})")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise UsageError(f"baseline {path} is incomplete (no {', '.join(missing)}; truncated?)"
                         "; regenerate it")
    probes = doc["probes"]
    if not isinstance(probes, list):
        raise UsageError(f"baseline {path}: \"probes\" is not a list")
    for i, p in enumerate(probes):
        if not (isinstance(p, dict) and isinstance(p.get("id"), str)
                and p.get("status") in _STATUSES and isinstance(p.get("signals", []), list)):
            raise UsageError(f"baseline {path}: probe #{i} is malformed (needs an id, a status "
                             f"among {', '.join(STATUSES)} and a signal list)")
        for j, s in enumerate(p.get("signals", ())):
            if not isinstance(s, dict) or s.get("kind") not in _KINDS:
                raise UsageError(f"baseline {path}: probe {p['id']} signal #{j} is malformed "
                                 "(no known kind)")
            for fld in ("count", "bytes"):
                v = s.get(fld)
                if v is not None and (type(v) is not int or v < 0):
                    raise UsageError(f"baseline {path}: probe {p['id']} signal #{j}: {fld} "
                                     f"must be a whole number >= 0, got {v!r}")


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic GC: indexing allocates ~1e5 tuples and lists that form no cycles."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
