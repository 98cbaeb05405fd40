"""Which cells a change touches: each cell's dependency set, kept across its runs
(docs/architecture.md, 'Result cache and dependency sets' and 'Watch mode').
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from laya_tui.core.report_types import CellSpec, ResultDict
from laya_tui.core.signals import ABORTED_STATUSES
from laya_tui.watch.changes import NATIVE_SUFFIXES, under
from laya_tui.watch.records import diagnostic_of


class DependencyIndex:
    """Cell id -> the files it depends on: discovery's deps, then every run's own."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.cells: dict[str, set[str]] = {}
        #: every file discovery itself imported (an edit re-runs discovery)
        self.discovery: set[str] = set()

    def discovered(self, probes: Iterable[CellSpec], cells: Mapping[str, CellSpec]) -> None:
        """Take a discovery: the files it imported (``probes``: what it found), and each
        cell's deps (``cells``: the cells now known) joined to what the cell already had."""
        self.discovery = {d for p in probes for d in p.get("deps", [])}
        for pid, p in cells.items():
            self.cells[pid] = self.cells.get(pid, set()) | set(p.get("deps", []))

    def forget(self, pid: str) -> None:
        self.cells.pop(pid, None)

    def of(self, pid: str) -> set[str]:
        return self.cells.get(pid, set())

    def ran(self, probe: CellSpec, result: ResultDict) -> None:
        """A run's result replaces the cell's set (a partial run keeps the old one too)."""
        pid = result["id"]
        diag = diagnostic_of(result)
        deps = set(probe.get("deps", [])) | self.absolute(result.get("deps", []))
        if diag is not None or result.get("status") in ABORTED_STATUSES:
            deps |= self.of(pid)  # a partial run: keep what it depended on
        where = diag["file"] if diag else None
        if where and os.path.isabs(where):
            deps.add(os.path.realpath(where))  # recover when that file is fixed
        self.cells[pid] = deps

    def files(self) -> set[str]:
        """Every file some cell or discovery depends on (the folders to watch)."""
        out = set(self.discovery)
        for deps in self.cells.values():
            out |= deps
        return out

    def native_changed(self, changed: Iterable[str]) -> bool:
        """A changed native extension that a cell depends on (no reload applies it)."""
        return any(p.endswith(NATIVE_SUFFIXES) and any(p in d for d in self.cells.values())
                   for p in changed)

    def hits(self, pids: Iterable[str], changed: set[str],
             results: Mapping[str, ResultDict]) -> dict[str, set[str]]:
        """The cells among ``pids`` that ``changed`` touches, with the files that do."""
        deleted = {p for p in changed if not os.path.exists(p)}
        changed_py = {p for p in changed if p.endswith(".py")}
        out: dict[str, set[str]] = {}
        for pid in pids:
            deps = self.of(pid)
            hit = deps & changed
            if not hit and (deleted or changed_py):
                # A module deleted from a package this cell imports through, when the
                # package __init__ imports it (or, for a cell that does not import now,
                # any module saved in such a package).
                inits = [d for d in deps if d.endswith("__init__.py")]
                result = results.get(pid)
                if result is not None and diagnostic_of(result):
                    folders = [os.path.dirname(i) for i in inits]
                    hit = {p for p in changed_py if under(p, folders)}
                else:
                    hit = {p for p in deleted for i in inits if _imports_sibling(i, p)}
            if hit:
                out[pid] = hit
        return out

    # -- paths ------------------------------------------------------------------------------
    def absolute(self, deps: Iterable[str]) -> set[str]:
        return {d if os.path.isabs(d) else os.path.join(self.workspace, d) for d in deps}

    def relative(self, path: str) -> str:
        """``path`` relative to the workspace when inside it."""
        rel = os.path.relpath(path, self.workspace)
        return path if rel.startswith("..") else rel

    def relative_all(self, deps: Iterable[str]) -> list[str]:
        return sorted(self.relative(d) for d in deps)


def _imports_sibling(init: str, module: str) -> bool:
    """Whether the package ``__init__.py`` names ``module`` (a file in its folder tree)."""
    if not under(module, [os.path.dirname(init)]):
        return False
    rel = os.path.relpath(module, os.path.dirname(init))
    first = rel.split(os.sep)[0].removesuffix(".py")
    try:
        with open(init, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return True  # the package itself is gone: every importer breaks
    return re.search(rf"\b{re.escape(first)}\b", text) is not None
