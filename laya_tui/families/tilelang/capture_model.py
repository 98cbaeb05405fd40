"""What a kernel file's capture records (:class:`Capture`, :class:`Build`,
:class:`TraceFailure`) and the helpers both its runner (:mod:`laya_tui.families.tilelang.capture`)
and its hooks (``capture_hooks``) use: the bounds, the deadline, bound arguments and where in
the file a call was made, the file's own checks, and whether an exception means a GPU is
needed. Worker side; TileLang and torch imported inside the functions.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, NamedTuple

from laya_tui.families.tilelang.capture_stubs import (
    Check,
    KernelCallRecord,
    ModeState,
    StopCapture,
)
from laya_tui.families.tilelang.cell_state import has_gpu
from laya_tui.families.tilelang.records import Globals, KernelArgs, Kwargs, PassConfigs, TunedDict

if TYPE_CHECKING:
    from laya_tui.families.tilelang.capture_types import (
        Described,
        OutIdx,
        Registry,
        TirCall,
        TracedPrimFunc,
    )

#: The file's own run may use this much CPU time (``LAYA_TUI_TILELANG_CAPTURE_S``): the
#: process's CPU (``ITIMER_PROF``: user + system time of all its threads, TileLang's compile
#: threads included, compiler child processes not), which the machine's load does not
#: shorten as it shortens wall time ...
CAPTURE_SECONDS = float(os.environ.get("LAYA_TUI_TILELANG_CAPTURE_S", "60"))
#: ... under a wall-time ceiling this many times that, whatever the load (a run that
#: sleeps or waits uses no CPU).
CAPTURE_WALL_FACTOR = 5.0
#: How a capture cut short by its budget starts its reason (see :func:`budget_stop`).
BUDGET_STOPPED = "the file's own run was stopped after"


#: on a machine without a GPU: how long the file may go on, once every kernel is built,
#: to reach its own check (``LAYA_TUI_TILELANG_CHECK_S``; 0 stops right at the last build)
CHECK_SECONDS = float(os.environ.get("LAYA_TUI_TILELANG_CHECK_S", "5"))


#: what a file's run raising on a machine without a GPU says when the GPU is the reason
_GPU_WORDS = ("torch not compiled with cuda", "no cuda gpus are available", "cuda driver",
              "cudagetdevicecount", "nvidia driver", "failed to get device properties",
              "cuinit", "no cuda-capable device", "libcuda", "cuda is not available",
              "found no nvidia", "device-side", "cuda error",
              "0 active drivers",  # triton without a GPU ("There should only be one.")
              "cuda_home environment variable is not set")  # a CUDA extension built here


_GPU_FRAMES = (os.sep + os.path.join("torch", "cuda") + os.sep, "carver" + os.sep + "arch",
               os.sep + "cuda_driver.py", os.path.join("triton", "runtime", "driver.py"))


AUTOTUNE_SOURCE = "first @autotune config (the file tunes it; TileLang picks on a GPU)"


class MakerCall(NamedTuple):
    """A call of a kernel maker the run made: its own values and where in the file."""

    args: tuple[object, ...]
    kwargs: Kwargs  # the call's keyword arguments, as the file passed them
    site: str | None  # "main() at line 129"


class JitCall(NamedTuple):
    """A call of a ``@tilelang.jit`` kernel under way (the innermost last on the stack)."""

    obj: str | None  # the module attribute (or foreign key) of the kernel
    args: tuple[object, ...]
    kwargs: Kwargs  # the call's keyword arguments, as the file passed them
    site: str | None


class TracedCall(NamedTuple):
    """How a PrimFunc came to be traced: by which kernel, how, with which arguments."""

    obj: str | None
    how: str  # "jit" | "maker" | "nested" | "primfunc" (becomes :attr:`Build.kind`)
    args: tuple[object, ...]
    kwargs: Kwargs  # the call's keyword arguments, as the file passed them
    site: str | None


@dataclass
class Build:
    """One kernel the file built, as it built it."""

    obj: str | None  # the module attribute of the kernel (jit function, maker, PrimFunc),
    # or ``/path/lib.py::name`` for a kernel another file defines (see :func:`foreign_key`)
    kind: str  # "jit" | "maker" | "primfunc"
    func: TracedPrimFunc
    args: KernelArgs  # JSON-able (tensors as {"tensor": shape, "dtype"})
    sources: dict[str, str]
    out_idx: OutIdx
    target: Described  # as the file asked for it ("auto", "cuda", a Target's text...)
    execution_backend: str | None
    pass_configs: PassConfigs
    compile_flags: list[str] | str | None
    site: str | None  # "main() at line 129"
    entry: str  # the entry point that built it
    raw: tuple[tuple[object, ...], Kwargs] = ((), {})  # the call's own values
    tuned: TunedDict | None = None
    call: KernelCallRecord = field(default_factory=KernelCallRecord)
    index: int = 0  # the how-manieth build of the file
    module: ModuleType | None = None  # another file's kernel: its module as this run
    # imported it
    run_globals: Globals = field(default_factory=dict)  # see :func:`run_globals`


@dataclass
class TraceFailure:
    """A kernel whose tracing raised while the file ran (a finding, or a GPU-only call)."""

    obj: str
    args: KernelArgs
    sources: dict[str, str]
    raw: tuple[tuple[object, ...], Kwargs]
    site: str | None
    error: BaseException
    gpu: str | None  # why it needs a GPU, when that is the reason
    module: ModuleType | None = None  # another file's kernel: its module as this run
    # imported it
    run_globals: Globals = field(default_factory=dict)  # see :func:`run_globals`


@dataclass
class Capture:
    """Everything one run of a file's entry points built."""

    file: str
    builds: list[Build] = field(default_factory=list)
    failures: dict[str, TraceFailure] = field(default_factory=dict)
    entries: list[tuple[str, str]] = field(default_factory=list)  # (entry, how it ended)
    gpu_needed: str | None = None  # the run stopped at a GPU-only call (and where)
    error: str | None = None  # the file did not import
    import_error: BaseException | None = None  # what its import raised
    seconds: float = 0.0
    module: ModuleType | None = None  # the file as the run imported it
    faked: int = 0  # heavy ops the CPU stand-in answered with zeros (their checks unused)
    stopped_when_done: bool = False  # the run was cut short once its own kernels were built
    unchecked: int = 0  # the file's assert_close calls on stand-in results, let pass

    def builds_of(self, obj: str | None) -> list[Build]:
        return [b for b in self.builds if b.obj == obj]

    def pick(self, obj: str | None, dtype: str | None) -> Build | None:
        """The first build of ``obj`` whose data dtype (:func:`kernel_data_dtype`) is the
        cell's ``dtype``, else the first that reads it, else its first build."""
        builds = self.builds_of(obj)
        if dtype and len(builds) > 1:
            from laya_tui.families.tilelang.data_dtype import input_dtype

            found = [kernel_data_dtype(b.func) for b in builds]
            for want in (lambda d: d == dtype,
                         lambda d: input_dtype(d) == input_dtype(dtype)):
                hit = next((b for b, d in zip(builds, found, strict=True) if d and want(d)),
                           None)
                if hit is not None:
                    return hit
        return builds[0] if builds else None

    def how_it_ended(self) -> str:
        """``the __main__ block raised ValueError at line 12: ...`` (for messages)."""
        return "; ".join(f"{e} {how}" for e, how in self.entries) or "no entry point ran"


