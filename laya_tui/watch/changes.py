"""The change stream of watch mode: which paths matter, which folders to watch, and the
``watchfiles`` streams that turn saves into batches of changed paths (docs/architecture.md,
'Watch mode').
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from watchfiles import Change

#: Folders never watched for changes (anywhere below a watched root).
IGNORED_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", ".idea", ".vscode",
    "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".cache",
    ".laya-cache", ".ipynb_checkpoints", "build", "dist", "site-packages",
})
#: File names never watched: compiled files, temp files, editor swap/backup/lock files.
IGNORED_NAMES = re.compile(
    r"(\.py[cod]$|\.tmp$|\.temp$|\.sw[a-p]$|\.swx$|~$|^\.#|^#.*#$|^4913$|^\.DS_Store$"
    r"|\.___jb_\w+___$|^flycheck_)")
#: Suffixes of dependencies that no module reload can apply: recycle the workers.
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")

#: A batch of changes as queued: (when it was seen, {(change, path)}).
Batch: TypeAlias = "tuple[float, set[tuple[Change, str]]]"
#: (recursive roots, single-folder roots)
Roots = tuple[tuple[str, ...], tuple[str, ...]]


class ChangeFilter:
    """watchfiles filter: drops ignored folders (below the roots only), droppings and paths."""

    def __init__(self, roots: Iterable[str], ignore_paths: Iterable[str] = ()) -> None:
        self.roots = sorted({os.path.realpath(r) for r in roots}, key=len, reverse=True)
        self.ignore_paths = tuple(os.path.realpath(p) for p in ignore_paths if p)

    def __call__(self, change: Change, path: str) -> bool:
        return self.accepts(path)

    def accepts(self, path: str) -> bool:
        """True when a change to ``path`` may matter to a probe."""
        real = os.path.realpath(path)
        for ign in self.ignore_paths:
            if real == ign or real.startswith(ign + os.sep):
                return False
        if IGNORED_NAMES.search(os.path.basename(real)):
            return False
        rel = real
        for root in self.roots:
            if real == root or real.startswith(root + os.sep):
                rel = real[len(root):]
                break
        return not any(part in IGNORED_DIRS for part in rel.split(os.sep)[:-1])


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one."""
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def py_files(roots: Iterable[str]) -> set[str]:
    """The ``.py`` files under ``roots`` (a root may be a file), outside ignored folders."""
    found: set[str] = set()
    for root in roots:
        if os.path.isfile(root):
            found.add(os.path.realpath(root))
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS and not d.startswith(".")]
            found.update(os.path.realpath(os.path.join(dirpath, f))
                         for f in filenames if f.endswith(".py"))
    return found


def watch_roots(path_roots: list[str], dep_files: Iterable[str],
                accepts: ChangeFilter) -> Roots:
    """(recursive roots, single-folder roots): the probe/kernel paths, then the folder of
    every other dependency file."""
    flat: set[str] = {os.path.dirname(r) for r in path_roots if os.path.isfile(r)}
    wanted: set[str] = set()
    for root in (r for r in path_roots if os.path.isdir(r)):
        try:
            children = [e for e in os.scandir(root) if e.is_dir()]
        except OSError:
            continue
        if any(e.name in IGNORED_DIRS or e.name.startswith(".") for e in children):
            # A root holding a virtual environment or .git (``--probes .``): watch its
            # own files and its other folders, never thousands of ignored ones.
            flat.add(root)
            wanted |= {os.path.realpath(e.path) for e in children
                       if e.name not in IGNORED_DIRS and not e.name.startswith(".")}
        else:
            wanted.add(root)
    rec = sorted(r for r in wanted if not any(r != o and under(r, [o]) for o in wanted))
    for path in dep_files:
        if not under(path, rec) and accepts.accepts(path):
            flat.add(os.path.dirname(path))
    flat = {f for f in flat if os.path.isdir(f) and not under(f, rec)}
    return tuple(rec), tuple(sorted(flat))


class ChangeStreams:
    """The ``awatch`` streams over a set of roots; every batch lands in ``queue``."""

    def __init__(self, accepts: ChangeFilter, debounce_ms: int) -> None:
        self.accepts = accepts
        self.debounce_ms = debounce_ms
        self.queue: asyncio.Queue[Batch] = asyncio.Queue()
        self.roots: Roots = ((), ())
        self._streams: list[asyncio.Task[None]] = []
        self._stop: asyncio.Event | None = None

    async def watch(self, roots: Roots) -> None:
        """(Re)start the streams when the folders to watch changed.

        The new streams are set up before the old ones stop, so no save is missed in
        between (one seen twice only re-runs its cells once more).
        """
        if roots == self.roots and self._streams:
            return
        old_stop, old_streams = self._stop, self._streams
        self.roots = roots
        stop = asyncio.Event()
        self._stop, self._streams = stop, []
        rec, flat = roots
        if rec:
            self._streams.append(asyncio.ensure_future(self._stream(rec, True, stop)))
        if flat:
            self._streams.append(asyncio.ensure_future(self._stream(flat, False, stop)))
        for _ in range(3):  # awatch sets its notifier up in its first step: wait for it
            await asyncio.sleep(0)
        await _stop_streams(old_stop, old_streams)

    async def close(self) -> None:
        """Stop every stream."""
        await _stop_streams(self._stop, self._streams)
        self._streams = []

    async def _stream(self, roots: tuple[str, ...], recursive: bool, stop: asyncio.Event) -> None:
        from watchfiles import awatch

        step = max(5, min(10, self.debounce_ms // 5))  # quiet time that ends a burst
        try:
            async for changes in awatch(*roots, watch_filter=self.accepts, recursive=recursive,
                                        debounce=self.debounce_ms, step=step, stop_event=stop,
                                        rust_timeout=1000, ignore_permission_denied=True):
                self.queue.put_nowait((time.time(), set(changes)))
        except (FileNotFoundError, OSError) as exc:
            # A watched folder vanished: watch what is left at the next change.
            self.roots = ((), ())
            print(f"laya-tui watch: {exc}", file=sys.stderr)


async def _stop_streams(stop: asyncio.Event | None, streams: list[asyncio.Task[None]]) -> None:
    if stop is not None:
        stop.set()
    if streams:
        await asyncio.wait(streams, timeout=2.0)
        for t in streams:
            t.cancel()
