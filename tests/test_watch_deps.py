"""The dependency sets watch mode maps changes through (laya_tui.worker.deps, in-process)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from laya_tui.worker.deps import DependencyTracker


@pytest.fixture
def pkg(tmp_path):
    """A kernel package whose __init__ re-exports every kernel, like kernels/ does."""
    name = f"wkpkg_{uuid.uuid4().hex[:8]}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("from .foo import FOO\nfrom .bar import BAR\n")
    (root / "common.py").write_text("BASE = 1\n")
    (root / "foo.py").write_text("from .common import BASE\nFOO = BASE + 1\n")
    (root / "bar.py").write_text("BAR = 2\n")
    tracker = DependencyTracker([str(tmp_path)])
    sys.path.insert(0, str(tmp_path))
    tracker.install()
    try:
        yield name, root.resolve(), tracker
    finally:
        tracker.uninstall()
        sys.path.remove(str(tmp_path))
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[mod]


def record(tracker: DependencyTracker, stmt: str) -> set[str]:
    with tracker.recording() as files:
        exec(stmt, {})
    return {Path(f).name for f in files}


def test_a_submodule_depends_on_its_closure_and_parents_not_on_siblings(pkg):
    name, _, tracker = pkg
    cold = record(tracker, f"import importlib; importlib.import_module('{name}.foo')")
    warm = record(tracker, f"import importlib; importlib.import_module('{name}.foo')")
    assert cold == warm == {"__init__.py", "foo.py", "common.py"}
    # Using the package itself depends on everything its __init__ imports.
    assert record(tracker, f"from {name} import BAR") == {"__init__.py", "foo.py", "bar.py",
                                                            "common.py"}


def test_invalidation_reloads_the_package_so_reexports_are_fresh(pkg):
    name, root, tracker = pkg
    record(tracker, f"import {name}.foo")
    (root / "foo.py").write_text("from .common import BASE\nFOO = BASE + 41\n")
    dropped = tracker.invalidate({str(root / "foo.py")})
    assert f"{name}.foo" in dropped and name in dropped
    ns: dict = {}
    exec(f"import {name}.foo, {name}.bar\nfrom {name} import FOO", ns)
    assert ns["FOO"] == 42
    assert sys.modules[name].foo.FOO == 42
    assert sys.modules[name].bar.BAR == 2  # siblings are attributes again


def test_a_module_reimported_after_an_outside_purge_gets_its_new_imports(pkg):
    # The lowering probe drops its kernel modules itself (fingerprint refresh), without
    # DependencyTracker.invalidate: the next import must record the edited imports.
    name, root, tracker = pkg
    assert record(tracker, f"import {name}.bar") == {"__init__.py", "bar.py"}
    del sys.modules[f"{name}.bar"]
    (root / "bar.py").write_text("from .common import BASE\nBAR = BASE\n")
    assert record(tracker, f"import {name}.bar") == {"__init__.py", "bar.py", "common.py"}
