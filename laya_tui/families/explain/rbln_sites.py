"""Call sites in ``torch.rbln.explain(with_stack=True)``'s ``trace_by_op``, back to real files.

torch-rbln 0.12.0 writes a site the way ``capture_site`` in its ``_C`` does it: the innermost
two frames of ``traceback.extract_stack()``, innermost first, each file cut to its basename,
``"modeling_llama.py:65(forward) <- module.py:1789(_call_impl)"``. A basename opens nothing,
so :class:`SiteResolver` finds the real file: a full path seen elsewhere for the same name
(the fallback log's TRACE lines), the loaded module that defines that function, or a file of
that name under the workspace. Frames inside torch's own code (``module.py(_call_impl)``,
``linear.py(forward)``) are skipped the way the portable region skips them.

Pure standard library.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable

from laya_tui.families.explain.records import Detail, SiteDict
from laya_tui.families.explain.sites import USER, classify_file

_FRAME = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?:\((?P<func>[^()]*)\))?$")
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "site-packages", ".tox"}
#: Files the workspace walk looks at before it gives up (a bound on a cold lookup).
WALK_LIMIT = 20000


def parse_frames(text: str | None) -> list[SiteDict]:
    """``"a.py:3(f) <- b.py:9(g)"`` -> ``[{"file", "line", "func"}, ...]`` innermost first."""
    frames: list[SiteDict] = []
    for part in str(text or "").split(" <- "):
        part = part.strip()
        if not part:
            continue
        m = _FRAME.match(part)
        if m is None:
            frames.append({"file": part, "line": None, "func": None})
        else:
            frames.append({"file": m["file"], "line": int(m["line"]), "func": m["func"] or None})
    return frames


def _defines(path: str, func: str | None, line: int | None) -> bool:
    """Whether ``path`` has ``line`` and defines ``func`` (a cheap check of the text)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return False
    if line is not None and text.count("\n") + 1 < line:
        return False
    return func is None or func.startswith("<") or re.search(
        rf"^\s*(?:async\s+)?def\s+{re.escape(func)}\b", text, re.M) is not None


class SiteResolver:
    """Basename -> real path, from hints, loaded modules, then the workspace (cached)."""

    def __init__(self, *, hints: Iterable[str] = (), modules: Iterable[str] | None = None,
                 roots: Iterable[str] | None = None,
                 is_internal: Callable[[str], bool] | None = None) -> None:
        self._hints: dict[str, list[str]] = {}
        for path in hints:
            self.add_hint(path)
        self._module_files = None if modules is None else list(modules)
        self._by_module: dict[str, list[str]] | None = None
        self._roots = [os.getcwd()] if roots is None else [str(r) for r in roots]
        self._walked: dict[str, list[str]] | None = None
        self._is_internal = is_internal or (lambda path: classify_file(path) != USER)
        self._cache: dict[tuple[str, str | None, int | None], str | None] = {}

    def add_hint(self, path: str) -> None:
        """A full path seen elsewhere (e.g. a TRACE line of the fallback log)."""
        if path and os.path.isabs(path):
            paths = self._hints.setdefault(os.path.basename(path), [])
            if path not in paths:
                paths.append(path)

    def _modules(self) -> dict[str, list[str]]:
        if self._by_module is None:
            files = self._module_files
            if files is None:
                files = [f for m in list(sys.modules.values())
                         if isinstance(f := getattr(m, "__file__", None), str)]
            index: dict[str, list[str]] = {}
            for f in files:
                if f and f.endswith(".py"):
                    index.setdefault(os.path.basename(f), []).append(os.path.abspath(f))
            self._by_module = index
        return self._by_module

    def _workspace(self) -> dict[str, list[str]]:
        if self._walked is None:
            index: dict[str, list[str]] = {}
            seen = 0
            for root in self._roots:
                for d, dirs, files in os.walk(root):
                    dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS
                                     and not x.startswith("."))
                    for name in files:
                        if name.endswith(".py"):
                            index.setdefault(name, []).append(os.path.join(d, name))
                    seen += len(files)
                    if seen > WALK_LIMIT:
                        break
            self._walked = index
        return self._walked

    def resolve(self, file: str, func: str | None = None, line: int | None = None
                ) -> str | None:
        """The real path of a frame's file, or None when nothing fits."""
        if os.path.isabs(file):
            return file if os.path.isfile(file) else None
        key = (file, func, line)
        if key not in self._cache:
            self._cache[key] = self._find(file, func, line)
        return self._cache[key]

    def _find(self, name: str, func: str | None, line: int | None) -> str | None:
        base = os.path.basename(name)
        sources: tuple[Callable[[], dict[str, list[str]]], ...] = (
            lambda: self._hints, self._modules, self._workspace)
        for source in sources:
            found = [p for p in dict.fromkeys(source().get(base, ())) if p.endswith(name)]
            found = [p for p in found if os.path.isfile(p)]
            fitting = [p for p in found if _defines(p, func, line)]
            if fitting:
                return fitting[0]
        return None

    def site(self, frames: list[SiteDict]) -> tuple[SiteDict | None, Detail]:
        """(first frame outside torch's internals with its real path, or None; facts).

        The facts: ``trace_frame`` (that frame as the runtime wrote it),
        ``trace_internal_only`` (every captured frame is torch's own code),
        ``trace_unresolved`` (the frame's basename matched no file).
        """
        facts: Detail = {}
        if not frames:
            return None, facts
        for fr in frames:
            path = self.resolve(str(fr["file"]), fr.get("func"), fr.get("line"))
            if path is not None and self._is_internal(path):
                continue
            raw = f"{fr['file']}:{fr['line']}({fr.get('func') or ''})"
            facts["trace_frame"] = raw
            if path is None:
                facts["trace_unresolved"] = True
                return {"file": fr["file"], "line": fr.get("line"), "func": fr.get("func")}, facts
            return {"file": path, "line": fr.get("line"), "func": fr.get("func")}, facts
        facts["trace_internal_only"] = True
        return None, facts
