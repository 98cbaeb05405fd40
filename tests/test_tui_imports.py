"""The dashboard never imports torch & co, and ``laya-tui`` without a TTY stays headless."""

from __future__ import annotations

import pkgutil

import laya_tui.tui
from tests._tui import DEMO_WS
from tests._util import heavy_imports, run_cli


def test_app_modules_import_nothing_heavy():
    modules = ["laya_tui.cli.dashboard"] + [
        m.name for m in pkgutil.walk_packages(laya_tui.tui.__path__, "laya_tui.tui.")]
    assert "laya_tui.tui.app" in modules and "laya_tui.tui.screens.runs" in modules
    code = (
        "import importlib\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "from laya_tui.tui.factory import build_app\n"
        f"build_app(recorded={str(DEMO_WS.parent / 'demo_report.json')!r})\n"
    )
    assert heavy_imports(code) == []


def test_without_a_tty_laya_tui_prints_the_headless_summary(tmp_path):
    proc = run_cli("--workspace", str(DEMO_WS), "--only", "explain/*", "--no-cache",
                   "--cache-dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1  # a tolerance gate fails in the demo
    assert "laya-tui: 2 probes" in proc.stderr and "verdict: FAIL" in proc.stderr
    assert "\x1b[" not in proc.stdout + proc.stderr  # no app, no escape sequences