def foreign_key(file: str, name: str) -> str:
    """How a capture names the builds of kernel ``name`` defined in ``file`` (a file the
    running one imports)."""
    return f"{os.path.realpath(file)}::{name}"


def gpu_reason(exc: BaseException, path: str) -> str | None:
    """Why ``exc`` means the file needs a GPU here (None when it does not, or one is here)."""
    if has_gpu():
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


@contextlib.contextmanager
def capture_deadline(budget: float) -> Iterator[None]:
    """Raise :class:`StopCapture` in the main thread once the process has used ``budget`` s
    of CPU from now (``ITIMER_PROF``) or ``CAPTURE_WALL_FACTOR x budget`` s of wall time
    (``ITIMER_REAL``), whichever comes first."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    cpu0, wall0 = time.process_time(), time.perf_counter()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if signum == signal.SIGPROF and _ALARM[0]:
            raise StopCapture(_ALARM[0])
        if signum == signal.SIGPROF:
            raise StopCapture(f"{BUDGET_STOPPED} {cpu:.0f} s of CPU (its budget, "
                              f"LAYA_TUI_TILELANG_CAPTURE_S={budget:g})")
        raise StopCapture(f"{BUDGET_STOPPED} {wall:.0f} s of wall time ({cpu:.0f} s of CPU; "
                          f"the ceiling is {CAPTURE_WALL_FACTOR:g}x its CPU budget of "
                          f"{budget:g} s)")

    _ALARM[0] = None
    previous = (signal.signal(signal.SIGPROF, on_signal),
                signal.signal(signal.SIGALRM, on_signal))
    signal.setitimer(signal.ITIMER_PROF, max(0.01, budget))
    signal.setitimer(signal.ITIMER_REAL, max(0.01, budget * CAPTURE_WALL_FACTOR))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, previous[0])
        signal.signal(signal.SIGALRM, previous[1])


#: The reason a shortened deadline gives (None: the budget's own).
_ALARM: list[str | None] = [None]


def shorten_deadline(seconds: float, reason: str) -> bool:
    """Bring the capture's CPU deadline to ``seconds`` of CPU from now (if sooner); False
    when no timer runs here (not the main thread)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return False
    remaining = signal.getitimer(signal.ITIMER_PROF)[0]
    if remaining == 0 or remaining > seconds:
        _ALARM[0] = reason
        signal.setitimer(signal.ITIMER_PROF, max(0.01, seconds))
    return True


