"""Shared test setup: torch must be importable even with torch-rbln and no RBLN runtime."""

from __future__ import annotations

import os
from pathlib import Path

from laya_tui.families.rbln_status import guard_autoload
from laya_tui.worker.shadow import keep_behind_installed

guard_autoload()

ROOT = Path(__file__).resolve().parents[1]
# the repository root goes behind the installed packages, as the worker puts a workspace
# (laya_tui/worker/shadow.py): its demo kernels/ folder must not stand in for the installed
# Hugging Face `kernels` that transformers imports (`kernels.gemm` still finds ours)
keep_behind_installed(str(ROOT))
os.environ.setdefault("LAYA_TUI_TEST", "1")

# user projects the tests run laya-tui on carry their own tests/: not this suite's
collect_ignore_glob = ["fixtures/*"]
