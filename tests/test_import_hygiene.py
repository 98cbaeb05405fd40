"""The UI/runner process never imports torch, transformers, tilelang, mlx or torch_rbln."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

HEAVY = ["torch", "transformers", "tilelang", "mlx", "torch_rbln", "numpy"]
UI_MODULES = ["laya_tui", "laya_tui.cli", "laya_tui.runner", "laya_tui.report",
              "laya_tui.headless", "laya_tui.gates", "laya_tui.cache", "laya_tui.api",
              "laya_tui.baseline", "laya_tui.junit", "laya_tui.markdown", "laya_tui.config",
              "laya_tui.watch", "laya_tui.watch_headless", "laya_tui.app_main",
              "laya_tui.tui.app"]


def test_ui_modules_import_nothing_heavy():
    present = [m for m in UI_MODULES if importlib.util.find_spec(m.split(".")[0]) and
               _exists(m)]
    code = (
        "import importlib, json, sys\n"
        f"for m in {present!r}: importlib.import_module(m)\n"
        f"print(json.dumps(sorted(h for h in {HEAVY!r} if h in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == []
    assert "laya_tui.runner" in present and "laya_tui.cli" in present


def _exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False
