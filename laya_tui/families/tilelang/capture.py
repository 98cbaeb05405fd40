"""Run a kernel file the way ``python file.py`` does and record every kernel it builds
(worker side; TileLang and torch imported inside the functions).

The file is imported afresh under a private name and its own entry points run: the
``if __name__ == "__main__":`` block (or ``main()`` without one), then its ``test_*``
functions, with ``sys.argv = [file]`` (so argparse gives its defaults). TileLang's compile
entry points are intercepted while they run (``tilelang.compile`` and what every
``@tilelang.jit`` call goes through, ``JITKernel(...)``, ``tilelang.lower``, ``@autotune``):
each kernel the file builds is recorded at that moment, with its traced PrimFunc, its
arguments (each with its source: ``main() at line 129``, ``argparse default --M (...)``),
``out_idx``, target, execution backend and pass configs, and the file gets a stand-in
(:mod:`laya_tui.families.tilelang.capture_stubs`) instead of a compiled kernel: nothing is
compiled and nothing runs on a device. The stand-in lets the file reach its own check,
which is recorded (the tensors it calls the kernel with, the reference it compares with).

On a machine without a GPU, ``.cuda()`` tensors are built on the CPU, so a CPU machine
captures what a GPU run would build, and the run stops as soon as every kernel of the file
is built. A run that calls something only a GPU answers (``driver.get_num_sms()``) is
reported as needing a GPU. Each file's capture is bounded (:data:`CAPTURE_SECONDS`, the
``LAYA_TUI_TILELANG_CAPTURE_S`` environment variable) and kept per process by the file's
size and mtime.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import inspect
import os
import signal
import sys
import tempfile
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from laya_tui.families.tilelang.capture_stubs import (
    Check,
    KernelCallRecord,
    StopCapture,
    StubKernel,
    describe,
)

CAPTURE_SECONDS = float(os.environ.get("LAYA_TUI_TILELANG_CAPTURE_S", "60"))
#: on a machine without a GPU: how long the file may go on, once every kernel is built,
#: to reach its own check (``LAYA_TUI_TILELANG_CHECK_S``; 0 stops right at the last build)
CHECK_SECONDS = float(os.environ.get("LAYA_TUI_TILELANG_CHECK_S", "5"))
#: what a file's run raising on a machine without a GPU says when the GPU is the reason
_GPU_WORDS = ("torch not compiled with cuda", "no cuda gpus are available", "cuda driver",
              "cudagetdevicecount", "nvidia driver", "failed to get device properties",
              "cuinit", "no cuda-capable device", "libcuda", "cuda is not available",
              "found no nvidia", "device-side", "cuda error")
_GPU_FRAMES = (os.sep + os.path.join("torch", "cuda") + os.sep, "carver" + os.sep + "arch",
               os.sep + "cuda_driver.py")
AUTOTUNE_SOURCE = "first @autotune config (the file tunes it; TileLang picks on a GPU)"


@dataclass
class Build:
    """One kernel the file built, as it built it."""

    obj: str | None  # the module attribute of the kernel (jit function, maker, PrimFunc)
    kind: str  # "jit" | "maker" | "primfunc"
    func: Any  # the traced PrimFunc
    args: dict[str, Any]  # the arguments, JSON-able (tensors as {"tensor": shape, "dtype"})
    sources: dict[str, str]
    out_idx: Any
    target: Any
    execution_backend: str | None
    pass_configs: dict[str, Any]
    compile_flags: Any
    site: str | None  # "main() at line 129"
    entry: str  # the entry point that built it
    raw: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})  # the call's own values
    tuned: dict[str, Any] | None = None  # {"configs": n, "config": {...}}
    call: KernelCallRecord = field(default_factory=KernelCallRecord)
    index: int = 0  # the how-manieth build of the file


@dataclass
class TraceFailure:
    """A kernel whose tracing raised while the file ran (a finding, or a GPU-only call)."""

    obj: str
    args: dict[str, Any]
    sources: dict[str, str]
    raw: tuple[tuple[Any, ...], dict[str, Any]]
    site: str | None
    error: BaseException
    gpu: str | None  # why it needs a GPU, when that is the reason


@dataclass
class Capture:
    """Everything one run of a file's entry points built."""

    file: str
    builds: list[Build] = field(default_factory=list)
    failures: dict[str, TraceFailure] = field(default_factory=dict)
    entries: list[tuple[str, str]] = field(default_factory=list)  # (entry, how it ended)
    gpu_needed: str | None = None  # the run stopped at a GPU-only call (and where)
    error: str | None = None  # the file did not import
    seconds: float = 0.0
    module: Any = None
    faked: int = 0  # heavy ops the CPU stand-in answered with zeros (their checks unused)

    def builds_of(self, obj: str | None) -> list[Build]:
        return [b for b in self.builds if b.obj == obj]

    def pick(self, obj: str | None, dtype: str | None) -> Build | None:
        """The first build of ``obj`` whose kernel dtype is ``dtype``, else its first."""
        builds = self.builds_of(obj)
        for b in builds:
            if dtype and first_tensor_dtype(b.func) == dtype:
                return b
        return builds[0] if builds else None

    def how_it_ended(self) -> str:
        """``the __main__ block raised ValueError at line 12: ...`` (for messages)."""
        return "; ".join(f"{e} {how}" for e, how in self.entries) or "no entry point ran"


