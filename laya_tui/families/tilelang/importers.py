"""The files that import a kernel file (stdlib only).

A library module of a kernel folder (TileLang's ``gemm_sp/sparse_utils.py``,
``deepseek_v32/inference/kernel.py``) often has no entry point of its own: its kernels are
built by the files that import it. Those files, read statically, are where a cell of such a
kernel looks for its arguments (their own run builds it,
:func:`laya_tui.families.tilelang.capture.capture_file`): first the files beside it, then
the rest of the workspace (a project's ``tests/test_*.py`` that build its kernels at the
sizes they check, ``from pkg.kernels.silu import silu_kernel`` or ``from pkg.kernels
import silu_kernel``).
"""

from __future__ import annotations

import ast
import os
import time

#: how many importing files a cell runs at most (each run is bounded by the capture time)
IMPORTERS = 3

#: the workspace files read at most when looking for a kernel file's importers
WORKSPACE_FILES = 3000
#: folders never searched (environments, build output, version control)
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}
_WALK_SECONDS = 10.0  # a run's cells share one walk of the workspace

_PARSED: dict[str, tuple[tuple[int, int], frozenset[str], bool]] = {}
_WALKED: dict[str, tuple[float, list[str]]] = {}


def importers_of(path: str, limit: int = IMPORTERS, workspace: str | None = None,
                 kernel: str | None = None) -> list[str]:
    """The ``.py`` files with an entry point (``__main__``, ``main()``, ``test*``) that
    import ``path`` by name (``import stem``, ``from stem import ...``, ``from . import
    stem``, ``from .stem import ...``, or its package with ``kernel``'s name), at most
    ``limit``: those in its folder first (example files before
    ``test_*``/``regression_*``/``bench*`` ones), then, with ``workspace``, the workspace's
    other files (those naming ``kernel`` first, tests first among equals)."""
    path = os.path.realpath(path)
    folder, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    found = [os.path.join(folder, n) for n in names
             if n.endswith(".py") and os.path.join(folder, n) != path
             and stem in _imported(os.path.join(folder, n)) and _runs(os.path.join(folder, n))]
    found.sort(key=lambda f: os.path.basename(f).startswith(("test", "regression", "bench")))
    if workspace and len(found) < limit:
        beside = set(found)
        ranked = []
        for other in _workspace_files(os.path.realpath(workspace)):
            if other == path or other in beside or os.path.dirname(other) == folder \
                    or not _runs(other):
                continue
            got = _imported(other)
            named = bool(kernel) and kernel in got
            if named or stem in got:
                test = os.path.basename(other).startswith("test")
                ranked.append((not named, not test, other))
        found += [f for *_, f in sorted(ranked)]
    return found[:limit]


def _workspace_files(workspace: str) -> list[str]:
    """The workspace's ``.py`` files, sorted, without hidden folders, virtual environments
    and build output (at most :data:`WORKSPACE_FILES`; one walk serves a run's cells)."""
    hit = _WALKED.get(workspace)
    if hit is not None and time.monotonic() - hit[0] < _WALK_SECONDS:
        return hit[1]
    out: list[str] = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS
                         and not os.path.isfile(os.path.join(root, d, "pyvenv.cfg")))
        out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
        if len(out) >= WORKSPACE_FILES:
            break
    out = [os.path.realpath(f) for f in out[:WORKSPACE_FILES]]
    _WALKED[workspace] = (time.monotonic(), out)
    return out


def _imported(file: str) -> frozenset[str]:
    """The last dotted part of every module ``file`` imports (cached by size and mtime)."""
    return _read(file)[0]


def _runs(file: str) -> bool:
    """Whether ``file`` has an entry point a capture runs (a ``__main__`` block, ``main()``
    or ``test*`` functions): a package's ``__init__`` or a library module has none."""
    return _read(file)[1]


def _read(file: str) -> tuple[frozenset[str], bool]:
    try:
        st = os.stat(file)
    except OSError:
        return frozenset(), False
    stamp = (st.st_size, st.st_mtime_ns)
    hit = _PARSED.get(file)
    if hit is not None and hit[0] == stamp:
        return hit[1], hit[2]
    names: set[str] = set()
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read(), filename=file)
    except (OSError, SyntaxError, ValueError):
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Import):
            names.update(a.name.rsplit(".", 1)[-1] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.module:
                names.add(node.module.rsplit(".", 1)[-1])
            names.update(a.name for a in node.names)  # a module, or a kernel by name
    runs = tree is not None and any(
        isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)
        or isinstance(n, ast.FunctionDef) and (n.name == "main" or n.name.startswith("test"))
        for n in tree.body)
    _PARSED[file] = (stamp, frozenset(names), runs)
    return _PARSED[file][1], runs
