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
    monkeypatch.setattr(deps.os.path, "realpath",
                        lambda p, *a, **k: (calls.append(p), real(p, *a, **k))[1])
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
