"""The files beside a kernel file that import it (stdlib only).

A library module of a kernel folder (TileLang's ``gemm_sp/sparse_utils.py``,
``deepseek_v32/inference/kernel.py``) often has no entry point of its own: its kernels are
built by the files that import it. Those files, read statically, are where a cell of such a
kernel looks for its arguments (their own run builds it,
:func:`laya_tui.families.tilelang.capture.capture_file`).
"""

from __future__ import annotations

import ast
import os

#: how many importing files a cell runs at most (each run is bounded by the capture time)
IMPORTERS = 3

_PARSED: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}


def importers_of(path: str, limit: int = IMPORTERS) -> list[str]:
    """The ``.py`` files in ``path``'s folder that import it by name (``import stem``,
    ``from stem import ...``, ``from . import stem``, ``from .stem import ...``), example
    files before ``test_*``/``regression_*``/``bench*`` ones, at most ``limit``."""
    path = os.path.realpath(path)
    folder, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = [os.path.join(folder, n) for n in names
             if n.endswith(".py") and os.path.join(folder, n) != path
             and stem in _imported(os.path.join(folder, n))]
    found.sort(key=lambda f: os.path.basename(f).startswith(("test", "regression", "bench")))
    return found[:limit]


def _imported(file: str) -> frozenset[str]:
    """The last dotted part of every module ``file`` imports (cached by size and mtime)."""
    try:
        st = os.stat(file)
    except OSError:
        return frozenset()
    stamp = (st.st_size, st.st_mtime_ns)
    hit = _PARSED.get(file)
    if hit is not None and hit[0] == stamp:
        return hit[1]
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
            if not node.module or node.level:
                names.update(a.name for a in node.names)
    _PARSED[file] = (stamp, frozenset(names))
    return _PARSED[file][1]