def budget_stop(text: str) -> str | None:
    """``the file's own run was stopped after 60 s of CPU ...`` where ``text`` (a capture's
    error or how its run ended) says its budget cut it short; else None."""
    at = text.find(BUDGET_STOPPED)
    if at < 0:
        return None
    return text[at:].split(")", 1)[0] + ")" if "(" in text[at:] else text[at:]


def bound_arguments(sig: inspect.Signature, args: tuple[object, ...], kwargs: Kwargs
                    ) -> tuple[KernelArgs, set[str]]:
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


def record_check(registry: Registry, how: str, args: tuple[object, ...], kwargs: Kwargs,
                 path: str, mode: ModeState | None = None) -> object:
    """A comparison the file makes (``how``: the check's real name, or ``"assert"`` for the
    truth of a tensor): recorded on the kernel whose outputs one side derives from (the
    file's own check), answered as passing so the run goes on (True for ``torch.allclose``
    and ``torch.equal``, None for an ``assert_close``, the wanted truth for an ``assert``);
    else ``NotImplemented`` (torch answers). ``registry`` is the capture's map of stand-in
    tensors (unused: the tensors carry their own :mod:`laya_tui.families.tilelang.own_checks`
    nodes)."""
    from laya_tui.families.tilelang import own_checks as oc

    frames = oc.file_frames(path)
    line, where = oc.where(frames)
    if how == "assert":
        truth = oc.wanted_truth(path, line) if line is not None and \
            oc.asked_by_file(path) else None
        node = oc.node_of(args[0]) if args else None
        if truth is None or node is None:
            return NotImplemented
        spec = oc.Spec(truth[1], node, None, {}, truth[0])
    else:
        found = oc.spec_of(how, args, kwargs)
        if found is None:
            return NotImplemented
        spec = found
    owner = oc.the_record(spec)
    if owner is None:
        return NotImplemented
    rec, call = owner
    first = oc.first_output(spec.actual) or oc.first_output(spec.expected)
    index = first.index if first is not None else 0
    rec.checks.append(Check(output=index if index >= 0 else -1 - index,
                            expected=spec.expected, rtol=spec.options.get("rtol"),
                            atol=spec.options.get("atol"), line=line, how=spec.how,
                            in_place=index < 0, trusted=not getattr(mode, "faked", 0),
                            actual=spec.actual, call=call, options=spec.options,
                            where=where, want=spec.want))
    if how == "assert":  # the statement's name is the check's
        return spec.want
    return True if how in ("torch.allclose", "torch.equal") else None


