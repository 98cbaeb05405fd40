"""Result cache: a probe re-run with nothing changed is served from disk (``cached: true``).

Key = hash of (probe id, parameters, run options, library versions, and the contents of
every file in the probe's dependency set as recorded by the worker on its last run).

A cache that cannot be used (its folder a file, not writable, an entry not JSON) is skipped,
and the user is told why once per cause on stderr (``laya-tui: cache ...``): the run goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from laya_tui.core.jsonfast import compact_encoder, dumps_strict
from laya_tui.core.signals import CACHEABLE_STATUSES

CACHEABLE = CACHEABLE_STATUSES
_SLICE = 1000  # signals encoded per step by store_async (~3 ms of C encoding)
_HOLE = "\x00laya-tui signals\x00"  # where store_async splices the encoded signals
_encode = compact_encoder(repr, strict=True)


def default_cache_dir(workspace: str) -> Path:
    """``$XDG_CACHE_HOME/laya-tui/<workspace hash>`` (outside the repo)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "laya-tui"
    digest = hashlib.sha256(os.path.realpath(workspace).encode()).hexdigest()[:16]
    return base / digest


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes, or None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def cache_key(probe_id: str, params: Any, options: Any, versions: dict[str, Any],
              deps: list[str]) -> str | None:
    """The cache key, or None when a dependency file is gone (never a hit)."""
    h = hashlib.sha256()
    h.update(json.dumps([probe_id, params, options, versions], sort_keys=True,
                        default=repr).encode())
    for path in sorted(set(deps)):
        digest = file_digest(path)
        if digest is None:
            return None
        h.update(f"\0{path}\0{digest}".encode())
    return h.hexdigest()


def _entry(probe_id: str, params: Any, options: Any, versions: dict[str, Any],
           deps: list[str], result: dict[str, Any]) -> dict[str, Any] | None:
    """The cache file's content, or None when the result must not be cached."""
    if result.get("status") not in CACHEABLE or result.get("error"):
        return None
    key = cache_key(probe_id, params, options, versions, deps)
    if key is None:
        return None
    return {"id": probe_id, "key": key, "deps": sorted(set(deps)), "result": result}


def cache_problem(root: str | os.PathLike[str]) -> str | None:
    """Why the cache folder ``root`` cannot be used (made if missing), or None when a file
    can be written in it."""
    path = Path(root)
    if path.exists() and not path.is_dir():
        return "it is a file, not a folder"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path, suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _stderr_note(text: str) -> None:
    print(f"laya-tui: {text}", file=sys.stderr, flush=True)


class ResultCache:
    """One JSON file per probe id under ``root``; ``note`` hears, once per cause, why the
    cache or one of its files is skipped (default: a line on stderr)."""

    def __init__(self, root: str | os.PathLike[str],
                 note: Callable[[str], None] | None = None) -> None:
        self.root = Path(root)
        self._note = note or _stderr_note
        self._noted: set[str] = set()
        self._usable: bool | None = None  # checked on first use

    def notice(self, cause: str, text: str) -> None:
        """Tell the user ``text`` unless ``cause`` was told already in this run."""
        if cause not in self._noted:
            self._noted.add(cause)
            self._note(text)

    def usable(self) -> bool:
        """True when the folder can hold entries (checked once; said once when not)."""
        if self._usable is None:
            problem = cache_problem(self.root)
            self._usable = problem is None
            if problem is not None:
                self.notice("folder", f"cache {self.root} skipped ({problem}): every cell "
                            "runs, nothing is cached")
        return self._usable

    def _path(self, probe_id: str) -> Path:
        return self.root / (hashlib.sha256(probe_id.encode()).hexdigest()[:24] + ".json")

    def lookup(self, probe_id: str, params: Any, options: Any,
               versions: dict[str, Any]) -> dict[str, Any] | None:
        """The stored result when its key still matches, else None (an unreadable or corrupt
        entry is said once and the cell runs again: its fresh result replaces it)."""
        if not self.usable():
            return None
        path = self._path(probe_id)
        try:
            entry = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.notice("read", f"cache file {path} skipped ({exc.strerror or exc}): its "
                        "cell runs again")
            return None
        except ValueError as exc:
            self._corrupt(path, str(exc).splitlines()[0][:120])
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
            self._corrupt(path, "not a cache entry")
            return None
        if entry.get("id") != probe_id:
            return None
        key = cache_key(probe_id, params, options, versions, entry.get("deps", []))
        if key is None or key != entry.get("key"):
            return None
        result = entry.get("result")
        return result if isinstance(result, dict) else None

    def _corrupt(self, path: Path, why: str) -> None:
        self.notice("corrupt", f"cache file {path} is corrupt ({why}): skipped, its cell "
                    "runs again (later corrupt files are skipped without a word)")

    def store(self, probe_id: str, params: Any, options: Any, versions: dict[str, Any],
              deps: list[str], result: dict[str, Any]) -> None:
        """Store a result whose status is cacheable (an unusable cache was said once)."""
        if not self.usable():
            return
        entry = _entry(probe_id, params, options, versions, deps, result)
        if entry is not None:
            self._write(probe_id, dumps_strict(entry))

    async def store_async(self, probe_id: str, params: Any, options: Any,
                          versions: dict[str, Any], deps: list[str],
                          result: dict[str, Any]) -> None:
        """:meth:`store` without holding the event loop or a second copy of the run: a
        result with many signals is encoded in slices (yielding between them), each slice
        written to the file as it is made."""
        if not self.usable():
            return
        entry = _entry(probe_id, params, options, versions, deps, result)
        if entry is None:
            return
        sigs = result.get("signals")
        if not isinstance(sigs, list) or len(sigs) <= _SLICE:
            await asyncio.to_thread(self._write, probe_id, dumps_strict(entry))
            return
        # ~4 ms of C encoding per slice instead of ~200 ms at once for 100k signals
        head, tail = dumps_strict(dict(entry, result=dict(result, signals=_HOLE))).split(
            json.dumps(_HOLE), 1)
        tmp = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                fh.write(head + "[")
                for i in range(0, len(sigs), _SLICE):
                    fh.write((", " if i else "") + _encode(sigs[i:i + _SLICE])[1:-1])
                    await asyncio.sleep(0)
                fh.write("]" + tail)
            os.replace(tmp, self._path(probe_id))
        except BaseException as exc:  # unwritable (said once) or cancelled
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            if not isinstance(exc, OSError):
                raise
            self._unwritable(exc)

    def _write(self, probe_id: str, text: str) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.replace(tmp, self._path(probe_id))
        except OSError as exc:
            self._unwritable(exc)

    def _unwritable(self, exc: OSError) -> None:
        self.notice("write", f"cache {self.root} cannot be written ({exc.strerror or exc}): "
                    "results from here on are not cached")