def first_tensor_dtype(func: Any) -> str | None:
    """The dtype of a PrimFunc's first buffer parameter."""
    try:
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None:
                return str(buf.dtype)
    except Exception:  # noqa: BLE001
        return None
    return None


# -- the cache -------------------------------------------------------------------------------

#: the captures this process holds (the last few files: a capture keeps the file's
#: module and the tensors it called its kernels with; a run takes a file's cells in a row)
_CACHE: OrderedDict[str, tuple[tuple[int, int, str], Capture]] = OrderedDict()
_KEEP = 4  # 1 where a GPU is: its tensors live in device memory


def _stamp(path: str) -> tuple[int, int, str]:
    st = os.stat(path)
    with open(path, "rb") as f:
        digest = hashlib.sha1(f.read()).hexdigest()
    return st.st_size, st.st_mtime_ns, digest


def capture_file(path: str, kernels: set[str] | None = None,
                 seconds: float | None = None) -> Capture:
    """The capture of ``path`` (run once per process and file content)."""
    path = os.path.realpath(path)
    stamp = _stamp(path)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == stamp:
        _CACHE.move_to_end(path)
        return hit[1]
    _CACHE.pop(path, None)
    keep = 1 if _has_gpu() else _KEEP
    while len(_CACHE) >= keep:
        _CACHE.popitem(last=False)
    if keep == 1:
        _release_device_memory()
    cap = _run_capture(path, kernels or set(), CAPTURE_SECONDS if seconds is None else seconds)
    _CACHE[path] = (stamp, cap)
    return cap


# -- running the file ------------------------------------------------------------------------


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def _release_device_memory() -> None:
    import gc

    gc.collect()
    try:
        import torch

        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass


def gpu_reason(exc: BaseException, path: str) -> str | None:
    """Why ``exc`` means the file needs a GPU here (None when it does not, or one is here)."""
    if _has_gpu():
        return None
    text = f"{type(exc).__name__}: {exc}".lower()
    frames = traceback.extract_tb(exc.__traceback__)
    if not (any(w in text for w in _GPU_WORDS)
            or any(any(g in f.filename for g in _GPU_FRAMES) for f in frames)):
        return None
    user = [f for f in frames if os.path.realpath(f.filename) == path]
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    if user:
        f = user[-1]
        where = f"{f.name}() at line {f.lineno}" if f.name != "<module>" else \
            f"line {f.lineno}"
        return f"{where} calls `{(f.line or '').strip()[:120]}`, which needs a GPU ({first})"
    return f"the file's run needs a GPU ({first})"


