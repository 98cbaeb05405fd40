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
import hashlib
import os
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from laya_tui.core.report_types import (
    CellSpec,
    FileErrorDict,
    ReportDict,
    ResultDict,
    SignalDict,
)
from laya_tui.core.results import make_result
from laya_tui.core.runner import Discovery, Runner
from laya_tui.core.settings import DEFAULT_DEBOUNCE_MS, RunOptions
from laya_tui.watch.changes import (  # noqa: F401 - re-exported: the watcher's vocabulary
    IGNORED_DIRS,
    IGNORED_NAMES,
    ChangeFilter,
    ChangeStreams,
    Roots,
    py_files,
    under,
    watch_roots,
)
from laya_tui.watch.dep_index import DependencyIndex
from laya_tui.watch.record_types import DiagnosticDict, SignalChangeDict
from laya_tui.watch.records import (  # noqa: F401 - re-exported
    AT_FILE_LINE,
    Record,
    diagnostic_of,
    diff_signals,
    error_line,
    new_record,
)
from laya_tui.watch.scheduler import Cause, RerunScheduler

if TYPE_CHECKING:
    from watchfiles import Change

    from laya_tui.report.gates import GateSettings


class Watcher:
    """Watch the workspace and re-run the probes whose inputs changed, in warm workers.

    ``runner``: share a Runner (its warm workers) with the caller, who then owns and
    closes it; or ``runner_factory`` (default ``Runner``) builds one this watcher closes.
    ``initial``: results to start from (skips the first run; the dashboard passes what it
    already ran); else every discovered cell runs once first (``ready`` follows).

    The parts: :class:`~laya_tui.watch.changes.ChangeStreams` (saves in),
    :class:`~laya_tui.watch.dep_index.DependencyIndex` (which cells a change touches),
    :class:`~laya_tui.watch.scheduler.RerunScheduler` (re-runs) and
    :mod:`laya_tui.watch.records` (records out); this class handles a batch of changes.
    """

    def __init__(self, config: RunOptions, runner: Runner | None = None, *,
                 runner_factory: Callable[[RunOptions], Runner] | None = None,
                 on_record: Callable[[Record], None] | None = None,
                 debounce_ms: int = DEFAULT_DEBOUNCE_MS,
                 ignore_paths: Iterable[str] = (),
                 initial: Iterable[ResultDict] | None = None,
                 gate_settings: GateSettings | None = None) -> None:
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
        self.probes: dict[str, CellSpec] = {}
        #: probe id -> latest result (real run or diagnostic); what the report shows
        self.results: dict[str, ResultDict] = {}
        #: discovery errors now standing (``{file, error, line}``)
        self.errors: list[FileErrorDict] = []
        self.errors_seen: list[FileErrorDict] = []
        self._baseline: dict[str, ResultDict] = {}  # last real (non-diagnostic) result
        self.deps = DependencyIndex(self.workspace)
        self._blocked: dict[str, FileErrorDict] = {}  # probe file -> its import error
        self._known_py: set[str] = set()
        #: path -> content digest (None: absent) as of the last batch that touched it
        self._digests: dict[str, str | None] = {}
        self._stop = asyncio.Event()
        self.streams = ChangeStreams(self.filter, self.debounce_ms)
        self.reruns = RerunScheduler(self.runner, lambda: self.probes,
                                     lambda pid: not self._is_blocked(pid), self.deps.of,
                                     self._finish, self._stop, use_cache=config.use_cache)
        self._initial = list(initial) if initial is not None else None
        self._unsubscribe: Callable[[], None] | None = None
        self.first_run_seconds: float | None = None

    # -- public -----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask :meth:`run` to end (safe from a signal handler on the loop)."""
        self._stop.set()

    async def run(self) -> None:
        """Discover, run everything once (unless given ``initial``), then watch until stop."""
        self._unsubscribe = self.runner.subscribe(self.reruns.on_event)
        t0 = time.perf_counter()
        try:
            self._known_py = py_files(self.probe_roots + self.kernel_roots)
            disc = await self._discover()
            self._apply_discovery(disc, trigger=None, changed=set(), first=True)
            self._remember(self._known_py | self.deps.files())
            await self.streams.watch(self._watch_roots())
            if self._initial is not None:
                for r in self._initial:
                    if r.get("id") in self.probes:
                        self._accept(r)
            else:
                for pid in self.probes:
                    if not self._is_blocked(pid):
                        self.reruns.schedule(pid, (None, None))
            await self.reruns.wait_idle()
            self.first_run_seconds = time.perf_counter() - t0
            # the first run may have added dependency folders
            await self.streams.watch(self._watch_roots())
            self._remember(self.deps.files())  # what the first run imported
            self._emit(self._record("ready", None, seconds=round(self.first_run_seconds, 3),
                                    probes=len(self.probes)))
            await self._loop()
        finally:
            await self._shutdown()

    def report(self) -> ReportDict:
        """The current report document (same schema and gates as ``--headless --json``)."""
        from laya_tui.report.outputs import make_report

        results = [self.results[p] for p in self.probes if p in self.results]
        envs = {e.name: e.info() for e in self.config.envs} or None  # --env
        return make_report(results, Discovery([], self.errors, envs=envs),
                           sum(r.get("seconds") or 0 for r in results), self.gate_settings)

    # -- the change loop --------------------------------------------------------------------------
    async def _loop(self) -> None:
        stop = asyncio.ensure_future(self._stop.wait())
        queue = self.streams.queue
        try:
            while not self._stop.is_set():
                get = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    get.cancel()
                    break
                when, changes = get.result()
                while not queue.empty():  # coalesce batches that queued up meanwhile
                    _, more = queue.get_nowait()
                    changes |= more
                await self._handle(changes, when)
        finally:
            stop.cancel()

    async def _handle(self, changes: set[tuple[Change, str]], when: float) -> None:
        changed = self._content_changed(
            {os.path.realpath(p) for _, p in changes if self.filter.accepts(p)})
        if not changed:
            return
        # Invalidation first (applied lazily: each warm worker, the discovery one too, drops
        # the changed modules right before its next command), so a discovery or a run
        # started below never sees stale modules.
        await self.runner.invalidate(changed, recycle=self.deps.native_changed(changed))
        # 1. structure
        paths = self.probe_roots + self.kernel_roots
        py_under_probes = {p for p in changed if p.endswith(".py") and under(p, self.probe_roots)}
        appeared_or_gone = {p for p in changed if p.endswith(".py") and under(p, paths)
                            and os.path.exists(p) != (p in self._known_py)}
        for p in changed:
            if p.endswith(".py") and under(p, paths):
                (self._known_py.add if os.path.exists(p) else self._known_py.discard)(p)
        structural = (py_under_probes or appeared_or_gone or changed & self.deps.discovery
                      or (self._blocked and any(p.endswith(".py") for p in changed)))
        # A probe file edit or a file appearing/going may change the cells: discover first.
        # Otherwise (a kernel a cell's parameters derive from) the affected cells start now
        # and discovery runs beside them; a cell whose definition changed starts over.
        first = bool(py_under_probes or appeared_or_gone or self._blocked)
        cause = sorted(py_under_probes or appeared_or_gone or changed)[0]
        if structural and first:
            self._apply_discovery(await self._discover(), trigger=cause, changed=changed)
        # 2. mapping
        for pid, hit in self.deps.hits(list(self.probes), changed, self.results).items():
            if not self._is_blocked(pid):
                trig = sorted(hit)[0]
                self.reruns.schedule(pid, (trig, _mtime(trig, when)))
        if structural and not first:
            self._apply_discovery(await self._discover(), trigger=cause, changed=changed)
        await self.streams.watch(self._watch_roots())

    def _remember(self, paths: Iterable[str]) -> None:
        """Note the content of files not seen yet, so saving them unchanged re-runs nothing."""
        for path in paths:
            if path not in self._digests:
                self._digests[path] = _digest(path)

    def _content_changed(self, paths: set[str]) -> set[str]:
        """The paths whose content differs from the last batch's (or that were never seen).

        An editor's save often reaches ``awatch`` as two batches (a write, then its close
        or a rename), and a save of unchanged content is no edit: neither re-runs a cell.
        """
        out: set[str] = set()
        for path in paths:
            digest = _digest(path)
            if path in self._digests and self._digests[path] == digest:
                continue
            self._digests[path] = digest
            out.add(path)
        return out

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
        old_blocked = self._blocked
        self._blocked = errors
        self.errors = list(disc.errors)
        removed = [self.probes[pid] for pid in self.probes if pid not in fresh]
        added = [pid for pid in fresh if pid not in self.probes]
        redefined = [pid for pid, p in fresh.items()
                     if pid in self.probes and _definition(p) != _definition(self.probes[pid])]
        self.probes = fresh
        self.deps.discovered(disc.probes, fresh)
        for p in removed:
            self._forget(p, trigger)
        if not first:
            for pid in added + redefined:
                if not self._is_blocked(pid):
                    self.reruns.schedule(pid, (trigger, _mtime(trigger, time.time())))
        # Diagnostics: only when the error is new or its file was just saved.
        for err in disc.errors:
            if err.get("file") and os.path.realpath(err["file"]) in errors:
                continue
            if first or err not in self.errors_seen:
                self._emit(self._record("diagnostic", None, trigger=trigger, status="failed",
                                        reason=error_line(err),
                                        diagnostic={"file": err.get("file"),
                                                    "line": err.get("line"),
                                                    "message": err.get("error")}))
        self.errors_seen = list(disc.errors)
        for file, err in errors.items():
            if old_blocked.get(file) == err and file not in changed:
                continue
            cells = [pid for pid, p in fresh.items() if p["file"] == file]
            diag: DiagnosticDict = {"file": file, "line": err.get("line"),
                                    "message": err.get("error")}
            m = AT_FILE_LINE.search(err.get("error") or "")
            if m:
                diag.update({"file": m.group("file"), "line": int(m.group("line"))})
            if not cells:
                self._emit(self._record("diagnostic", None, trigger=trigger, diagnostic=diag,
                                        status="failed", reason=error_line(err)))
            for pid in cells:
                self.reruns.cancel(pid)
                self._diagnose(pid, err, diag, trigger)

    def _forget(self, probe: CellSpec, trigger: str | None) -> None:
        pid = probe["id"]
        self.reruns.cancel(pid)
        before = self.results.pop(pid, None)
        base = self._baseline.pop(pid, None) or before
        self.deps.forget(pid)
        self._emit(self._record("removed", pid, family=probe["family"], trigger=trigger,
                                previous_status=before.get("status") if before else None,
                                gone=list(base.get("signals", [])) if base else []))

    def _diagnose(self, pid: str, err: FileErrorDict, diag: DiagnosticDict,
                  trigger: str | None) -> None:
        p = self.probes[pid]
        before = self.results.get(pid)
        result = make_result(p, "failed", error_line(err), seconds=0.0,
                             deps=self.deps.relative_all(self.deps.of(pid)), signals=[],
                             error={"type": "ProbeFileError", "message": err["error"],
                                    "site": {"file": diag["file"] or "", "line": diag["line"]}})
        self.results[pid] = result
        self._emit(self._record("result", pid, family=p["family"], trigger=trigger,
                                status="failed", reason=result["reason"], diagnostic=diag,
                                previous_status=before.get("status") if before else None,
                                result=result))

    def _is_blocked(self, pid: str) -> bool:
        p = self.probes.get(pid)
        return p is None or p["file"] in self._blocked

    # -- results ----------------------------------------------------------------------------------
    def _accept(self, result: ResultDict) -> None:
        pid = result["id"]
        self.results[pid] = result
        if diagnostic_of(result) is None:
            self._baseline[pid] = result
        self.deps.ran(self.probes[pid], result)

    def _finish(self, pid: str, cause: Cause, result: ResultDict) -> None:
        if pid not in self.probes:
            return
        trigger, changed_at = cause
        before = self.results.get(pid)
        base = self._baseline.get(pid)
        self._accept(result)
        diag = diagnostic_of(result)
        if diag is not None:
            new: list[SignalDict] = []
            gone: list[SignalDict] = []
            changed: list[SignalChangeDict] = []
        else:
            new, gone, changed = diff_signals(base.get("signals", []) if base else [],
                                              result.get("signals", []))
        self._emit(self._record(
            "result", pid, family=result.get("family"), trigger=trigger,
            seconds=result.get("seconds"), status=result.get("status"),
            reason=result.get("reason"), cached=bool(result.get("cached")),
            previous_status=before.get("status") if before else None,
            latency=round(time.time() - changed_at, 3) if changed_at else None,
            new=new, gone=gone, changed=changed, diagnostic=diag, result=result))

    def _record(self, kind: str, pid: str | None, *, trigger: str | None = None,
                **fields: object) -> Record:
        return new_record(kind, pid, self.deps.relative(trigger) if trigger else None, **fields)

    def _emit(self, record: Record) -> None:
        try:
            self.on_record(record)
        except Exception:  # noqa: BLE001 - a listener bug must not end the watcher
            import traceback

            traceback.print_exc()

    # -- watching ---------------------------------------------------------------------------------
    def _watch_roots(self) -> Roots:
        """(recursive roots, single-folder roots): probe/kernel paths, then dependency folders."""
        return watch_roots(self.probe_roots + self.kernel_roots, self.deps.files(), self.filter)

    async def _shutdown(self) -> None:
        await self.reruns.shutdown()
        await self.streams.close()
        await self.runner.close_discovery()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._owns_runner:
            self.runner.kill_all()
            await self.runner.close()


def _definition(probe: CellSpec) -> tuple[object, ...]:
    """What makes a cell run differently (not its deps or timeout)."""
    return (probe.get("family"), probe.get("file"), probe.get("func"), probe.get("param"),
            repr(probe.get("params")), probe.get("env"))


def _digest(path: str) -> str | None:
    """The file's content digest; None when absent, a folder's name for a folder."""
    if os.path.isdir(path):
        return "<dir>"
    try:
        with open(path, "rb") as fh:
            return hashlib.blake2b(fh.read(), digest_size=16).hexdigest()
    except OSError:
        return None


def _mtime(path: str | None, default: float) -> float:
    if not path:
        return default
    try:
        return min(os.stat(path).st_mtime, default)
    except OSError:
        return default
