"""Reading users' sources and placing artifacts: one implementation for the workers and every
front end (dashboard, HTML page). Standard library only."""

from __future__ import annotations

import os
from itertools import islice
from typing import Any

from laya_tui.core.errors import UsageError


def source_excerpt(path: str, line: int, context: int) -> tuple[str, int] | None:
    """(text, first line number) around ``line`` of ``path``; None when unreadable or empty."""
    start = max(1, line - context)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = list(islice(fh, start - 1, line + context))
    except OSError:
        return None
    if not lines:
        return None
    return "".join(lines), start


def artifact_dir(opts: dict[str, Any], name: str) -> str:
    """``<--out>/name``, or ``name`` in the per-user cache folder of laya-tui; under
    ``--env`` (``opts["env"]``), ``<...>/@env/name``: each environment its own files."""
    if opts.get("env"):
        name = os.path.join(f"@{opts['env']}", name)
    out = opts.get("out")
    if out:
        return os.path.join(os.path.abspath(out), name)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "laya-tui", name)


def check_output_path(path: str | None) -> None:
    """Fail early (before any probe runs) when the report cannot be written."""
    if not path or path == "-":
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write report {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"cannot write report {path}: permission denied")
    if os.path.isdir(path):
        raise UsageError(f"cannot write report {path}: it is a folder")
