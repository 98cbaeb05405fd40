"""Driver paths on a node and back (docs/cluster.md, 'The workspace travels').

When the workspace travels (a node on another host), it lands in Ray's ``working_dir`` on
the node, and the built-in probes and demo kernels are the node's own laya-tui's. A
:class:`PathMap` turns the driver's paths in commands into the node's, and the node's paths
in replies (dependency sets, call sites) back into the driver's, so a report reads as if
the run were local. On the driver's own host nothing travels and the map is empty.

Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class PathMap:
    """Pairs ``(driver prefix, node prefix)``, longest first; empty: the same paths."""

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> PathMap:
        kept = [(os.path.realpath(d), os.path.realpath(n)) for d, n in pairs if d and n]
        kept = [(d, n) for d, n in kept if d != n]
        return cls(tuple(sorted(dict(kept).items(), key=lambda p: -len(p[0]))))

    def to_node(self, path: str) -> str:
        return _swap(path, ((d, n) for d, n in self.pairs))

    def to_driver(self, path: str) -> str:
        return _swap(path, sorted(((n, d) for d, n in self.pairs), key=lambda p: -len(p[0])))

    def __bool__(self) -> bool:
        return bool(self.pairs)


def package_dirs() -> dict[str, str]:
    """This install's laya-tui folders by role: the package, and in a source checkout the
    ``probes``/``kernels`` folders beside it (``laya_tui/cli/project.py``'s two layouts)."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = {"package": pkg}
    root = os.path.dirname(pkg)
    if os.path.isfile(os.path.join(root, "pyproject.toml")):
        for name in ("probes", "kernels"):
            if os.path.isdir(os.path.join(root, name)):
                out[name] = os.path.join(root, name)
    return out


def node_map(driver_dirs: dict[str, str], driver_workspace: str, node_workspace: str
             ) -> PathMap:
    """The map of a node whose workspace travelled: the driver's laya-tui folders to this
    install's, and the driver's workspace to ``node_workspace`` (it wins where they meet)."""
    mine = package_dirs()
    pairs = [(d, mine[role]) for role, d in driver_dirs.items() if role in mine]
    return PathMap.of([*pairs, (driver_workspace, node_workspace)])


def _swap(path: str, pairs: Iterable[tuple[str, str]]) -> str:
    for src, dst in pairs:
        if path == src or path.startswith(src + os.sep):
            return dst + path[len(src):]
    return path
