"""The repository's demo ``kernels/`` folder, imported as ``laya_demo_kernels``.

Not as ``kernels``: that name belongs to the installed Hugging Face ``kernels`` package,
which transformers imports whenever a model loads (tests/conftest.py keeps the repository
root behind the installed packages, as the worker keeps a workspace)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FOLDER = Path(__file__).resolve().parents[1] / "kernels"
NAME = "laya_demo_kernels"


def demo_kernel(module: str) -> ModuleType:
    """``kernels/<module>.py`` of the demo (``common``, ``gemm``, ``reference``, ...)."""
    if NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            NAME, FOLDER / "__init__.py", submodule_search_locations=[str(FOLDER)])
        assert spec is not None and spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules[NAME] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{NAME}.{module}")
