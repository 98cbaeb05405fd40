"""Shared prelude of the kernel numeric tests: skip the importing module (with the reason)
when TileLang, torch or a C++ compiler is missing."""

from __future__ import annotations

import shutil

import pytest

tilelang = pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")
torch = pytest.importorskip("torch")
if not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")):
    pytest.skip("no C++ compiler on PATH: the CPU kernels compile with it",
                allow_module_level=True)

#: CPU specialization vs the torch fp32 reference (docs/architecture.md, 'The kernels').
ATOL = 2e-5
