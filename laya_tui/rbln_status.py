"""Is torch-rbln installed, and can its runtime load? Answered without importing torch.

With torch-rbln installed and no RBLN runtime (``rebel-compiler`` / ``librbln.so``),
``import torch`` itself raises, because torch autoloads device backends. Workers call
:func:`guard_autoload` before anything imports torch.
"""

from __future__ import annotations

import importlib.util
import os

AUTOLOAD_VAR = "TORCH_DEVICE_BACKEND_AUTOLOAD"


def torch_rbln_installed() -> bool:
    """True when the ``torch_rbln`` package is importable by name (not imported here)."""
    return importlib.util.find_spec("torch_rbln") is not None


def runtime_reason() -> str | None:
    """None when the RBLN runtime looks loadable, else why not (one line)."""
    if importlib.util.find_spec("rebel") is not None:
        return None
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if d and os.path.exists(os.path.join(d, "librbln.so")):
            return None
    return ("RBLN runtime not found: no rebel-compiler distribution (`rebel` does not import) "
            "and no librbln.so on LD_LIBRARY_PATH")


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
