"""The UI/runner process never imports torch, transformers, tilelang, mlx or torch_rbln."""

from __future__ import annotations

import importlib.util

from tests._util import heavy_imports

UI_MODULES = ["laya_tui", "laya_tui.cli", "laya_tui.runner", "laya_tui.report",
              "laya_tui.headless", "laya_tui.gates", "laya_tui.cache", "laya_tui.api",
              "laya_tui.baseline", "laya_tui.junit", "laya_tui.markdown", "laya_tui.config",
              "laya_tui.watch", "laya_tui.watch_headless", "laya_tui.app_main",
              "laya_tui.tui.app"]


def test_ui_modules_import_nothing_heavy():
    present = [m for m in UI_MODULES if importlib.util.find_spec(m.split(".")[0]) and
               _exists(m)]
    assert heavy_imports(f"import importlib\nfor m in {present!r}: importlib.import_module(m)") \
        == []
    assert "laya_tui.runner" in present and "laya_tui.cli" in present


def _exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False
