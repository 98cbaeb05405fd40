"""Reading users' sources and placing artifacts: one implementation for the workers and every
front end (dashboard, HTML page). Standard library only."""

from __future__ import annotations

import glob
import importlib.util
import os
from itertools import islice
from typing import TYPE_CHECKING

from laya_tui.core.errors import UsageError

if TYPE_CHECKING:
    from laya_tui.core.settings import ProbeOptions


def source_excerpt(path: str, line: int, context: int) -> tuple[str, int] | None:
    """(text, first line number) around ``line`` of ``path``; None when unreadable or empty."""
    start = max(1, line - context)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = list(islice(fh, start - 1, line + context))
    except OSError:
        return None
    if not lines:
        return None
    return "".join(lines), start


def artifact_dir(opts: ProbeOptions, name: str) -> str:
    """``<--out>/name``, or ``artifacts/<workspace hash>/slot-K/name`` in the per-user cache
    folder of laya-tui, so two projects, or two overlapping runs of one, never share a file;
    under ``--env`` (``opts["env"]``), ``<...>/@env/name``: each environment its own files.
    The one place every family names its artifact folder (docs/architecture.md,
    'Artifacts')."""
    if opts.get("env"):
        name = os.path.join(f"@{opts['env']}", name)
    out = opts.get("out")
    if out:
        return os.path.join(os.path.abspath(out), name)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = os.path.join(base, "laya-tui", "artifacts", workspace_key(opts.get("workspace")))
    return os.path.join(root, run_slot(root), name)


_SLOTS: dict[str, str] = {}  # workspace folder -> the slot this process holds in it
_HELD: list[int] = []  # the slots' lock descriptors, open while the process lives


def run_slot(root: str) -> str:
    """``slot-K``: the first slot of ``root`` no other live process holds, taken with an
    exclusive ``flock`` on ``slot-K.lock`` for this process's life (released at its exit,
    SIGKILL included). Runs one after another reuse ``slot-0`` and overwrite their files in
    place; runs that overlap each write their own slot, so one never sees the other's files.
    Nothing is deleted, so a cached result never names a removed file."""
    if root in _SLOTS:
        return _SLOTS[root]
    try:
        import fcntl
    except ImportError:  # no flock (Windows): one shared slot
        return _SLOTS.setdefault(root, "slot-0")
    os.makedirs(root, exist_ok=True)
    k = 0
    while True:
        fd = os.open(os.path.join(root, f"slot-{k}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            k += 1
            continue
        _HELD.append(fd)
        return _SLOTS.setdefault(root, f"slot-{k}")


def workspace_key(workspace: str | None) -> str:
    """The workspace's folder name in the per-user cache: sha256 of its real path, 16 hex
    digits (the result cache's own key, ``core.cache.default_cache_dir``)."""
    import hashlib

    path = os.path.realpath(workspace or os.getcwd())
    return hashlib.sha256(path.encode()).hexdigest()[:16]


def check_output_path(path: str | None, flag: str = "report") -> None:
    """Fail early (before any probe runs) when ``path`` cannot be written: a missing or
    unwritable folder, a folder in its place, or a file system that takes no new file
    (``/proc``, a read-only mount): a file is really created beside it, then removed, as
    the report's own temporary will be. ``flag`` names the output in the message."""
    if not path or path == "-":
        return
    what = f"cannot write {flag} {path}"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{what}: folder {parent} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"{what}: it is a folder")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageError(f"{what}: permission denied")
    _try_create(parent, os.path.basename(path), what)


def check_output_dir(path: str | None, flag: str) -> None:
    """Fail early when folder ``path`` (made on demand, like ``--out``) cannot hold files:
    the folder, or its nearest existing parent, must take a new file."""
    if not path:
        return
    what = f"cannot write {flag} {path}"
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise UsageError(f"{what}: {probe} is not a folder")
    _try_create(probe, "laya-tui", what)


def _try_create(folder: str, name: str, what: str) -> None:
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".check")
    except OSError as exc:
        import errno

        why = exc.strerror or str(exc)
        if exc.errno == errno.ENOENT:  # the folder is there: it takes no new file (/proc)
            why = f"{folder} takes no new file ({why})"
        raise UsageError(f"{what}: {why}") from None
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:
        pass


def drop_bytecode(path: str) -> None:
    """Remove the cached bytecode of source file ``path`` (every interpreter's, and under
    ``sys.pycache_prefix``). Python trusts a ``.pyc`` whose recorded source mtime (whole
    seconds) and size match the file, so a save within the same second that keeps the size
    (``scale = 5`` -> ``scale = 6``) would import the old code again, in a warm worker or a
    fresh one; without the ``.pyc`` the next import compiles the saved source."""
    if not path.endswith(".py"):
        return
    folder, name = os.path.split(path)
    found = glob.glob(os.path.join(glob.escape(folder), "__pycache__",
                                   glob.escape(name[:-3]) + ".*.pyc"))
    try:
        found.append(importlib.util.cache_from_source(path))
    except (NotImplementedError, ValueError):  # no cache tag
        pass
    for pyc in set(found):  # cache_from_source is usually one of the glob's finds
        try:
            os.remove(pyc)
        except OSError:  # gone already, or read-only
            pass

