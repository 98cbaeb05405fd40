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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from pathlib import Path
from typing import IO, TypeAlias, TypedDict, cast

from laya_tui.core.jsonfast import compact_encoder, dumps_strict
from laya_tui.core.report_types import ResultDict
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


#: What a cell's cache entry is keyed on besides its id, params and options: library ->
#: version of the interpreter that runs it, plus what a runner adds (``--cluster``: the
#: nodes' versions). Open: hashed as JSON, never read back field by field.
CacheVersions: TypeAlias = Mapping[str, object]


class CacheEntry(TypedDict):
    """One cache file: the cell id, the key its result was stored under, the files it
    imported (their digests are in the key) and the result."""

    id: str
    key: str
    deps: list[str]
    result: ResultDict


def cache_key(probe_id: str, params: object, options: object, versions: CacheVersions,
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


def _entry(probe_id: str, params: object, options: object, versions: CacheVersions,
           deps: list[str], result: ResultDict) -> CacheEntry | None:
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

    def lookup(self, probe_id: str, params: object, options: object,
               versions: CacheVersions) -> ResultDict | None:
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
        return cast(ResultDict, result) if isinstance(result, dict) else None  # one it stored

    def _corrupt(self, path: Path, why: str) -> None:
        self.notice("corrupt", f"cache file {path} is corrupt ({why}): skipped, its cell "
                    "runs again (later corrupt files are skipped without a word)")

    def store(self, probe_id: str, params: object, options: object, versions: CacheVersions,
              deps: list[str], result: ResultDict) -> None:
        """Store a result whose status is cacheable (an unusable cache was said once)."""
        if not self.usable():
            return
        entry = _entry(probe_id, params, options, versions, deps, result)
        if entry is not None:
            self._write(probe_id, dumps_strict(entry))

    def spool(self, probe_id: str) -> SignalSpool | None:
        """A :class:`SignalSpool` for a run of ``probe_id`` about to stream, in this cache's
        folder (None when the cache is unusable)."""
        return SignalSpool(self.root, probe_id) if self.usable() else None

    async def store_async(self, probe_id: str, params: object, options: object,
                          versions: CacheVersions, deps: list[str],
                          result: ResultDict, spool: SignalSpool | None = None) -> None:
        """:meth:`store` without holding the event loop or a second copy of the run: a
        result with many signals is encoded in slices (yielding between them), each slice
        written to the file as it is made. ``spool``: the run's signals as the worker wrote
        them; when it holds every one of them, their text is copied, not encoded again."""
        if not self.usable():
            return
        entry = _entry(probe_id, params, options, versions, deps, result)
        if entry is None:
            return
        sigs = result.get("signals")
        if not isinstance(sigs, list) or len(sigs) <= _SLICE:
            await asyncio.to_thread(self._write, probe_id, dumps_strict(entry))
            return
        pieces: Iterable[bytes]
        if spool is not None and spool.holds(sigs):  # the worker's own text, as it came
            pieces = spool.chunks()
        else:  # ~4 ms of C encoding per slice instead of ~200 ms at once for 100k signals
            pieces = (((", " if i else "") + _encode(sigs[i:i + _SLICE])[1:-1]).encode()
                      for i in range(0, len(sigs), _SLICE))
        await self._store_pieces(probe_id, entry, result, pieces)

    async def _store_pieces(self, probe_id: str, entry: CacheEntry, result: ResultDict,
                            pieces: Iterable[bytes]) -> None:
        """Write ``entry`` with its signals' JSON text given in ``pieces``, yielding to the
        loop between them; a temp file replaced at the end (unwritable: said once)."""
        head, tail = dumps_strict(dict(entry, result=dict(result, signals=_HOLE))).split(
            json.dumps(_HOLE), 1)
        tmp = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write((head + "[").encode())
                for piece in pieces:
                    fh.write(piece)
                    await asyncio.sleep(0)
                fh.write(("]" + tail).encode())
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


#: How a signal batch line starts, up to its probe id (``laya_tui.worker.main`` writes
#: ``{"type": "signals", "probe": ID, "signals": [S1, S2, ...]}`` a line).
_BATCH_START = b'{"type": "signals", "probe": '
_BATCH_END = b"]}\n"
_SPOOL_CHUNK = 1 << 20


class SignalSpool:
    """The signals of one streaming run as JSON text, copied from the worker's batch lines
    (kept in memory up to a store slice's worth, then in a temporary file in the cache
    folder), so storing the result copies their bytes instead of encoding every signal
    again. The runner still parses and checks every line; this keeps the text it parsed.

    A line not in the worker's batch layout, or a signal that arrived another way, makes
    the spool decline (:meth:`holds` is False): the result is then encoded as before.
    """

    def __init__(self, root: Path, probe_id: str) -> None:
        self._root = root
        self._head = _BATCH_START + json.dumps(probe_id).encode() + b', "signals": ['
        self._parts: list[bytes] = []  # not written to the file yet
        self._fh: IO[bytes] | None = None
        self._path: str | None = None
        self._written = False
        self.count = 0  # signals spooled
        self.ok = True

    def add(self, line: bytes, event: Mapping[str, object]) -> None:
        """Keep the signals of one batch: ``line`` as read, ``event`` as parsed from it."""
        if not self.ok:
            return
        head, batch = self._head, event.get("signals")
        if (len(event) != 3 or not isinstance(batch, list) or not line.startswith(head)
                or not line.endswith(_BATCH_END)):
            self.decline()
            return
        part = line[len(head):-len(_BATCH_END)]
        if not batch:
            if part:
                self.decline()
            return
        self._parts.append(part)
        self.count += len(batch)
        if self._fh is None and self.count <= _SLICE:
            return
        try:
            if self._fh is None:
                fd, self._path = tempfile.mkstemp(dir=self._root, prefix=".spool-",
                                                  suffix=".tmp")
                self._fh = os.fdopen(fd, "w+b")
            for text in self._parts:
                self._fh.write(b", " + text if self._written else text)
                self._written = True
        except OSError:
            self.decline()
            return
        self._parts.clear()

    def decline(self) -> None:
        """Give up: the result will be encoded from its signals."""
        self.ok = False
        self.close()

    def holds(self, signals: Sized) -> bool:
        """True when the spool holds exactly ``signals`` (every one, in order)."""
        return self.ok and self.count == len(signals)

    def chunks(self) -> Iterator[bytes]:
        """The spooled text (``S1, S2, ...``), in chunks of bytes."""
        fh = self._fh
        if fh is not None:
            fh.flush()
            fh.seek(0)
            while chunk := fh.read(_SPOOL_CHUNK):
                yield chunk
        if self._parts:
            yield (b", " if self._written else b"") + b", ".join(self._parts)

    def close(self) -> None:
        """Drop the text and remove the temporary file (call it for every run: crashed
        and cancelled ones too)."""
        fh, path = self._fh, self._path
        self._fh = self._path = None
        self._parts = []
        if fh is not None:
            fh.close()
        if path is not None:
            try:
                os.unlink(path)
            except OSError:
                pass
