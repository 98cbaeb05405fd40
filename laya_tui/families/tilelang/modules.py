"""Import kernel files from any folder, fresh after every edit (worker side).

A folder with ``__init__.py`` is imported as a package under a private alias without
running its ``__init__`` (one broken kernel must not take its siblings down), so relative
imports (``from .common import ...``) work wherever the folder lives. A plain folder is
put on ``sys.path`` and its files imported under private names. When any ``.py`` file of
the folder changes (mtime or size), every module imported from it is dropped and
re-imported on the next request, so a warm worker sees edits.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import types
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.records import KernelArgs

if TYPE_CHECKING:
    from laya_tui.families.tilelang.tl_objects import PrimFunc

_FINGERPRINTS: dict[str, tuple[tuple[str, int, int], ...]] = {}


def _fingerprint(folder: str) -> tuple[tuple[str, int, int], ...]:
    items = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            items.append((name, st.st_mtime_ns, st.st_size))
    return tuple(items)


def alias_for(folder: str) -> str:
    """The private package/module prefix used for a kernel folder."""
    return "_laya_kernels_" + hashlib.sha1(os.path.realpath(folder).encode()).hexdigest()[:10]


def _purge(prefix: str) -> None:
    for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")
                 or n.startswith(prefix + "_")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def refresh(folder: str) -> bool:
    """Drop the folder's modules if any of its files changed; True when they were dropped."""
    folder = os.path.realpath(folder)
    fp = _fingerprint(folder)
    if _FINGERPRINTS.get(folder) == fp:
        return False
    changed = folder in _FINGERPRINTS
    _FINGERPRINTS[folder] = fp
    _purge(alias_for(folder))
    return changed


def package_alias(folder: str) -> str | None:
    """The private package a kernel folder with ``__init__.py`` is imported under (created,
    without running its ``__init__``), or None for a plain folder."""
    folder = os.path.realpath(folder)
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    refresh(folder)
    alias = alias_for(folder)
    if alias not in sys.modules:
        pkg = types.ModuleType(alias)
        pkg.__path__ = [folder]
        pkg.__file__ = None
        pkg.__package__ = alias
        sys.modules[alias] = pkg
    return alias


def import_kernel_file(path: str) -> types.ModuleType:
    """Import (or return the current import of) the kernel module at ``path``."""
    path = os.path.realpath(path)
    folder = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    refresh(folder)
    alias = alias_for(folder)
    if package_alias(folder) is not None:
        return importlib.import_module(f"{alias}.{stem}")
    name = f"{alias}_{stem}"
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"not an importable Python file: {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def loaded_files(folder: str) -> list[str]:
    """Source files of the modules currently imported from ``folder`` (for dependencies)."""
    prefix = alias_for(folder)
    files: list[str] = []
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        if name.startswith(prefix) and file:
            files.append(os.path.realpath(file))
    return sorted(set(files))


def find_kernel_object(mod: types.ModuleType, name: str | None = None,
                       args: KernelArgs | None = None) -> tuple[PrimFunc, object]:
    """``(PrimFunc, jit object or None)`` for the kernel ``name`` of ``mod``.

    A ``@tilelang.jit`` function (``@autotune`` on top unwrapped to it) is traced with
    ``args`` (``get_tir(**args)``, as ``kernel.compile(**args)`` would); a maker (a function
    returning a PrimFunc) is called with them; a PrimFunc is taken as it is. Without
    ``name``, the first such object at module level (``tilelang.tools.compile_only``'s
    convention).
    """
    from tilelang.jit import JITImpl
    from tilelang.language.eager import PrimFunc

    def unwrap(obj: object) -> object:
        inner = getattr(obj, "jit_impl", None)  # AutoTuneImpl
        return inner if isinstance(inner, JITImpl) else obj

    if name is not None:
        if not hasattr(mod, name):
            raise LookupError(f"{getattr(mod, '__file__', mod)} no longer defines {name}")
        obj = unwrap(getattr(mod, name))
        if isinstance(obj, JITImpl):
            return obj.get_tir(**(args or {})), obj
        if isinstance(obj, PrimFunc):
            return obj, None
        if inspect.isfunction(obj):  # a maker: a function returning a PrimFunc
            func = obj(**(args or {}))
            if isinstance(func, PrimFunc):
                return func, None
            raise LookupError(f"{name}() returned a {type(func).__name__}, not a PrimFunc")
        raise LookupError(f"{name} is a {type(obj).__name__}, not a @tilelang.jit kernel or "
                          "a PrimFunc")
    for obj in vars(mod).values():
        obj = unwrap(obj)
        if isinstance(obj, JITImpl):
            return obj.get_tir(**(args or {})), obj
        if isinstance(obj, PrimFunc):
            return obj, None
    raise LookupError("no @tilelang.jit kernel or PrimFunc at module level")
