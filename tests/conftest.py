"""Shared test setup: torch must be importable even with torch-rbln and no RBLN runtime."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from laya_tui.families.rbln_status import guard_autoload

guard_autoload()

ROOT = Path(__file__).resolve().parents[1]
# the repository root goes behind the installed packages, as the worker puts a workspace
# (laya_tui.worker.main.keep_behind_installed): its demo kernels/ folder must not stand in
# for the installed Hugging Face `kernels` that transformers imports (tests/_demo_kernels.py)
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != str(ROOT)]
sys.path.append(str(ROOT))
os.environ.setdefault("LAYA_TUI_TEST", "1")
