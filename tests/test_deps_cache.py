"""The worker's import tracker resolves a module file once (issue 45: the realpath per import
statement was 3-4x the CPU of torch.export and torch.compile inside a cell), still records
workspace imports, and resolves again after a watch-mode invalidation."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from laya_tui.worker import deps
from laya_tui.worker.deps import DependencyTracker


def test_module_file_resolved_once_and_again_after_invalidate(tmp_path: Path,
                                                              monkeypatch: Any) -> None:
    mod = tmp_path / "wsmod_cache.py"
    mod.write_text("X = 1\n")
    tracker = DependencyTracker([str(tmp_path)])
    calls: list[str] = []
    real = os.path.realpath
    def counted(p: str, *a: Any, **k: Any) -> str:
        calls.append(p)
        return real(p, *a, **k)

    monkeypatch.setattr(os.path, "realpath", counted)  # the os.path deps calls
    monkeypatch.syspath_prepend(str(tmp_path))
    tracker.install()
    try:
        with tracker.recording() as files:
            importlib.import_module("wsmod_cache")
            for _ in range(50):
                __import__("wsmod_cache")
                __import__("os.path", fromlist=["join"])  # outside the workspace
        assert files == {real(str(mod))}
        resolved = [p for p in calls if p.endswith("wsmod_cache.py")]
        assert len(resolved) == 1  # once, not once per import statement
        tracker.invalidate({str(mod)})  # watch mode: the file changed
        with tracker.recording() as files:
            importlib.import_module("wsmod_cache")
        assert files == {real(str(mod))}
        assert len([p for p in calls if p.endswith("wsmod_cache.py")]) >= 2
    finally:
        tracker.uninstall()
        sys.modules.pop("wsmod_cache", None)


def test_parents() -> None:
    assert deps._parents("a.b.c") == ("a", "a.b")
    assert deps._parents("a") == ()


def test_outside_statements_skip_bookkeeping_but_a_renamed_module_is_seen(
        tmp_path: Path, monkeypatch: Any) -> None:
    """An import statement of loaded modules outside the workspace is looked at once (torch
    repeats such statements ~800k times per compile); when a name it resolved to leaves
    sys.modules and comes back as a workspace file, the statement is looked at again."""
    outside = tmp_path / "site"
    outside.mkdir()
    (outside / "shadow_mod45.py").write_text("X = 1\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "shadow_mod45.py").write_text("X = 2\n")
    tracker = DependencyTracker([str(ws)])
    monkeypatch.syspath_prepend(str(outside))
    tracker.install()
    looked: list[list[str]] = []
    real_outside = tracker._outside_modules
    def seen(targets: list[str]) -> Any:
        looked.append(targets)
        return real_outside(targets)

    monkeypatch.setattr(tracker, "_outside_modules", seen)
    try:
        with tracker.recording() as files:
            for _ in range(20):
                from shadow_mod45 import X  # noqa: F401
                __import__("os.path", fromlist=["join"])
        assert files == set()
        # once per statement, not once per execution
        assert sorted(t[0] for t in looked if t[0] != "_io") == ["os.path", "shadow_mod45"]
        sys.modules.pop("shadow_mod45")
        monkeypatch.syspath_prepend(str(ws))
        with tracker.recording() as files:
            from shadow_mod45 import X  # noqa: F401, F811
        assert X == 2
        assert files == {os.path.realpath(ws / "shadow_mod45.py")}
    finally:
        tracker.uninstall()
        sys.modules.pop("shadow_mod45", None)


def test_namespace_package_statements_are_never_cached(tmp_path: Path, monkeypatch: Any) -> None:
    """A namespace package has no file and may span the workspace: ``from pkg import mod``
    through one records the workspace module every time."""
    (tmp_path / "nspkg45").mkdir()
    (tmp_path / "nspkg45" / "leaf.py").write_text("Y = 3\n")
    tracker = DependencyTracker([str(tmp_path)])
    monkeypatch.syspath_prepend(str(tmp_path))
    tracker.install()
    try:
        for _ in range(3):
            with tracker.recording() as files:
                importlib.import_module("nspkg45")
                from nspkg45 import leaf  # noqa: F401
            assert files == {os.path.realpath(tmp_path / "nspkg45" / "leaf.py")}
        assert not any("nspkg45" in key for key in tracker._outside)
    finally:
        tracker.uninstall()
        for name in ("nspkg45", "nspkg45.leaf"):
            sys.modules.pop(name, None)
