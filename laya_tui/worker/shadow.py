"""A workspace on ``sys.path`` behind the installed packages, its same-named packages joined
to theirs.

``python -m`` puts the working directory first on ``sys.path``, so a project's ``kernels/``
folder (where TileLang users keep their kernels) would stand in for the installed Hugging
Face ``kernels`` package, which transformers >= 5 imports whenever a model loads: every
model cell would fail. The worker puts the workspace last instead, and for each package of
the workspace that an installed package of the same name hides, the two become one package:
the installed ``__init__`` runs, then the workspace's, and ``__path__`` holds both folders,
so transformers finds the names it imports from ``kernels`` and ``import kernels.gemm`` or
the workspace ``__init__``'s re-exports still find the workspace's files.

The folders the project's tests put on the path (``pythonpath`` of pytest's settings in
``pyproject.toml`` or ``pytest.ini``: ``src`` in a src-layout project) follow the workspace,
so a kernel the tests import as ``pkg.kernels.silu`` imports here as it does under pytest.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from laya_tui.core.project_paths import pythonpath_of


class _Merged(importlib.abc.Loader):
    """Runs the installed package's ``__init__`` and then the workspace's in one module,
    whose ``__path__`` holds both folders (installed first): the installed names are there
    for the library that wants them, the workspace's ``__init__`` re-exports still run, and
    the module's ``__file__`` is the workspace's, so watch mode tracks and reloads it."""

    def __init__(self, installed: importlib.machinery.ModuleSpec, init: str) -> None:
        # find_spec took it only as a plain package: its folders, and an __init__.py origin
        self.installed_path = list(installed.submodule_search_locations or ())
        self.installed_init = str(installed.origin)
        self.init = init

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        folder = os.path.dirname(self.init)
        module.__path__ = [*self.installed_path, folder]
        for origin in (self.installed_init, self.init):
            with open(origin, encoding="utf-8") as f:
                code = compile(f.read(), origin, "exec")
            module.__file__ = origin
            exec(code, module.__dict__)  # noqa: S102 - a package's own __init__


class JoinHidden(importlib.abc.MetaPathFinder):
    """For a workspace package hidden by an installed one of the same name: one package
    holding both (:class:`_Merged`)."""

    def __init__(self, hidden: dict[str, str]) -> None:
        self.hidden = hidden  # package name -> the workspace folder it hides

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        folder = self.hidden.get(name)
        if folder is None:
            return None
        installed = importlib.machinery.PathFinder.find_spec(
            name, [p for p in sys.path if os.path.realpath(p or os.curdir)
                   != os.path.dirname(folder)])
        init = os.path.join(folder, "__init__.py")
        if installed is None or installed.submodule_search_locations is None \
                or not str(installed.origin or "").endswith(".py"):
            return None  # not a plain installed package: the usual lookup
        spec = importlib.machinery.ModuleSpec(name, _Merged(installed, init), origin=init,
                                              is_package=True)
        spec.submodule_search_locations = [*installed.submodule_search_locations, folder]
        spec.has_location = True
        return spec


def keep_behind_installed(workspace: str) -> None:
    """Move ``workspace`` (and the working directory) to the end of ``sys.path`` and join
    its packages that installed ones hide (see the module docstring)."""
    here = {workspace, os.path.realpath(os.getcwd())}
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) not in here]
    hidden: dict[str, str] = {}
    try:
        names = os.listdir(workspace)
    except OSError:
        names = []
    for name in names:
        folder = os.path.join(workspace, name)
        if name.isidentifier() and os.path.isfile(os.path.join(folder, "__init__.py")) \
                and importlib.machinery.PathFinder.find_spec(name, sys.path) is not None:
            hidden[name] = folder
    sys.path.append(workspace)
    for extra in pythonpath_of(workspace):
        if extra not in sys.path:
            sys.path.append(extra)
    if hidden:
        sys.meta_path.insert(0, JoinHidden(hidden))

