"""results.json beside each package: its schema, validation, and the package cache folders.

Plain Python (jsonschema is imported lazily): tests and reports can read results without torch.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from laya_tui.families.aoti.records import JsonSchema, ResultsDoc

RESULTS_SCHEMA_ID = "laya-tui.aoti-results/1"
PACKAGE_NAME = "model.pt2"
RESULTS_NAME = "results.json"
#: Older package folders kept per cell when the cache key changes.
KEEP_OLD = 2

_NUM = {"type": "number"}
_NUM_OR_NULL = {"type": ["number", "null"]}
_STEP = {
    "type": "object",
    "required": ["ok"],
    "properties": {"ok": {"type": "boolean"}, "seconds": _NUM_OR_NULL,
                   "cached": {"type": "boolean"}},
}
_HEAD = {
    "type": "object",
    "required": ["max_logit_delta", "max_prob_delta", "limit", "argmax_agree", "passed"],
    "properties": {
        "max_logit_delta": _NUM_OR_NULL, "max_prob_delta": _NUM_OR_NULL, "limit": _NUM,
        "prob_limit": _NUM, "argmax_agree": {"type": "array", "items": {"type": "boolean"}},
        "passed": {"type": "boolean"}, "vs_same_dtype_eager": _NUM_OR_NULL,
        "fresh_vs_warm": _NUM_OR_NULL, "vs_compiled": _NUM_OR_NULL,
        "compiled_vs_reference": _NUM_OR_NULL,
    },
}
SCHEMA: JsonSchema = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema", "model", "dtype", "key", "environment", "steps", "shapes",
                 "failures", "ok"],
    "properties": {
        "schema": {"const": RESULTS_SCHEMA_ID},
        "model": {"type": "string"},
        "dtype": {"type": "string"},
        "key": {"type": "string", "minLength": 16},
        "ok": {"type": "boolean"},
        "package": {"type": ["string", "null"]},
        "package_bytes": {"type": ["integer", "null"]},
        "environment": {"type": "object", "required": ["torch", "python"]},
        "input_spec": {"type": ["object", "null"]},
        "limits": {"type": "object"},
        "steps": {
            "type": "object",
            "properties": {k: _STEP for k in ("export", "package", "load-fresh", "load-warm",
                                               "eager", "compile")},
        },
        "shapes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "heads", "latency"],
                "properties": {
                    "name": {"type": "string"},
                    "dims": {"type": "object"},
                    "heads": {"type": "object", "additionalProperties": _HEAD},
                    "latency": {"type": "object", "additionalProperties": _NUM_OR_NULL},
                    "ratios": {"type": "object", "additionalProperties": _NUM_OR_NULL},
                },
            },
        },
        "failures": {
            "type": "array",
            "items": {"type": "object", "required": ["step", "exception", "line"],
                      "properties": {"step": {"type": "string"},
                                     "exception": {"type": "string"},
                                     "line": {"type": "string"}}},
        },
    },
}


def validate_results(doc: ResultsDoc) -> None:
    """Raise ``jsonschema.ValidationError`` when ``doc`` is not a valid results.json."""
    import jsonschema

    jsonschema.validate(doc, SCHEMA)


def write_results(path: Path, doc: ResultsDoc) -> bool:
    """Validate and write ``doc`` atomically; False when jsonschema is absent (unvalidated).

    A source-tree run on a bare GPU host may lack jsonschema: the measured results still
    get written rather than lost, and the caller says they were not validated.
    """
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        validated = False
    else:
        validate_results(doc)
        validated = True
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)
    return validated


def read_results(path: Path) -> ResultsDoc | None:
    """A previous results.json, or None when absent or unreadable."""
    try:
        doc: ResultsDoc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc


def default_root() -> Path:
    """``$XDG_CACHE_HOME/laya-tui/aoti`` or ``~/.cache/laya-tui/aoti``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "laya-tui" / "aoti"


def output_root(out: str | None) -> Path:
    """Where packages go: ``<--out>/aoti`` or the per-user cache folder."""
    return Path(out) / "aoti" if out else default_root()


def slug(text: str) -> str:
    """A folder-safe form of a cell name."""
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    return keep.strip("._")[:80] or "model"


def cell_dir(root: Path, name: str, key: str) -> Path:
    """The folder of one (cell, cache key) package."""
    return root / f"{slug(name)}-{key[:16]}"


def prune_old(root: Path, name: str, current: Path, keep: int = KEEP_OLD) -> list[str]:
    """Remove all but the ``keep`` newest other folders of the same cell; return removed."""
    prefix = f"{slug(name)}-"
    others = [p for p in root.glob(prefix + "*") if p.is_dir() and p != current
              and len(p.name) == len(prefix) + 16]
    others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    removed = []
    for old in others[keep:]:
        shutil.rmtree(old, ignore_errors=True)
        removed.append(str(old))
    return removed
