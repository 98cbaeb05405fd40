"""Find probe files and import them by path (used inside workers, never by the UI)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from laya_tui.api import ProbeSpec

SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".ruff_cache",
             "node_modules", ".laya-cache", "build", "dist"}


class ProbeFileError(Exception):
    """A probe file that cannot be imported (syntax error, import error, crash on import)."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.line = line

    def one_line(self) -> str:
        """``path:line: message`` for a terminal."""
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


def probe_files(paths: list[str]) -> list[str]:
    """Expand files and directories into probe files (``**/*.py``), sorted and deduplicated.

    Files whose names start with ``_`` inside a directory are helpers, not probes.
    """
    found: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            found.append(str(p.resolve()))
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in SKIP_DIRS and not d.startswith("."))
            for fn in sorted(filenames):
                if fn.endswith(".py") and not fn.startswith("_"):
                    found.append(str((Path(dirpath) / fn).resolve()))
    return list(dict.fromkeys(found))  # first occurrence of each, in order


def module_name_for(path: str, workspace: str) -> str:
    """A stable module name: dotted path inside the workspace, a hashed name outside."""
    path = os.path.realpath(path)
    root = os.path.realpath(workspace)
    rel = os.path.relpath(path, root)
    parts = Path(rel).with_suffix("").parts
    if not rel.startswith("..") and all(part.isidentifier() for part in parts):
        return ".".join(parts)
    digest = hashlib.sha1(path.encode()).hexdigest()[:8]
    return f"_laya_probes.{Path(path).stem}_{digest}"


def import_probe_file(path: str, workspace: str) -> ModuleType:
    """Import (or return the already imported) probe module at ``path``."""
    name = module_name_for(path, workspace)
    mod = sys.modules.get(name)
    if mod is not None and os.path.realpath(getattr(mod, "__file__", "")) == os.path.realpath(path):
        return mod
    if name.startswith("_laya_probes.") and "_laya_probes" not in sys.modules:
        pkg = ModuleType("_laya_probes")
        pkg.__path__ = []
        sys.modules["_laya_probes"] = pkg
    parent = os.path.dirname(os.path.realpath(path))
    if parent not in sys.path:
        sys.path.append(parent)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProbeFileError(path, "not an importable Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        where = exc.filename and os.path.realpath(exc.filename)
        if where and where != os.path.realpath(path) and os.path.exists(where):
            # The error is in a module the probe file imports (a kernel saved mid-edit):
            # name that file and line, and point at the probe file's import line.
            raise ProbeFileError(path, f"SyntaxError: {exc.msg} at {where}:{exc.lineno}",
                                 _user_line(exc, path)) from exc
        raise ProbeFileError(path, f"SyntaxError: {exc.msg}", exc.lineno) from exc
    except BaseException as exc:  # an import error or any crash at import time
        sys.modules.pop(name, None)
        line = _user_line(exc, path)
        raise ProbeFileError(path, f"{type(exc).__name__}: {exc}", line) from exc
    return mod


def _user_line(exc: BaseException, path: str) -> int | None:
    tb = exc.__traceback__
    line = None
    real = os.path.realpath(path)
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) == real:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _first_line(spec: ProbeSpec) -> int:
    code = getattr(spec.func, "__code__", None)
    return code.co_firstlineno if code is not None else 0


def probes_in(mod: ModuleType) -> list[ProbeSpec]:
    """The ``@probe`` functions defined in ``mod``, in source order."""
    specs = []
    for value in vars(mod).values():
        spec = getattr(value, "__laya_probe__", None)
        if isinstance(spec, ProbeSpec) and getattr(value, "__module__", None) == mod.__name__:
            specs.append(spec)
    specs.sort(key=_first_line)
    return specs
