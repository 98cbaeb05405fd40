"""Is torch-rbln installed, and can its runtime load? Answered without importing torch.

With torch-rbln installed and no RBLN runtime (``rebel-compiler`` / ``librbln.so``),
``import torch`` itself raises, because torch autoloads device backends. Workers call
:func:`guard_autoload` before anything imports torch.

"Runtime present" is decided the way torch-rbln decides it: its own
``torch_rbln/_internal/rbln_runtime_lib.py`` (standard library only, loaded here by path so
the package ``__init__``, which imports torch, never runs): a ``librbln.so`` already mapped
into the process, else ``resolve_runtime_library()`` (``LD_LIBRARY_PATH``, the
rebel-compiler distribution's record anchored on the ``rebel`` package, its source build
tree). A runtime present does not mean an NPU is: that is ``torch.rbln.is_available()``.
"""

from __future__ import annotations

import importlib.util
import os
from types import ModuleType
from typing import TypedDict

AUTOLOAD_VAR = "TORCH_DEVICE_BACKEND_AUTOLOAD"
RUNTIME_LIB_MODULE = os.path.join("_internal", "rbln_runtime_lib.py")
_runtime_lib: list[ModuleType | None] = []


def torch_rbln_installed() -> bool:
    """True when the ``torch_rbln`` package is importable by name (not imported here)."""
    return importlib.util.find_spec("torch_rbln") is not None


def torch_rbln_dir() -> str | None:
    """The installed ``torch_rbln`` package directory (found, not imported)."""
    try:
        spec = importlib.util.find_spec("torch_rbln")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def runtime_lib_module(package_dir: str | None = None) -> ModuleType | None:
    """torch-rbln's own ``rbln_runtime_lib`` loaded by path (cached), or None if absent."""
    if package_dir is None and _runtime_lib:
        return _runtime_lib[0]
    d = package_dir or torch_rbln_dir()
    mod: ModuleType | None = None
    path = os.path.join(d, RUNTIME_LIB_MODULE) if d else None
    if path and os.path.isfile(path):
        spec = importlib.util.spec_from_file_location("_laya_rbln_runtime_lib", path)
        if spec is not None and spec.loader is not None:
            mod = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(mod)
            except Exception:  # a future version that needs more than the stdlib
                mod = None
    if package_dir is None:
        _runtime_lib.append(mod)
    return mod


class RuntimeLibrary(TypedDict, total=False):
    """Where torch-rbln's runtime library is (``path``, found by ``source``), or ``reason``
    why it is not found."""

    path: str
    source: str
    reason: str


def runtime_library(package_dir: str | None = None) -> RuntimeLibrary:
    """``{"path", "source"}`` of the librbln.so torch-rbln would load, or ``{"reason"}``."""
    mod = runtime_lib_module(package_dir)
    if mod is None:
        return _legacy_lookup()
    try:
        loaded = mod.loaded_runtime_libraries()
    except Exception:
        loaded = []
    if loaded:
        return {"path": loaded[0].removesuffix(" (deleted)"), "source": "already mapped"}
    try:
        path, source = mod.resolve_runtime_library()
    except FileNotFoundError as exc:
        return {"reason": " ".join(str(exc).split())[:800]}
    except Exception as exc:  # a broken record or a malformed environment
        return {"reason": f"{type(exc).__name__}: {exc}"[:800]}
    return {"path": path, "source": source}


def _legacy_lookup() -> RuntimeLibrary:
    """For a torch-rbln without ``rbln_runtime_lib``: librbln.so on LD_LIBRARY_PATH only."""
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        path = os.path.join(d, "librbln.so") if d else ""
        if path and os.path.isfile(path):
            return {"path": path, "source": "LD_LIBRARY_PATH"}
    return {"reason": "RBLN runtime not found: this torch-rbln has no rbln_runtime_lib to ask, "
                      "and no librbln.so is on LD_LIBRARY_PATH"}


def runtime_reason() -> str | None:
    """None when torch-rbln would find its runtime library, else why not (one line)."""
    return runtime_library().get("reason")


def guard_autoload(environ: dict[str, str] | None = None) -> str | None:
    """Set ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` when torch-rbln would break ``import torch``.

    Returns the reason it was set, or None when nothing was changed. A value the user set
    explicitly is left alone.
    """
    env = os.environ if environ is None else environ
    if AUTOLOAD_VAR in env or not torch_rbln_installed():
        return None
    reason = runtime_reason()
    if reason is None:
        return None
    env[AUTOLOAD_VAR] = "0"
    return f"torch-rbln is installed but its runtime is missing ({reason}); set {AUTOLOAD_VAR}=0"
