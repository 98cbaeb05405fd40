"""Where the installed TileLang keeps the names a file imports from a module it no longer has
(worker side: imports TileLang).

A file written for another TileLang fails at its import (``No module named
'tilelang.intrinsics'``, ``cannot import name 'jit' from 'tilelang.autotuner'``), as
``python file.py`` does here. That is the finding; what helps the user port the file is
where each name lives now: :func:`moved_hint` reads the file's failing import for the names
it asks for and looks them up in the installed TileLang's sources (a top-level ``def``,
``class`` or assignment), giving the shortest module path that exports each one.
"""

from __future__ import annotations

import ast
import importlib
import os
import re

_NO_MODULE = re.compile(r"No module named '(tilelang(?:\.[\w.]+)?)'")
_NO_NAME = re.compile(r"cannot import name '(\w+)' from '(tilelang(?:\.[\w.]+)?)'")
_SKIP_DIRS = {"3rdparty", "__pycache__", "lib", "src", "include", "testing"}


def moved_hint(message: str, file: str) -> str | None:
    """``written for another TileLang: 0.1.15 has make_mma_swizzle_layout in
    tilelang.cuda.intrinsics`` for an import error of a TileLang name in ``file``; None for
    any other error."""
    hit = _NO_NAME.search(message)
    if hit is not None:
        names, module = [hit.group(1)], hit.group(2)
    else:
        miss = _NO_MODULE.search(message)
        if miss is None:
            return None
        module = miss.group(1)
        names = _imported_from(file, module)
    try:
        import tilelang
    except ImportError:
        return None
    version = getattr(tilelang, "__version__", "installed")
    if not names:
        return f"written for another TileLang: {version} has no module {module}"
    found = {n: _where(n, os.path.dirname(tilelang.__file__)) for n in names}
    parts = [f"{n} in {where}" for n, where in found.items() if where]
    gone = [n for n, where in found.items() if not where]
    said = "; ".join(parts + ([f"no {', '.join(gone)}"] if gone else []))
    return f"written for another TileLang: {version} has {said}"


def _imported_from(file: str, module: str) -> list[str]:
    """The names ``file`` imports from ``module`` or a module under it."""
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read(), filename=file)
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == module or node.module.startswith(module + ".")):
            names += [a.name for a in node.names if a.name != "*"]
    return list(dict.fromkeys(names))


def _where(name: str, root: str) -> str | None:
    """The shortest importable module path of the installed TileLang that has ``name``."""
    pattern = re.compile(rf"^(?:def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]",
                         re.MULTILINE)
    defining: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if not pattern.search(fh.read()):
                        continue
            except OSError:
                continue
            rel = os.path.relpath(path, os.path.dirname(root))[:-3].replace(os.sep, ".")
            defining.append(rel.removesuffix(".__init__"))
    for module in sorted(defining, key=lambda m: (m.count("."), m)):
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):  # the shortest parent that re-exports it
            candidate = ".".join(parts[:depth])
            try:
                if hasattr(importlib.import_module(candidate), name):
                    return candidate
            except Exception:  # noqa: BLE001 - a module of TileLang's that fails to import
                continue
    return None
