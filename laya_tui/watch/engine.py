"""Watch mode engine: re-run exactly the probes whose inputs changed (docs/architecture.md,
'Watch mode').

UI-agnostic: the dashboard and the headless writer both drive a :class:`Watcher` and get
plain dict *records* through ``on_record``. Light on purpose (asyncio + watchfiles): the
probes run in the runner's warm workers, never here.

How a change flows. ``watchfiles.awatch`` (short debounce, ``debounce_ms``) watches the probe
and kernel paths recursively and the folders of every other file a probe depends on. A
batch of changed files (minus ``.git``, caches, virtual environments, editor droppings and
the tool's own output) is handled in order:

1. Structure: a ``.py`` file added, deleted or edited under the probe paths, a ``.py`` file
   added or deleted under the kernel paths, or an edit to a file discovery itself imported
   re-runs discovery in a warm discovery worker. Cells that appeared run; cells that
   disappeared get a ``removed`` record. A probe file that no longer imports becomes a
   diagnostic for its cells, which keep their place and recover on the next good save.
2. Invalidation: every warm worker drops the workspace modules whose import closure
   touches the changed files before its next run (``Runner.invalidate``); a changed native
   extension recycles the workers instead.
3. Mapping: a cell re-runs when a changed file is in its dependency set (discovery deps
   plus the files its last run imported or declared with ``ctx.depends_on``). A newer
   change to a cell in flight cancels that run; only the result for the latest content is
   reported.

Records (``on_record(dict)``); every record has the same keys:

``type``
    ``"result"`` (a cell ran, or failed to import: see ``diagnostic``), ``"removed"`` (a
    cell disappeared), ``"diagnostic"`` (a probe file with no known cells fails to
    import; ``probe`` is None) or ``"ready"`` (the first full run is done; ``probes`` =
    how many cells, ``seconds`` = its wall time).
``probe``, ``family``
    The cell id and family (None for ``diagnostic`` and ``ready``).
``trigger``
    The changed file that caused it (relative to the workspace when inside; None for the
    first run).
``seconds``
    The run's own seconds (``result``), or the first run's wall time (``ready``).
``latency``
    Seconds from the trigger file's last write to this record (None without a trigger).
``status``, ``reason``, ``previous_status``
    The result's status and reason (``removed``: None), and the status before.
``new``, ``gone``
    Signals present only after / only before (full signal dicts), matched by
    :func:`laya_tui.core.results.signal_key`.
``changed``
    ``[{"kind", "subject", "reason", "fields": {name: [before, after]}}]`` for signals with
    the same key whose ``count``, ``bytes``, ``value``, ``passed`` or ``detail.outcome``
    differ. The diff is taken against the cell's last real result: a diagnostic (syntax or
    import error) does not become the baseline, so the first good save after it shows the
    effect of the edit, not a wall of "new".
``diagnostic``
    ``{"file", "line", "message"}`` when the cell (or file) failed to import: a syntax or
    import error saved mid-edit; else None.
``cached``
    True when served from the result cache (first run only; re-runs always run).
``result``
    The full result dict as in the report (``result`` records only; the headless writer
    leaves it out).
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from laya_tui.core.envs import worker_key
from laya_tui.core.events import Event, ProbeStarted
from laya_tui.core.results import failing, is_cancelled, make_result, signal_key
from laya_tui.core.runner import Discovery, RunConfig, Runner
from laya_tui.core.settings import DEFAULT_DEBOUNCE_MS

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
#: Signal fields whose change makes a signal "changed" (besides ``detail.outcome``).
COMPARED_FIELDS = ("count", "bytes", "value", "passed")
DIAGNOSTIC_ERRORS = ("ProbeFileError", "SyntaxError", "IndentationError", "TabError",
                     "ImportError", "ModuleNotFoundError")
_AT_FILE_LINE = re.compile(r" at (?P<file>\S+):(?P<line>\d+)$")

Record = dict[str, Any]


# -- signal diff ------------------------------------------------------------------------------
def _facts(sig: dict[str, Any]) -> dict[str, Any]:
    facts = {k: sig.get(k) for k in COMPARED_FIELDS}
    detail = sig.get("detail")
    facts["outcome"] = detail.get("outcome") if isinstance(detail, dict) else None
    return facts


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def diff_signals(before: Iterable[dict[str, Any]], after: Iterable[dict[str, Any]]
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """``(new, gone, changed)`` between two signal lists, matched by ``signal_key``.

    Signals sharing a key are paired in order; the unpaired rest are new or gone.
    """
    old: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for sig in before:
        old.setdefault(signal_key(sig), []).append(sig)
    new: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for sig in after:
        bucket = old.get(signal_key(sig))
        if not bucket:
            new.append(sig)
            continue
        prev = bucket.pop(0)
        a, b = _facts(prev), _facts(sig)
        fields = {k: [a[k], b[k]] for k in a if not _same(a[k], b[k])}
        if fields:
            changed.append({"kind": sig.get("kind"), "subject": sig.get("subject"),
                            "reason": sig.get("reason"), "fields": fields})
    gone = [sig for bucket in old.values() for sig in bucket]
    return new, gone, changed


def diagnostic_of(result: dict[str, Any]) -> dict[str, Any] | None:
    """``{file, line, message}`` when a result is a syntax/import error saved mid-edit."""
    err = result.get("error")
    if result.get("status") != "failed":
        return None
    if not isinstance(err, dict) or err.get("type") not in DIAGNOSTIC_ERRORS:
        # A probe may report the import failure itself: a failing signal whose detail
        # names the exception (the lowering probe's ``stage: import`` cells).
        for sig in result.get("signals", []):
            detail = sig.get("detail") if isinstance(sig.get("detail"), dict) else {}
            site = sig.get("site") or {}
            if failing(sig) and detail.get("exception") in DIAGNOSTIC_ERRORS \
                    and site.get("file"):
                return {"file": site["file"], "line": site.get("line"),
                        "message": result.get("reason") or sig.get("reason") or ""}
        return None
    message = result.get("reason") or err.get("message") or ""
    site = err.get("site") or {}
    file, line = site.get("file"), site.get("line")
    m = _AT_FILE_LINE.search(err.get("message") or "")
    if m:  # the error is in a file the probe file imports: point at that file
        file, line = m.group("file"), int(m.group("line"))
    return {"file": file, "line": line, "message": message}


# -- file filter ------------------------------------------------------------------------------
class ChangeFilter:
    """watchfiles filter: drops ignored folders (below the roots only), droppings and paths."""

    def __init__(self, roots: Iterable[str], ignore_paths: Iterable[str] = ()) -> None:
        self.roots = sorted({os.path.realpath(r) for r in roots}, key=len, reverse=True)
        self.ignore_paths = tuple(os.path.realpath(p) for p in ignore_paths if p)

    def __call__(self, change: Any, path: str) -> bool:
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


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def _py_files(roots: Iterable[str]) -> set[str]:
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


# -- the engine -------------------------------------------------------------------------------
class Watcher:
    """Watch the workspace and re-run the probes whose inputs changed, in warm workers.

    ``runner``: share a Runner (its warm workers) with the caller, who then owns and
    closes it; or ``runner_factory`` (default ``Runner``) builds one this watcher closes.
    ``initial``: results to start from (skips the first run; the dashboard passes what it
    already ran); else every discovered cell runs once first (``ready`` follows).
    """

    def __init__(self, config: RunConfig, runner: Runner | None = None, *,
                 runner_factory: Callable[[RunConfig], Runner] | None = None,
                 on_record: Callable[[Record], None] | None = None,
                 debounce_ms: int = DEFAULT_DEBOUNCE_MS,
                 ignore_paths: Iterable[str] = (),
                 initial: Iterable[dict[str, Any]] | None = None,
                 gate_settings: Any = None) -> None:
        self.config = config
        self.gate_settings = gate_settings
        self._owns_runner = runner is None
        self.runner = runner if runner is not None else (runner_factory or Runner)(config)
        self.on_record = on_record or (lambda r: None)
        self.debounce_ms = max(1, int(debounce_ms))
        self.workspace = os.path.realpath(config.workspace)
        self.probe_roots = [os.path.realpath(p) for p in config.probes]
        self.kernel_roots = [os.path.realpath(k) for k in config.kernels]
        ignore = [p for p in ignore_paths if p]
        ignore += [p for p in (config.out, config.cache_dir) if p]
        self.filter = ChangeFilter([self.workspace, *self.probe_roots, *self.kernel_roots],
                                   ignore)
        #: probe id -> probe dict from discovery, in discovery order
        self.probes: dict[str, dict[str, Any]] = {}
        #: probe id -> latest result (real run or diagnostic); what the report shows
        self.results: dict[str, dict[str, Any]] = {}
        #: discovery errors now standing (``{file, error, line}``)
        self.errors: list[dict[str, Any]] = []
        self.errors_seen: list[dict[str, Any]] = []
        self._baseline: dict[str, dict[str, Any]] = {}  # last real (non-diagnostic) result
        self._deps: dict[str, set[str]] = {}
        self._discovery_deps: set[str] = set()
        self._blocked: dict[str, dict[str, Any]] = {}  # probe file -> its import error
        self._known_py: set[str] = set()
        self._gen: dict[str, int] = {}
        self._started_gen: dict[str, int] = {}
        self._inflight: set[str] = set()
        self._dirty: dict[str, OrderedDict[str, tuple[str | None, float | None]]] = {}
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._sem = asyncio.Semaphore(max(1, config.jobs))
        self._queue: asyncio.Queue[tuple[float, set[tuple[Any, str]]]] = asyncio.Queue()
        self._streams: list[asyncio.Task[None]] = []
        self._stream_stop: asyncio.Event | None = None
        self._roots: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self._stop = asyncio.Event()
        self._initial = list(initial) if initial is not None else None
        self._unsubscribe: Callable[[], None] | None = None
        self.first_run_seconds: float | None = None

    # -- public -----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask :meth:`run` to end (safe from a signal handler on the loop)."""
        self._stop.set()

    async def run(self) -> None:
        """Discover, run everything once (unless given ``initial``), then watch until stop."""
        self._unsubscribe = self.runner.subscribe(self._on_event)
        t0 = time.perf_counter()
        try:
            self._known_py = _py_files(self.probe_roots + self.kernel_roots)
            disc = await self._discover()
            self._apply_discovery(disc, trigger=None, changed=set(), first=True)
            await self._restart_streams()
            if self._initial is not None:
                for r in self._initial:
                    if r.get("id") in self.probes:
                        self._accept(r)
            else:
                for pid in self.probes:
                    if not self._is_blocked(pid):
                        self._schedule(pid, None, None)
            await self._wait_idle()
            self.first_run_seconds = time.perf_counter() - t0
            await self._restart_streams()  # the first run may have added dependency folders
            self._emit(self._record("ready", None, seconds=round(self.first_run_seconds, 3),
                                    probes=len(self.probes)))
            await self._loop()
        finally:
            await self._shutdown()

    def report(self) -> dict[str, Any]:
        """The current report document (same schema and gates as ``--headless --json``)."""
        from laya_tui.core.runner import Discovery
        from laya_tui.report.outputs import make_report

        results = [self.results[p] for p in self.probes if p in self.results]
        envs = {e.name: e.info() for e in self.config.envs} or None  # --env
        return make_report(results, Discovery([], self.errors, envs=envs),
                           sum(r.get("seconds", 0) for r in results), self.gate_settings)

    # -- the change loop --------------------------------------------------------------------------
    async def _loop(self) -> None:
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            while not self._stop.is_set():
                get = asyncio.ensure_future(self._queue.get())
                done, _ = await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    get.cancel()
                    break
                when, changes = get.result()
                while not self._queue.empty():  # coalesce batches that queued up meanwhile
                    _, more = self._queue.get_nowait()
                    changes |= more
                await self._handle(changes, when)
        finally:
            stop.cancel()

    async def _handle(self, changes: set[tuple[Any, str]], when: float) -> None:
        changed = {os.path.realpath(p) for _, p in changes if self.filter.accepts(p)}
        if not changed:
            return
        # Invalidation first (applied lazily: each warm worker, the discovery one too, drops
        # the changed modules right before its next command), so a discovery or a run
        # started below never sees stale modules.
        native = any(p.endswith(NATIVE_SUFFIXES) and any(p in d for d in self._deps.values())
                     for p in changed)
        await self.runner.invalidate(changed, recycle=native)
        # 1. structure
        py_under_probes = {p for p in changed if p.endswith(".py") and _under(p, self.probe_roots)}
        appeared_or_gone = {p for p in changed if p.endswith(".py")
                            and _under(p, self.probe_roots + self.kernel_roots)
                            and os.path.exists(p) != (p in self._known_py)}
        for p in changed:
            if p.endswith(".py") and _under(p, self.probe_roots + self.kernel_roots):
                (self._known_py.add if os.path.exists(p) else self._known_py.discard)(p)
        structural = (py_under_probes or appeared_or_gone or changed & self._discovery_deps
                      or (self._blocked and any(p.endswith(".py") for p in changed)))
        # A probe file edit or a file appearing/going may change the cells: discover first.
        # Otherwise (a kernel a cell's parameters derive from) the affected cells start now
        # and discovery runs beside them; a cell whose definition changed starts over.
        first = bool(py_under_probes or appeared_or_gone or self._blocked)
        cause = sorted(py_under_probes or appeared_or_gone or changed)[0]
        if structural and first:
            self._apply_discovery(await self._discover(), trigger=cause, changed=changed)
        # 2. mapping
        self._map(changed, when)
        if structural and not first:
            self._apply_discovery(await self._discover(), trigger=cause, changed=changed)
        await self._restart_streams()

    def _map(self, changed: set[str], when: float) -> None:
        """Schedule the cells whose dependency set meets ``changed``."""
        deleted = {p for p in changed if not os.path.exists(p)}
        changed_py = {p for p in changed if p.endswith(".py")}
        for pid in list(self.probes):
            deps = self._deps.get(pid, set())
            hit = deps & changed
            if not hit and (deleted or changed_py):
                # A module deleted from a package this cell imports through, when the
                # package __init__ imports it (or, for a cell that does not import now,
                # any module saved in such a package).
                inits = [d for d in deps if d.endswith("__init__.py")]
                if diagnostic_of(self.results.get(pid, {})):
                    folders = [os.path.dirname(i) for i in inits]
                    hit = {p for p in changed_py if _under(p, folders)}
                else:
                    hit = {p for p in deleted for i in inits if _imports_sibling(i, p)}
            if hit and not self._is_blocked(pid):
                trig = sorted(hit)[0]
                self._schedule(pid, trig, _mtime(trig, when))

    # -- discovery --------------------------------------------------------------------------------
    async def _discover(self) -> Discovery:
        """Discovery in the runner's warm discovery worker (it drops changed modules first)."""
        return await self.runner.discover(warm=True)

    def _apply_discovery(self, disc: Discovery, *, trigger: str | None, changed: set[str],
                         first: bool = False) -> None:
        errors = {os.path.realpath(e["file"]): e for e in disc.errors
                  if e.get("file") and os.path.exists(e["file"])}
        fresh = {p["id"]: p for p in disc.probes}
        # Cells of a file that no longer imports keep their place (they recover later).
        for pid, p in self.probes.items():
            if p["file"] in errors and pid not in fresh:
                fresh[pid] = p
        self._discovery_deps = {d for p in disc.probes for d in p.get("deps", [])}
        old_blocked = self._blocked
        self._blocked = errors
        self.errors = list(disc.errors)
        removed = [self.probes[pid] for pid in self.probes if pid not in fresh]
        added = [pid for pid in fresh if pid not in self.probes]
        redefined = [pid for pid, p in fresh.items()
                     if pid in self.probes and _definition(p) != _definition(self.probes[pid])]
        self.probes = fresh
        for pid, p in fresh.items():
            self._deps[pid] = self._deps.get(pid, set()) | set(p.get("deps", []))
        for p in removed:
            self._forget(p, trigger)
        if not first:
            for pid in added + redefined:
                if not self._is_blocked(pid):
                    self._schedule(pid, trigger, _mtime(trigger, time.time()))
        # Diagnostics: only when the error is new or its file was just saved.
        for err in disc.errors:
            if err.get("file") and os.path.realpath(err["file"]) in errors:
                continue
            if first or err not in self.errors_seen:
                self._emit(self._record("diagnostic", None, trigger=trigger, status="failed",
                                        reason=_one_line(err),
                                        diagnostic={"file": err.get("file"),
                                                    "line": err.get("line"),
                                                    "message": err.get("error")}))
        self.errors_seen = list(disc.errors)
        for file, err in errors.items():
            if old_blocked.get(file) == err and file not in changed:
                continue
            cells = [pid for pid, p in fresh.items() if p["file"] == file]
            diag = {"file": file, "line": err.get("line"), "message": err.get("error")}
            m = _AT_FILE_LINE.search(err.get("error") or "")
            if m:
                diag.update(file=m.group("file"), line=int(m.group("line")))
            if not cells:
                self._emit(self._record("diagnostic", None, trigger=trigger, diagnostic=diag,
                                        status="failed", reason=_one_line(err)))
            for pid in cells:
                self._cancel(pid)
                self._diagnose(pid, err, diag, trigger)

    def _forget(self, probe: dict[str, Any], trigger: str | None) -> None:
        pid = probe["id"]
        self._cancel(pid)
        before = self.results.pop(pid, None) or {}
        base = self._baseline.pop(pid, None)
        self._deps.pop(pid, None)
        self._emit(self._record("removed", pid, family=probe["family"], trigger=trigger,
                                previous_status=before.get("status"),
                                gone=list((base or before).get("signals", []))))

    def _diagnose(self, pid: str, err: dict[str, Any], diag: dict[str, Any],
                  trigger: str | None) -> None:
        p = self.probes[pid]
        before = self.results.get(pid)
        result = make_result(p, "failed", _one_line(err), seconds=0.0,
                             deps=self._rel(self._deps.get(pid, set())), signals=[],
                             error={"type": "ProbeFileError", "message": err.get("error"),
                                    "site": {"file": diag["file"], "line": diag["line"]}})
        self.results[pid] = result
        self._emit(self._record("result", pid, family=p["family"], trigger=trigger,
                                status="failed", reason=result["reason"], diagnostic=diag,
                                previous_status=before.get("status") if before else None,
                                result=result))

    def _is_blocked(self, pid: str) -> bool:
        p = self.probes.get(pid)
        return p is None or p["file"] in self._blocked

    # -- scheduling -------------------------------------------------------------------------------
    def _schedule(self, pid: str, trigger: str | None, changed_at: float | None) -> None:
        self._gen[pid] = self._gen.get(pid, 0) + 1
        fam = worker_key(self.probes[pid])  # one driver per warm worker (family[@env])
        q = self._dirty.setdefault(fam, OrderedDict())
        q[pid] = (trigger, changed_at)
        if pid in self._inflight:
            self.runner.cancel(pid)  # a newer change supersedes the run in flight
        if fam not in self._drivers:
            self._drivers[fam] = asyncio.ensure_future(self._drive(fam))

    def _cancel(self, pid: str) -> None:
        self._gen[pid] = self._gen.get(pid, 0) + 1
        for q in self._dirty.values():
            q.pop(pid, None)
        if pid in self._inflight:
            self.runner.cancel(pid)

    async def _drive(self, fam: str) -> None:
        """Run the family's dirty cells one by one in its warm worker."""
        try:
            q = self._dirty.setdefault(fam, OrderedDict())
            while q and not self._stop.is_set():
                pid, (trigger, changed_at) = q.popitem(last=False)
                probe = self.probes.get(pid)
                if probe is None or self._is_blocked(pid):
                    continue
                gen = self._gen.get(pid, 0)
                self._started_gen[pid] = gen
                async with self._sem:
                    if self._gen.get(pid, 0) != gen or self._stop.is_set():
                        continue  # superseded while waiting: it is queued again
                    self._inflight.add(pid)
                    try:
                        use_cache = self.config.use_cache if trigger is None else False
                        result = await self.runner.run_one(probe, use_cache=use_cache)
                    finally:
                        self._inflight.discard(pid)
                if self._stop.is_set() or is_cancelled(result) \
                        or self._started_gen.get(pid, gen) != self._gen.get(pid):
                    continue  # a newer change came in after this run read the files
                if pid in self.probes:
                    self._finish(pid, trigger, changed_at, result)
        finally:
            self._drivers.pop(fam, None)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, ProbeStarted):
            # The worker reads the files from here on: later changes supersede this run,
            # unless a change is still waiting to be dropped from that worker's modules.
            probe = self.probes.get(event.probe_id)
            pending = self.runner.pending_invalidations(
                worker_key(probe) if probe is not None else event.family)
            if not pending & self._deps.get(event.probe_id, set()):
                self._started_gen[event.probe_id] = self._gen.get(event.probe_id, 0)

    async def _wait_idle(self) -> None:
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            while self._drivers and not self._stop.is_set():
                await asyncio.wait([*self._drivers.values(), stop],
                                   return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()

    # -- results ----------------------------------------------------------------------------------
    def _accept(self, result: dict[str, Any]) -> None:
        pid = result["id"]
        self.results[pid] = result
        clean = diagnostic_of(result) is None
        if clean:
            self._baseline[pid] = result
        deps = set(self.probes[pid].get("deps", [])) | self._abs(result.get("deps", []))
        if not clean or result.get("status") in ("crashed", "timeout"):
            deps |= self._deps.get(pid, set())  # a partial run: keep what it depended on
        diag = diagnostic_of(result)
        if diag and diag.get("file") and os.path.isabs(diag["file"]):
            deps.add(os.path.realpath(diag["file"]))  # recover when that file is fixed
        self._deps[pid] = deps

    def _finish(self, pid: str, trigger: str | None, changed_at: float | None,
                result: dict[str, Any]) -> None:
        before = self.results.get(pid)
        base = self._baseline.get(pid)
        self._accept(result)
        diag = diagnostic_of(result)
        if diag is not None:
            new: list[dict[str, Any]] = []
            gone: list[dict[str, Any]] = []
            changed: list[dict[str, Any]] = []
        else:
            new, gone, changed = diff_signals((base or {}).get("signals", []),
                                              result.get("signals", []))
        self._emit(self._record(
            "result", pid, family=result.get("family"), trigger=trigger,
            seconds=result.get("seconds"), status=result.get("status"),
            reason=result.get("reason"), cached=bool(result.get("cached")),
            previous_status=before.get("status") if before else None,
            latency=round(time.time() - changed_at, 3) if changed_at else None,
            new=new, gone=gone, changed=changed, diagnostic=diag, result=result))

    def _record(self, kind: str, pid: str | None, **fields: Any) -> Record:
        trigger = fields.pop("trigger", None)
        rec: Record = {"type": kind, "probe": pid, "family": None,
                       "trigger": self._rel_one(trigger) if trigger else None,
                       "seconds": None, "latency": None, "status": None, "reason": None,
                       "previous_status": None, "cached": False, "new": [], "gone": [],
                       "changed": [], "diagnostic": None}
        rec.update(fields)
        return rec

    def _emit(self, record: Record) -> None:
        try:
            self.on_record(record)
        except Exception:  # noqa: BLE001 - a listener bug must not end the watcher
            import traceback

            traceback.print_exc()

    # -- watching ---------------------------------------------------------------------------------
    def _watch_roots(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(recursive roots, single-folder roots): probe/kernel paths, then dependency folders."""
        flat: set[str] = {os.path.dirname(r) for r in self.probe_roots if os.path.isfile(r)}
        wanted: set[str] = set()
        for root in (r for r in self.probe_roots + self.kernel_roots if os.path.isdir(r)):
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
        rec = sorted(r for r in wanted if not any(r != o and _under(r, [o]) for o in wanted))
        deps = set(self._discovery_deps)
        for d in self._deps.values():
            deps |= d
        for d in deps:
            folder = os.path.dirname(d)
            if not _under(d, rec) and self.filter.accepts(d):
                flat.add(folder)
        flat = {f for f in flat if os.path.isdir(f) and not _under(f, rec)}
        return tuple(rec), tuple(sorted(flat))

    async def _restart_streams(self) -> None:
        """(Re)start the awatch streams when the folders to watch changed.

        The new streams are set up before the old ones stop, so no save is missed in
        between (one seen twice only re-runs its cells once more).
        """
        roots = self._watch_roots()
        if roots == self._roots and self._streams:
            return
        old_stop, old_streams = self._stream_stop, self._streams
        self._roots = roots
        stop = asyncio.Event()
        self._stream_stop, self._streams = stop, []
        rec, flat = roots
        if rec:
            self._streams.append(asyncio.ensure_future(self._stream(rec, True, stop)))
        if flat:
            self._streams.append(asyncio.ensure_future(self._stream(flat, False, stop)))
        for _ in range(3):  # awatch sets its notifier up in its first step: wait for it
            await asyncio.sleep(0)
        await self._stop_streams(old_stop, old_streams)

    async def _stream(self, roots: tuple[str, ...], recursive: bool, stop: asyncio.Event) -> None:
        from watchfiles import awatch

        step = max(5, min(10, self.debounce_ms // 5))  # quiet time that ends a burst
        try:
            async for changes in awatch(*roots, watch_filter=self.filter, recursive=recursive,
                                        debounce=self.debounce_ms, step=step, stop_event=stop,
                                        rust_timeout=1000, ignore_permission_denied=True):
                self._queue.put_nowait((time.time(), set(changes)))
        except (FileNotFoundError, OSError) as exc:
            # A watched folder vanished: watch what is left at the next change.
            self._roots = ((), ())
            print(f"laya-tui watch: {exc}", file=_stderr())

    @staticmethod
    async def _stop_streams(stop: asyncio.Event | None, streams: list[asyncio.Task[None]]
                            ) -> None:
        if stop is not None:
            stop.set()
        if streams:
            await asyncio.wait(streams, timeout=2.0)
            for t in streams:
                t.cancel()

    async def _shutdown(self) -> None:
        self._stop.set()
        # Let the drivers end on their own (a killed run returns at once): cancelling a
        # task mid-protocol would leave a shared runner's worker out of step.
        deadline = time.monotonic() + 5.0
        while self._drivers and time.monotonic() < deadline:
            for pid in list(self._inflight):
                self.runner.cancel(pid)
            await asyncio.wait(list(self._drivers.values()), timeout=0.1)
        for t in list(self._drivers.values()):
            t.cancel()
        await self._stop_streams(self._stream_stop, self._streams)
        self._streams = []
        await self.runner.close_discovery()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._owns_runner:
            self.runner.kill_all()
            await self.runner.close()

    # -- paths ------------------------------------------------------------------------------------
    def _abs(self, deps: Iterable[str]) -> set[str]:
        return {d if os.path.isabs(d) else os.path.join(self.workspace, d) for d in deps}

    def _rel_one(self, path: str) -> str:
        rel = os.path.relpath(path, self.workspace)
        return path if rel.startswith("..") else rel

    def _rel(self, deps: Iterable[str]) -> list[str]:
        return sorted(self._rel_one(d) for d in deps)


def _definition(probe: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a cell run differently (not its deps or timeout)."""
    return (probe.get("family"), probe.get("file"), probe.get("func"), probe.get("param"),
            repr(probe.get("params")), probe.get("env"))


def _imports_sibling(init: str, module: str) -> bool:
    """Whether the package ``__init__.py`` names ``module`` (a file in its folder tree)."""
    if not _under(module, [os.path.dirname(init)]):
        return False
    rel = os.path.relpath(module, os.path.dirname(init))
    first = rel.split(os.sep)[0].removesuffix(".py")
    try:
        with open(init, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return True  # the package itself is gone: every importer breaks
    return re.search(rf"\b{re.escape(first)}\b", text) is not None


def _mtime(path: str | None, default: float) -> float:
    if not path:
        return default
    try:
        return min(os.stat(path).st_mtime, default)
    except OSError:
        return default


def _one_line(err: dict[str, Any]) -> str:
    where = f"{err['file']}:{err['line']}" if err.get("line") else err.get("file", "")
    return f"{where}: {err.get('error')}"


def _stderr() -> Any:
    import sys

    return sys.stderr