def _frames() -> Iterator[FrameType]:
    f: FrameType | None = sys._getframe(1)
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


def run_globals(fn: object, mod: ModuleType | None, after_import: Globals) -> Globals:
    """The module globals ``fn`` (a kernel's Python function) reads that the file's run set
    after its import (``H = 1`` in the ``__main__`` block): the values it was traced with,
    which importing the file alone does not give (``repro.py`` sets them). Literal values
    only (numbers, strings, their lists); the rest is left out."""
    code = getattr(fn, "__code__", None)
    if code is None or mod is None:
        return {}
    names: set[str] = set()
    todo = [code]
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        todo.extend(k for k in c.co_consts if inspect.iscode(k))
    now = vars(mod)
    out: Globals = {}
    for name in sorted(names):
        if name not in now or (name in after_import and after_import[name] is now[name]):
            continue
        value = now[name]
        try:
            if ast.literal_eval(repr(value)) == value:
                out[name] = value
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            continue
    return out


def first_tensor_dtype(func: TracedPrimFunc) -> str | None:
    """The dtype of a PrimFunc's first buffer parameter."""
    try:
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None:
                return str(buf.dtype)
    except Exception:  # noqa: BLE001
        return None
    return None


def kernel_data_dtype(func: TracedPrimFunc) -> str | None:
    """A PrimFunc's data dtype: the dtypes of the buffer parameters it only reads and of
    those it writes (stores, tile ops' write regions, access pointers with the write bit),
    combined by :func:`laya_tui.families.tilelang.data_dtype.combine`."""
    from laya_tui.families.tilelang.data_dtype import combine

    found = _params_written(func)
    if found is None:  # not a PrimFunc TileLang traced
        return first_tensor_dtype(func)
    params, written = found
    return combine([d for n, d in params if n not in written],
                   [d for n, d in params if n in written])


def written_params(func: TracedPrimFunc) -> set[int] | None:
    """The positions of the buffer parameters a PrimFunc writes (None: not readable)."""
    found = _params_written(func)
    if found is None:
        return None
    params, written = found
    return {i for i, (n, _) in enumerate(params) if n in written}


def _params_written(func: TracedPrimFunc) -> tuple[list[tuple[str, str]], set[str]] | None:
    try:
        from tvm import tirx
        from tvm.tirx import stmt_functor
    except ImportError:  # a TileLang on the older TVM
        from tvm import tir as tirx
        from tvm.tir import stmt_functor
    try:
        params = [(str(b.data.name), str(b.dtype)) for b in
                  (func.buffer_map.get(p) for p in func.params) if b is not None]
        written: set[str] = set()

        def visit(node: object) -> None:
            if isinstance(node, tirx.BufferStore):
                written.add(str(node.buffer.data.name))
            elif isinstance(node, tirx.Call):
                _written_by_call(node, tirx, written)

        stmt_functor.post_order_visit(func.body, visit)
    except Exception:  # noqa: BLE001 - not a PrimFunc TileLang traced
        return None
    return params, written


def _written_by_call(call: TirCall, tirx: ModuleType, written: set[str]) -> None:
    """The buffer a ``tl.region`` / ``tl.access_ptr`` / ``tvm_access_ptr`` writes."""
    name = str(getattr(call.op, "name", ""))
    args = list(call.args)
    if name.endswith("region") and len(args) > 1:
        buf, mask = args[0], args[1]
    elif name == "tl.access_ptr" and len(args) > 2:
        buf, mask = args[0], args[2]
    elif name.endswith("tvm_access_ptr") and len(args) > 4:
        buf, mask = args[1], args[4]
    else:
        return
    if not int(getattr(mask, "value", 0)) & 2:
        return
    if isinstance(buf, tirx.BufferLoad):
        written.add(str(buf.buffer.data.name))
    elif isinstance(buf, tirx.Var):
        written.add(str(buf.name))
