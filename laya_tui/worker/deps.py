"""Which workspace files a probe imported while it ran (its dependency set).

Installed in the worker process only. ``builtins.__import__`` and
``importlib.import_module`` are wrapped: every import statement executed while recording,
cached or not, adds the imported workspace module's file *and* the workspace files that
module itself imported when it was first loaded (its closure), so a warm worker still sees
that ``probes/tilelang_matrix.py`` depends on ``kernels/common.py`` through
``kernels/gemm.py``.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import ModuleType

from laya_tui.core.files import drop_bytecode


class DependencyTracker:
    """Records workspace files imported inside :meth:`recording` blocks."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = [os.path.realpath(r) + os.sep for r in roots]
        self._excluded = (os.sep + ".venv" + os.sep, os.sep + "site-packages" + os.sep)
        #: module ``__file__`` -> its workspace path or None: every import statement a
        #: probe runs (torch runs many inside functions while compiling) asks, and
        #: ``realpath`` is a syscall per path component (issue 45: 3-4x compile CPU)
        self._files: dict[str, str | None] = {}
        self._stack: list[set[str]] = []
        #: module file -> workspace files its first import pulled in (transitively)
        self.closure: dict[str, set[str]] = {}
        self._stamp: dict[str, int] = {}  # module file -> import call that set its closure
        #: import statement -> the modules it names, for statements whose every target is a
        #: loaded module outside the workspace (or an attribute of one): torch runs the same
        #: few thousand statements hundreds of thousands of times while compiling, and for
        #: these the bookkeeping records nothing (issue 45: 5.7x a bare import statement)
        self._outside: dict[tuple[object, ...], tuple[str, ...]] = {}
        self._calls = 0
        self._orig_import = builtins.__import__
        self._orig_import_module = importlib.import_module
        self._installed = False

    # -- install ---------------------------------------------------------------------
    def install(self) -> None:
        """Wrap the import machinery (idempotent)."""
        if self._installed:
            return
        builtins.__import__ = self._hooked_import
        importlib.import_module = self._hooked_import_module
        self._installed = True

    def uninstall(self) -> None:
        """Restore the original import machinery."""
        if self._installed:
            builtins.__import__ = self._orig_import
            importlib.import_module = self._orig_import_module
            self._installed = False

    # -- recording -------------------------------------------------------------------
    @contextmanager
    def recording(self, *, merge: bool = True) -> Iterator[set[str]]:
        """Collect the workspace files imported inside the block into the yielded set.

        ``merge=False``: do not add them to the enclosing recording (the caller notes
        what it needs from them).
        """
        files: set[str] = set()
        self._stack.append(files)
        try:
            yield files
        finally:
            self._stack.pop()
            if self._stack and merge:
                self._stack[-1] |= files

    def add(self, path: str) -> None:
        """Add an explicit dependency (``ctx.depends_on``) to every open recording."""
        path = os.path.realpath(path)
        for files in self._stack:
            files.add(path)

    def workspace_file(self, module: object) -> str | None:
        """The module's source file when it lives in the workspace, else None."""
        path: str | None = getattr(module, "__file__", None)
        if not path:
            return None
        try:
            return self._files[path]
        except KeyError:
            pass
        real = os.path.realpath(path)
        found = None if any(x in real for x in self._excluded) else \
            real if any(real.startswith(r) for r in self.roots) else None
        self._files[path] = found
        return found

    def _note(self, module: object) -> None:
        path = self.workspace_file(module)
        if path is None or not self._stack:
            return
        top = self._stack[-1]
        top.add(path)
        top |= self.closure.get(path, set())
        # The parent packages' __init__ files ran first; their other imports (siblings
        # a package __init__ re-exports) are not this module's dependencies.
        name = getattr(module, "__name__", "") or ""
        while "." in name:
            name = name.rpartition(".")[0]
            parent = self.workspace_file(sys.modules.get(name))
            if parent is not None:
                top.add(parent)

    # -- hooks -----------------------------------------------------------------------
    def _targets(self, name: str, globals_: Mapping[str, object] | None,
                 fromlist: Sequence[str] | None, level: int) -> list[str]:
        if level:
            pkg = (globals_ or {}).get("__package__")
            package = pkg if isinstance(pkg, str) else ""
            try:
                name = importlib.util.resolve_name("." * level + name, package)
            except (ImportError, ValueError):
                return []
        names = [name] if name else []
        if fromlist:
            names += [f"{name}.{item}" for item in fromlist if item != "*"]
        return names

    def _outside_modules(self, targets: list[str]) -> tuple[str, ...] | None:
        """The targets' loaded modules when every target lies outside the workspace, else None.

        A target that is no module (``from typing import Any``) counts when its parent is a
        module outside the workspace. A package without a file (a namespace package, which
        may span the workspace) never counts; a built-in module (``sys``) does.
        """
        names = []
        for t in targets:
            mod = sys.modules.get(t)
            if mod is None:
                mod = sys.modules.get(t.rpartition(".")[0])
                if mod is None:
                    return None
            elif t not in names:
                names.append(t)
            if self.workspace_file(mod) is not None or (
                    not getattr(mod, "__file__", None) and hasattr(mod, "__path__")):
                return None
        return tuple(names)

    def _run_import(self, targets: list[str], call: Callable[[], ModuleType],
                    key: tuple[object, ...]) -> ModuleType:
        if not self._stack:
            return call()
        fresh = [t for t in targets if t not in sys.modules]
        if not fresh:
            result = call()
            for t in targets:
                mod = sys.modules.get(t)
                if mod is not None:
                    self._note(mod)
            outside = self._outside_modules(targets)
            if outside is not None:
                self._outside[key] = outside
            return result
        # Parent packages imported on the way (never targets of the hook themselves).
        fresh += [p for t in targets for p in _parents(t)
                  if p not in sys.modules and p not in fresh]
        self._calls += 1
        call_id = self._calls
        pulled: set[str] = set()  # recording(merge=False), without a generator per import
        self._stack.append(pulled)
        try:
            result = call()
        finally:
            self._stack.pop()
        for t in fresh:
            mod = sys.modules.get(t)
            path = self.workspace_file(mod) if mod is not None else None
            if path is not None and self._stamp.get(path, 0) <= call_id:
                # Not when an import nested in this one (the one that ran the module) set
                # it: this outer one also pulled in parent packages and their children.
                self.closure[path] = set(pulled) - {path}
                self._stamp[path] = call_id
        for t in targets:
            mod = sys.modules.get(t)
            if mod is not None:
                self._note(mod)
        outside = self._outside_modules(targets)
        if outside is not None:
            self._outside[key] = outside
        return result

    def _hooked_import(self, name: str, globals: Mapping[str, object] | None = None,
                       locals: Mapping[str, object] | None = None,
                       fromlist: Sequence[str] | None = (), level: int = 0) -> ModuleType:
        if not self._stack:
            return self._orig_import(name, globals, locals, fromlist, level)
        key = (name, level and (globals or {}).get("__package__"), level,
               fromlist if fromlist is None or type(fromlist) is tuple else tuple(fromlist))
        known = self._outside.get(key)
        if known is not None:
            for m in known:
                if m not in sys.modules:
                    del self._outside[key]  # a module it names was dropped: look again
                    break
            else:
                return self._orig_import(name, globals, locals, fromlist, level)
        targets = self._targets(name, globals, fromlist, level)
        return self._run_import(
            targets, lambda: self._orig_import(name, globals, locals, fromlist, level), key)

    def _hooked_import_module(self, name: str, package: str | None = None) -> ModuleType:
        if not self._stack:
            return self._orig_import_module(name, package)
        target = importlib.util.resolve_name(name, package) if name.startswith(".") else name
        return self._run_import([target], lambda: self._orig_import_module(name, package),
                                ("import_module", target))

    # -- invalidation (watch mode) ------------------------------------------------------
    def invalidate(self, changed: set[str]) -> list[str]:
        """Drop workspace modules whose file or closure touches ``changed``; return their names."""
        changed = {os.path.realpath(p) for p in changed}
        self._files.clear()  # a save may have moved a link: resolve the paths again
        self._outside.clear()
        for source in changed:  # the runner drops them too, but on its own machine: a
            drop_bytecode(source)  # cluster node's workspace copy has its own .pyc
        dropped = []
        was_package: set[str] = set()
        for name, mod in list(sys.modules.items()):
            path = self.workspace_file(mod)
            if path is None:
                continue
            if path in changed or self.closure.get(path, set()) & changed:
                if hasattr(mod, "__path__"):
                    was_package.add(name)
                del sys.modules[name]
                self.closure.pop(path, None)
                dropped.append(name)
        # Reload the enclosing workspace packages whole: their __init__ may re-export
        # names of a dropped module (``from .gemm import gemm_kernel``), and a package
        # re-run beside cached children would lack those children as attributes.
        packages = {p for name in dropped for p in _parents(name)
                    if p in dropped or self.workspace_file(sys.modules.get(p))}
        packages |= {name for name in dropped if name in was_package}
        for name, mod in list(sys.modules.items()):
            if any(name == p or name.startswith(p + ".") for p in packages):
                path = self.workspace_file(mod)
                if path is not None:
                    del sys.modules[name]
                    self.closure.pop(path, None)
                    dropped.append(name)
        return dropped


@functools.lru_cache(maxsize=1 << 16)
def _parents(name: str) -> tuple[str, ...]:
    """``a.b.c`` -> ``("a", "a.b")`` (cached: asked on every import statement a probe runs)."""
    parts = name.split(".")
    return tuple(".".join(parts[:i]) for i in range(1, len(parts)))
