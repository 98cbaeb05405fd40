"""Shared test setup: torch must be importable even with torch-rbln and no RBLN runtime."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from laya_tui.families.rbln_status import guard_autoload

guard_autoload()

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("LAYA_TUI_TEST", "1")
