"""Probe worker: a subprocess that imports probe files and runs probes (docs/architecture.md,
'Processes and the one rule', 'Worker protocol').

Protocol. Commands arrive as JSON lines on stdin; events leave as JSON lines on the signal
fd (``--signal-fd``), never on stdout: the libraries print freely, and while a probe runs
the worker's fds 1 and 2 point at that probe's log file, which the runner reads back.

The commands (``op``) and events (``type``) are named once in
:mod:`laya_tui.core.protocol` (:class:`~laya_tui.core.protocol.Op`,
:class:`~laya_tui.core.protocol.Reply`).

Signals travel in batches, ``{"type": "signals", "probe": ID, "signals": [...]}``: the first
:data:`BURST` signals of every :data:`FLUSH_S` window are written at once (a probe that
reports now and then, then crashes, loses nothing), past that they are buffered and written
in chunks of up to :data:`CHUNK` bytes, at the latest :data:`FLUSH_S` after the first one
was buffered, so the stream stays live. Every other event flushes the buffer first.

When stdin reaches EOF without an ``exit`` (the runner died, even by SIGKILL) the worker
kills its whole process group, compiler subprocesses included.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback
from types import ModuleType
from typing import TYPE_CHECKING, cast

from laya_tui.core.jsonfast import compact_encoder
from laya_tui.core.protocol import Command, Op, Reply, RunCommand, WorkerEvent
from laya_tui.core.report_types import CellSpec, ErrorDict, FileErrorDict, SignalDict, SiteDict
from laya_tui.families.rbln_status import guard_autoload
from laya_tui.worker.shadow import keep_behind_installed

if TYPE_CHECKING:
    from laya_tui.core.open_types import Kwargs, Params


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when its parent dies (belt to the stdin braces)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


#: Signals of a window written one by one before buffering starts.
BURST = 32
#: Longest time a buffered signal waits before it is written (seconds).
FLUSH_S = 0.05
#: A buffer this large (bytes of JSON) is written at once.
CHUNK = 256 * 1024
#: The start of a batch line, written by hand so the signals are encoded only once.
_BATCH_HEAD = '{"type": "' + Reply.SIGNALS + '", "probe": '


class Worker:
    """One warm worker: runs commands sequentially on its main thread."""

    def __init__(self, signal_fd: int, workspace: str) -> None:
        from laya_tui.worker.deps import DependencyTracker

        self.fd = signal_fd
        self.workspace = os.path.realpath(workspace)
        self.lock = threading.Lock()
        self._buf: list[str] = []  # encoded signals of ``_buf_probe`` not yet written
        self._buf_probe: str | None = None
        self._buf_bytes = 0
        self._window_start = 0.0
        self._window_n = 0
        self._buffered_at = 0.0
        self._wake = threading.Event()
        threading.Thread(target=self._flusher, daemon=True, name="laya-signal-flush").start()
        self.commands: queue.Queue[Command | None] = queue.Queue()
        roots = [self.workspace] + [os.path.realpath(p) for p in _extra_roots()]
        self.tracker = DependencyTracker(roots)
        self.tracker.install()
        self.module_deps: dict[str, set[str]] = {}
        keep_behind_installed(self.workspace)

    # -- output ------------------------------------------------------------------------
    def emit(self, event: WorkerEvent) -> None:
        """Send one event; ``signal`` events are batched (see the module docstring)."""
        if event["type"] == Reply.SIGNAL:
            self._emit_signal(str(event.get("probe")), event.get("signal"))
            return
        data = (_encode(event) + "\n").encode()
        with self.lock:
            self._flush_locked()
            self._write(data)

    def _emit_signal(self, probe: str, sig: SignalDict | None) -> None:
        text = _encode(sig)
        with self.lock:
            if self._buf and probe != self._buf_probe:
                self._flush_locked()
            now = time.monotonic()
            if now - self._window_start > FLUSH_S:
                self._window_start, self._window_n = now, 0
            self._window_n += 1
            if not self._buf:
                self._buffered_at = now
            self._buf.append(text)
            self._buf_probe = probe
            self._buf_bytes += len(text)
            if self._window_n <= BURST or self._buf_bytes >= CHUNK:
                self._flush_locked()
            elif len(self._buf) == 1:
                self._wake.set()

    def flush(self) -> None:
        """Write the buffered signals now."""
        with self.lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._buf:
            return
        line = (_BATCH_HEAD + _encode(self._buf_probe) + ', "signals": ['
                + ", ".join(self._buf) + "]}\n")
        self._buf, self._buf_bytes = [], 0
        self._write(line.encode())

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def _flusher(self) -> None:
        """Background thread: writes a buffer at the latest FLUSH_S after it began."""
        while True:
            self._wake.wait()
            self._wake.clear()
            while True:
                with self.lock:
                    if not self._buf:
                        break
                    due = self._buffered_at + FLUSH_S - time.monotonic()
                    if due <= 0:
                        self._flush_locked()
                        break
                time.sleep(due)

    # -- command loop ------------------------------------------------------------------
    def read_commands(self) -> None:
        """Reader thread: stdin lines into the queue; EOF means the runner is gone."""
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            try:
                cmd = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(cmd, dict) or not isinstance(cmd.get("op"), str):
                continue  # not a command (the runner writes only commands)
            self.commands.put(cast(Command, cmd))  # an object with an "op": a command
            if cmd.get("op") == Op.EXIT:
                return
        # The runner vanished without saying goodbye: take the whole group down.
        try:
            os.killpg(os.getpgrp(), signal.SIGKILL)
        finally:
            os._exit(1)

    def serve(self) -> None:
        """Run commands until ``exit``."""
        threading.Thread(target=self.read_commands, daemon=True).start()
        self.emit({"type": Reply.READY, "pid": os.getpid()})
        while True:
            cmd = self.commands.get()
            if cmd is None or cmd["op"] == Op.EXIT:
                return
            if cmd["op"] == Op.DISCOVER:
                self.discover(cmd.get("paths", []))
            elif cmd["op"] == Op.RUN:
                self.run(cmd)
            elif cmd["op"] == Op.INVALIDATE:
                dropped = self.tracker.invalidate(set(cmd.get("files", [])))
                for f in cmd.get("files", []):
                    self.module_deps.pop(os.path.realpath(f), None)
                self.emit({"type": Reply.INVALIDATED, "modules": dropped})

    # -- discovery -----------------------------------------------------------------------
    def load(self, path: str) -> ModuleType:
        """Import a probe file, recording the workspace files its import pulled in."""
        from laya_tui.worker.loader import import_probe_file, module_name_for

        real = os.path.realpath(path)
        fresh = module_name_for(real, self.workspace) not in sys.modules
        with self.tracker.recording() as pulled:
            mod = import_probe_file(real, self.workspace)
        if fresh or real not in self.module_deps:
            self.module_deps[real] = (set(pulled) | {real}) - {""}
            self.tracker.closure[real] = set(pulled) - {real}
        self.tracker.add(real)
        for dep in self.module_deps[real]:
            self.tracker.add(dep)
        return mod

    def discover(self, paths: list[str]) -> None:
        """Import every probe file and report its cells (ids, families, deps) or its error."""
        from laya_tui.worker.loader import ProbeFileError, probe_files, probes_in

        probes: list[CellSpec] = []
        errors: list[FileErrorDict] = []
        seen: dict[str, str] = {}  # cell id -> the probe file that defined it first
        twice: dict[str, tuple[str, int]] = {}  # a later file -> (the first file, cells)
        missing = [p for p in paths if not os.path.exists(p)]
        for p in missing:
            errors.append({"file": p, "error": "probe path does not exist", "line": None})
        for path in probe_files([p for p in paths if os.path.exists(p)]):
            try:
                with self.tracker.recording():
                    mod = self.load(path)
                for spec in probes_in(mod):
                    for probe_id, prm in spec.cells():
                        first = seen.setdefault(probe_id, os.path.realpath(path))
                        if first != os.path.realpath(path):  # ids name one cell each
                            was = twice.get(path, (first, 0))
                            twice[path] = (was[0], was[1] + 1)
                            continue
                        deps = set(self.module_deps.get(os.path.realpath(path), set()))
                        if prm is not None:
                            deps |= {os.path.realpath(d) for d in prm.deps}
                        probes.append({
                            "id": probe_id,
                            "family": spec.family,
                            "file": os.path.realpath(path),
                            "func": spec.func.__name__,
                            "param": prm.id if prm is not None else None,
                            "params": _jsonable(prm.kwargs) if prm is not None else {},
                            "timeout": spec.timeout,
                            "deps": sorted(deps),
                        })
            except ProbeFileError as exc:
                errors.append({"file": exc.path, "error": exc.message, "line": exc.line})
            except Exception as exc:  # a params() callable that raised
                errors.append({"file": path, "error": f"{type(exc).__name__}: {exc}",
                               "line": None})
        for path, (first, n) in twice.items():
            errors.append({"file": path, "line": None, "error": (
                f"defines {n} cell id(s) that {first} defines too: pass one of the two "
                "files (an id names one cell)")})
        self.emit({"type": Reply.DISCOVERED, "probes": probes, "errors": errors})

    # -- running -------------------------------------------------------------------------
    def run(self, cmd: RunCommand) -> None:
        """Run one probe cell with fds 1/2 redirected to its log file."""
        from laya_tui.api import Context, Failed, Skipped, Unexamined
        from laya_tui.families.torch_trace_capture import cell_trace
        from laya_tui.worker.loader import ProbeFileError, probes_in

        probe_id = cmd["id"]
        log_path = cmd.get("log") or os.devnull
        self.emit({"type": Reply.STARTED, "id": probe_id, "pid": os.getpid()})
        t0 = time.perf_counter()
        status, reason = "ok", None
        error: ErrorDict | None = None
        with _redirect_fds(log_path), self.tracker.recording() as deps:
            try:
                mod = self.load(cmd["file"])
                spec = next((s for s in probes_in(mod) if s.func.__name__ == cmd["func"]), None)
                if spec is None:
                    raise LookupError(f"probe function {cmd['func']!r} is gone from {cmd['file']}")
                prm = None
                if cmd.get("param") is not None:
                    cell = cmd.get("cell") or probe_id  # --env: the id without its @env
                    prm = next((p for i, p in spec.cells() if p is not None
                                and p.id == cmd["param"] and i == cell), None)
                    if prm is None:
                        raise LookupError(f"cell {probe_id} is no longer produced by its params")
                    for d in prm.deps:
                        self.tracker.add(d)
                ctx = Context(probe_id, spec.family, self.emit,
                              params=prm.kwargs if prm else {}, add_dep=self.tracker.add,
                              on_step=lambda name: self.emit(
                                  {"type": Reply.STEP, "probe": probe_id, "step": name}))
                with cell_trace(ctx):  # explain/aoti cells: their own TORCH_TRACE slice
                    spec.func(ctx, **(prm.kwargs if prm else {}))
                if ctx.failures:
                    status, reason = "failed", ctx.failures[0]
            except Skipped as exc:
                status, reason = "skipped", str(exc)
            except Failed as exc:
                status, reason = "failed", str(exc)
            except Unexamined as exc:
                status, reason = "error", str(exc)
            except ProbeFileError as exc:
                status, reason = "failed", exc.one_line()
                error = {"type": "ProbeFileError", "message": exc.message,
                         "site": {"file": exc.path, "line": exc.line}}
            except BaseException as exc:  # noqa: BLE001 - a probe bug is a result, not a crash
                if isinstance(exc, KeyboardInterrupt):
                    raise
                status = "failed"
                reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
                error = {"type": type(exc).__name__, "message": str(exc)[:4000],
                         "traceback": "".join(traceback.format_exception(exc))[-8000:],
                         "site": _user_site(exc, self.workspace)}
                if isinstance(exc, SyntaxError) and exc.filename:  # a module saved mid-edit
                    where = os.path.realpath(exc.filename)
                    error["site"] = {"file": where, "line": exc.lineno, "func": None}
                    reason = f"SyntaxError: {exc.msg} at {where}:{exc.lineno}"
                traceback.print_exc()
        self.emit({"type": Reply.FINISHED, "id": probe_id, "status": status, "reason": reason,
                   "seconds": round(time.perf_counter() - t0, 6), "deps": sorted(deps),
                   "error": error})


def _extra_roots() -> list[str]:
    raw = os.environ.get("LAYA_TUI_OPTIONS")
    if not raw:
        return []
    opts = json.loads(raw)
    return [p for key in ("probes", "kernels") for p in opts.get(key, []) or []]


def _jsonable(value: Kwargs) -> Params:
    """A cell's keyword arguments as its report entry's params: what JSON makes of them."""
    return cast("Params", json.loads(json.dumps(value, default=_json_default)))


def _json_default(obj: object) -> object:
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if hasattr(obj, "item") and callable(obj.item):
        try:
            return obj.item()
        except (TypeError, ValueError, RuntimeError):
            pass
    return repr(obj)


# one encoder, not one per event; strict: a NaN/inf value arrives as null + "nonfinite"
_encode = compact_encoder(_json_default, strict=True)


def _user_site(exc: BaseException, workspace: str) -> SiteDict | None:
    """The innermost traceback frame inside the workspace (the user's code)."""
    site: SiteDict | None = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = os.path.realpath(frame.filename)
        if path.startswith(workspace + os.sep) and os.sep + ".venv" + os.sep not in path:
            site = {"file": path, "line": frame.lineno, "func": frame.name}
    return site


class _redirect_fds:
    """Point fds 1 and 2 at ``path`` for the duration (C-level output included)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = (os.dup(1), os.dup(2))
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)

    def __exit__(self, *exc: object) -> None:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        os.close(self.saved[0])
        os.close(self.saved[1])


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m laya_tui.worker --signal-fd N --workspace DIR``."""
    ap = argparse.ArgumentParser(prog="laya_tui.worker")
    ap.add_argument("--signal-fd", type=int, required=True)
    ap.add_argument("--workspace", required=True)
    args = ap.parse_args(argv)
    _die_with_parent()
    os.environ["LAYA_SIGNAL_FD"] = str(args.signal_fd)
    guard_autoload()
    faulthandler.enable(file=sys.stderr, all_threads=True)
    Worker(args.signal_fd, args.workspace).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
