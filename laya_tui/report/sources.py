"""Where a report's files are, for the outputs that point at lines (``--sarif``,
``--annotations``, the pull-request comment): paths relative to the source root, which is
the checked-out repository under GitHub Actions. Standard library only."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

_FRAME = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?:\((?P<func>[^()]*)\))?$")


@dataclass(frozen=True, slots=True)
class Location:
    """A place in the source tree: ``path`` relative to the source root, ``/``-separated."""

    path: str
    line: int | None = None
    func: str | None = None
    note: str | None = None


class Sources:
    """Where a report's files are: the workspace (relative sites are relative to it) and the
    source root that paths are written relative to.

    The root is ``$GITHUB_WORKSPACE`` (the checked-out repository) when the workspace lies
    inside it, else the workspace. A file outside the root, or not there, or in an installed
    library inside it (``site-packages`` of a ``.venv``), has no location.
    """

    def __init__(self, workspace: str, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.workspace = os.path.abspath(workspace)
        self.root = self.workspace
        repo = env.get("GITHUB_WORKSPACE")
        if repo:
            repo = os.path.abspath(repo)
            if _inside(self.workspace, repo) or _inside(os.path.realpath(self.workspace),
                                                         os.path.realpath(repo)):
                self.root = repo
        self._real_root = os.path.realpath(self.root)
        self._paths: dict[str, str | None] = {}
        #: (file, line, func, note) as the site has them -> its location
        self._sites: dict[tuple[object, object, object, str | None], Location | None] = {}

    def relative(self, file: object) -> str | None:
        """``file`` (absolute, or relative to the workspace) relative to the root; None when
        it is outside the root or is not a file there."""
        if not isinstance(file, str) or not file:
            return None
        if file in self._paths:
            return self._paths[file]
        path = os.path.normpath(file if os.path.isabs(file)
                                else os.path.join(self.workspace, file))
        rel = None
        if os.path.isfile(path):
            if _inside(path, self.root):
                rel = os.path.relpath(path, self.root)
            else:
                real = os.path.realpath(path)
                if _inside(real, self._real_root):
                    rel = os.path.relpath(real, self._real_root)
        out = rel.replace(os.sep, "/") if rel else None
        if out is not None and _library(out):
            out = None  # an installed library inside the tree (.venv): not the user's code
        self._paths[file] = out
        return out

    def site(self, site: object, note: str | None = None) -> Location | None:
        """The location of a signal's ``site`` dict (``{file, line?, func?}``)."""
        if type(site) is not dict and not isinstance(site, Mapping):
            return None
        file, line, func = site.get("file"), site.get("line"), site.get("func")
        try:
            key = (file, line, func, note)
            return self._sites[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable value where a name or a number belongs
            return None
        path = self.relative(file)
        loc = None if path is None else Location(
            path, line if type(line) is int and line > 0 else None,
            func if isinstance(func, str) and func else None, note)
        if len(self._sites) < 100_000:
            self._sites[key] = loc
        return loc

    def frame(self, text: object, note: str | None = None) -> Location | None:
        """The location of a stack entry ``file:line(func)``."""
        m = _FRAME.match(text) if isinstance(text, str) else None
        if not m:
            return None
        return self.site({"file": m.group("file"), "line": int(m.group("line")),
                          "func": m.group("func")}, note)


#: folders that hold installed libraries, not the user's code, wherever they lie
_LIBRARY_PARTS = frozenset(("site-packages", "dist-packages", "__pypackages__"))


def _library(rel: str) -> bool:
    """``.venv/lib/python3.11/site-packages/transformers/...``: an installed library."""
    parts = rel.split("/")
    return bool(_LIBRARY_PARTS.intersection(parts))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