def _entry_points(tree: ast.Module, path: str, mod: Any) -> list[tuple[str, Callable[[], Any]]]:
    """The file's own ways to run: the __main__ block (or main()), then test_* functions."""
    from laya_tui.families.tilelang.static_calls import MAIN_BLOCK, main_block

    out: list[tuple[str, Callable[[], Any]]] = []
    block = main_block(tree)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def no_required(fn: ast.FunctionDef) -> bool:
        a = fn.args
        return len(a.posonlyargs) + len(a.args) == len(a.defaults) and all(
            d is not None for d in a.kw_defaults)

    if block is not None:
        code = compile(ast.Module(body=block.body, type_ignores=[]), path, "exec")
        out.append((MAIN_BLOCK, lambda: exec(code, mod.__dict__)))  # noqa: S102
    elif "main" in funcs and no_required(funcs["main"]):
        out.append(("main()", lambda: mod.main()))
    for name, fn in funcs.items():
        if name.startswith("test") and no_required(fn):
            out.append((f"{name}()", _calling(mod, name)))
    return out


def _calling(mod: Any, name: str) -> Callable[[], Any]:
    return lambda: getattr(mod, name)()


def _run_capture(path: str, kernels: set[str], budget: float) -> Capture:
    from laya_tui.families.tilelang.capture_hooks import Recorder

    t0 = time.perf_counter()
    cap = Capture(file=path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError) as exc:
        cap.error = f"{type(exc).__name__}: {exc}"
        return cap
    gpu = _has_gpu()
    rec = Recorder(path, cap, kernels, stop_when_done=not gpu)
    deadline = t0 + budget
    with rec.installed(cuda_on_cpu=not gpu), _argv(path), _deadline(deadline):
        try:
            mod = cap.module = rec.load()
        except StopCapture as stop:
            cap.error = f"importing the file took too long ({stop})"
            mod = None
        except BaseException as exc:  # noqa: BLE001 - the file's own import failing
            if isinstance(exc, KeyboardInterrupt):
                raise
            cap.gpu_needed = gpu_reason(exc, path)
            cap.error = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
            mod = None
        if mod is not None:
            if cap.builds:
                cap.entries.append(("the import", "ran"))
            rec.wrap_makers(mod, tree)
            for entry, run in _entry_points(tree, path, mod):
                if rec.done() or time.perf_counter() > deadline:
                    break
                rec.entry = entry
                cap.entries.append((entry, _run_entry(run, path, cap)))
    cap.seconds = time.perf_counter() - t0
    cap.faked = rec.mode_state.faked
    return cap


def _run_entry(run: Callable[[], Any], path: str, cap: Capture) -> str:
    try:
        run()
    except StopCapture as stop:
        return f"stopped ({stop})"
    except SystemExit as exc:
        return f"exited ({exc.code})"
    except BaseException as exc:  # noqa: BLE001 - the file's own failure ends its run
        if isinstance(exc, KeyboardInterrupt):
            raise
        reason = gpu_reason(exc, path)
        if reason and cap.gpu_needed is None:
            cap.gpu_needed = reason
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if os.path.realpath(f.filename) == path]
        where = f" at line {frames[-1].lineno}" if frames else ""
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return f"raised {type(exc).__name__}{where}: {first}"
    return "ran"


@contextlib.contextmanager
def _argv(path: str) -> Iterator[None]:
    """``sys.argv = [file]`` (argparse gives its defaults), no stdin (the worker's stdin
    is its command channel: an ``input()`` must not read it), and a scratch working
    folder for whatever the file writes."""
    saved, cwd, stdin = sys.argv, os.getcwd(), sys.stdin
    sys.argv = [path]
    scratch = tempfile.TemporaryDirectory(prefix="laya-capture-")
    with open(os.devnull, encoding="utf-8") as null:
        sys.stdin = null
        try:
            os.chdir(scratch.name)
            yield
        finally:
            sys.argv, sys.stdin = saved, stdin
            with contextlib.suppress(OSError):
                os.chdir(cwd)
            scratch.cleanup()


