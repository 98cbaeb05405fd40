"""TileLang kernels of a ModernBERT-style encoder (docs/architecture.md, 'The kernels').

Each module holds one factory (GPU specialization by default, ``cpu=True`` for the fp32
CPU specialization) and an ``example()`` the lowering-matrix probe runs.

Importing this package imports nothing heavy: the names below load their module (and
TileLang) on first access. That matters because transformers probes
``importlib.import_module("kernels")`` (the Hugging Face kernels hub package) whenever a
model loads, and finds this folder when the workspace is on ``sys.path``; without a
``__version__`` it concludes that hub kernels are unavailable, at no cost.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "add_ln_kernel": "add_ln",
    "attn_kernel": "attn",
    "Example": "common",
    "Spec": "common",
    "compile_cpu": "common",
    "make_spec": "common",
    "gemm_geglu_kernel": "geglu",
    "gemm_kernel": "gemm",
    "rope_kernel": "rope",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kernels' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
