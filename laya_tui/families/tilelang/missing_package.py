"""A kernel file whose run needs a package this machine lacks (stdlib only).

``from fla.ops import ...`` at the top of a TileLang example, on a host without
flash-linear-attention: ``python file.py`` fails the same way. The kernel could not be
examined here (the verdict says so), and the reason names the package and how to install it,
where it would otherwise read "kernel arguments unknown ... the file gives none" (which blames
the file for the machine)."""

from __future__ import annotations

import os
import re

_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def missing_module(error: str | None) -> str | None:
    """The top-level name of the module a ``No module named 'x.y'`` in ``error`` names, any
    module (callers decide whether it is a package to install)."""
    m = _NO_MODULE.search(error or "")
    return m.group(1).split(".")[0] if m else None


def missing_package(error: str | None, file: str) -> str | None:
    """The top-level package a ``ModuleNotFoundError`` in ``error`` names, when it is neither
    TileLang (a file written for another TileLang is a finding) nor a module of the file's
    own project (a folder or ``.py`` of that name beside the file or above it)."""
    top = missing_module(error)
    if top is None or top == "tilelang":
        return None
    folder = os.path.dirname(os.path.realpath(file))
    while True:
        if os.path.exists(os.path.join(folder, top)) or \
                os.path.isfile(os.path.join(folder, top + ".py")):
            return None  # the project's own module: a path problem, not a package
        parent = os.path.dirname(folder)
        if parent == folder:
            return top
        folder = parent


def unexamined_reason(what: str, file: str, top: str, error: str) -> str:
    """``what`` could not be examined here: the file needs ``top``, with the install hint."""
    first = (error.strip().splitlines() or [""])[0][:200]
    return (f"{what} could not be examined here: {os.path.basename(file)} needs `{top}`, "
            f"not installed here (pip install {top}): {first}")
