"""The UI/runner side never imports torch, transformers, tilelang, tvm, mlx, torch_rbln or
numpy (docs/architecture.md, 'Processes and the one rule').

Every ``laya_tui`` module is found by walking the package; all but the worker-side family
code listed below are imported in one fresh interpreter, and the heavy modules each import
pulled in are reported by name. A module that moves or is renamed changes what the walk
finds; an entry of the lists below that no longer exists fails the test instead of being
dropped.
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys

import pytest

import laya_tui
from tests._util import HEAVY, REPO

#: Worker-side family code: runs only inside probe workers and may import heavy libraries.
#: A module named here, or a package with everything under it.
WORKER_SIDE = ("laya_tui.families", "laya_tui.presets", "laya_tui.tolerance")
#: Modules the walk must find among the light ones (the core, every front end, the API).
MUST_BE_LIGHT = (
    "laya_tui", "laya_tui.api", "laya_tui.core.signals", "laya_tui.core.runner",
    "laya_tui.worker.main", "laya_tui.core.cache", "laya_tui.report.document",
    "laya_tui.report.gates", "laya_tui.report.baseline", "laya_tui.cli.main",
    "laya_tui.cli.config", "laya_tui.cli.headless", "laya_tui.watch.engine",
    "laya_tui.cli.watch_headless", "laya_tui.cli.dashboard", "laya_tui.tui.app",
)


def all_modules() -> list[str]:
    """Every module of the ``laya_tui`` package, found by walking it."""
    return ["laya_tui"] + sorted(m.name for m in pkgutil.walk_packages(laya_tui.__path__,
                                                                        "laya_tui."))


def _worker_side(name: str) -> bool:
    return any(name == w or name.startswith(w + ".") for w in WORKER_SIDE)


def light_modules() -> list[str]:
    """The modules to import: not worker side, and not a ``__main__`` (it would run)."""
    return [m for m in all_modules() if not _worker_side(m) and not m.endswith(".__main__")]


def test_every_listed_module_exists():
    found = set(all_modules())
    assert sorted(set(WORKER_SIDE) - found) == [], "WORKER_SIDE names a module that is gone"
    assert sorted(set(MUST_BE_LIGHT) - set(light_modules())) == [], \
        "a core or front-end module is gone, or now counted as worker side"


def pulled_in(modules: list[str]) -> dict[str, list[str]]:
    """Import ``modules`` in order in a fresh interpreter: {module: heavy modules it pulled}."""
    code = (
        "import importlib, json, sys\n"
        "pulled = {}\n"
        f"for m in {modules!r}:\n"
        f"    before = {{h for h in {HEAVY!r} if h in sys.modules}}\n"
        "    importlib.import_module(m)\n"
        f"    new = sorted(h for h in {HEAVY!r} if h in sys.modules and h not in before)\n"
        "    if new:\n"
        "        pulled[m] = new\n"
        "print(json.dumps(pulled))\n"
    )
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ui_and_core_modules_import_nothing_heavy():
    assert pulled_in(light_modules()) == {}


def test_the_check_names_the_module_that_pulled_a_heavy_import():
    pytest.importorskip("numpy")
    assert pulled_in(["laya_tui.api", "numpy", "laya_tui.cli.main"]) == {"numpy": ["numpy"]}


def test_the_old_tolerance_name_is_the_moved_module() -> None:
    """Probe files written before the move still ``import laya_tui.tolerance``."""
    import laya_tui.families.tolerance as moved
    import laya_tui.tolerance as old

    assert old is moved and callable(moved.compare_logits)