@contextlib.contextmanager
def _deadline(when: float) -> Iterator[None]:
    """Raise :class:`StopCapture` in the main thread once ``when`` has passed."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise StopCapture(_ALARM[0])

    _ALARM[0] = f"the capture's {when - time.perf_counter():.0f} s are up"
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(0.01, when - time.perf_counter()))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_ALARM = ["the capture's time is up"]


def shorten_deadline(seconds: float, reason: str) -> bool:
    """Bring the capture's deadline to ``seconds`` from now (if sooner); False when no
    timer runs here (not the main thread)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return False
    remaining = signal.getitimer(signal.ITIMER_REAL)[0]
    if remaining == 0 or remaining > seconds:
        _ALARM[0] = reason
        signal.setitimer(signal.ITIMER_REAL, max(0.01, seconds))
    return True


def bound_arguments(sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> tuple[dict[str, Any], set[str]]:
    """(every parameter's value, the names the call gave) for a kernel call; keywords the
    signature does not name (the eager style's ``T.const`` shapes: ``M=1024``) kept too."""
    params = sig.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    known = {k: v for k, v in kwargs.items() if takes_any or k in params}
    extra = {k: v for k, v in kwargs.items() if k not in known}
    try:
        bound = sig.bind_partial(*args, **known)
    except TypeError:
        return dict(kwargs), set(kwargs)
    values = dict(bound.arguments)
    for name, p in params.items():
        if name not in values and p.default is not inspect.Parameter.empty:
            values[name] = p.default
        if p.kind is inspect.Parameter.VAR_KEYWORD and name in values:
            values.update(values.pop(name))
    given = (set(bound.arguments) | set(extra)) - {
        n for n, p in params.items() if p.kind is inspect.Parameter.VAR_KEYWORD}
    given |= set(known) if takes_any else set()
    values.update(extra)
    return values, given


def record_check(registry: dict[int, tuple[KernelCallRecord, int, Any]], how: str,
                 args: tuple[Any, ...], kwargs: dict[str, Any], path: str,
                 mode: Any = None) -> Any:
    """A comparison the file makes: recorded when one side is a kernel output (the file's
    own check), else ``NotImplemented`` (torch answers)."""
    a = kwargs.get("actual", args[0] if args else None)
    b = kwargs.get("expected", args[1] if len(args) > 1 else None)
    for mine, other in ((a, b), (b, a)):
        hit = registry.get(id(mine))
        if hit is None or hit[2] is not mine:
            continue
        rec, idx, _ = hit
        rtol = kwargs.get("rtol", args[2] if len(args) > 2 else None)
        atol = kwargs.get("atol", args[3] if len(args) > 3 else None)
        line = next((f.f_lineno for f in _frames() if os.path.realpath(
            f.f_code.co_filename) == path), None)
        rec.checks.append(Check(output=idx if idx >= 0 else -1 - idx, expected=other,
                                rtol=rtol, atol=atol, line=line, how=how, in_place=idx < 0,
                                trusted=not getattr(mode, "faked", 0)))
        return True if how == "torch.allclose" else None
    return NotImplemented


def _frames() -> Iterator[Any]:
    f: Any = sys._getframe(1)
    while f is not None:
        yield f
        f = f.f_back


def _module_level(path: str, line: int) -> str:
    from laya_tui.families.tilelang.static_calls import module_level_label

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return module_level_label(ast.parse(f.read()), line)
    except (OSError, SyntaxError):
        return "the file's top level"


def call_site(path: str) -> tuple[str | None, int | None]:
    """(``main() at line 129``, 129) of the innermost frame of ``path`` calling in."""
    for f in _frames():
        if os.path.realpath(f.f_code.co_filename) == path:
            name = f.f_code.co_name
            where = _module_level(path, f.f_lineno) if name == "<module>" else f"{name}()"
            return f"{where} at line {f.f_lineno}", f.f_lineno
    return None, None


__all__ = ["AUTOTUNE_SOURCE", "Build", "Capture", "TraceFailure", "bound_arguments",
           "call_site", "capture_file", "describe", "first_tensor_dtype", "gpu_reason",
           "record_check", "StubKernel"]
