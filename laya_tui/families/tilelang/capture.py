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
import functools
import hashlib
import os
import sys
import tempfile
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator
from types import ModuleType

from laya_tui.families.tilelang.capture_model import (
    AUTOTUNE_SOURCE,
    CAPTURE_SECONDS,
    CAPTURE_WALL_FACTOR,
    Build,
    Capture,
    MakerCall,
    TraceFailure,
    bound_arguments,
    call_site,
    capture_deadline,
    first_tensor_dtype,
    foreign_key,
    gpu_reason,
    record_check,
)
from laya_tui.families.tilelang.capture_stubs import (
    StopCapture,
    StubKernel,
    describe,
)
from laya_tui.families.tilelang.cell_state import has_gpu
from laya_tui.families.tilelang.records import KernelArgs, Kwargs

# -- the cache -------------------------------------------------------------------------------

#: the captures this process holds (the last few files: a capture keeps the file's
#: module and the tensors it called its kernels with; a run takes a file's cells in a row)
_CACHE: OrderedDict[str, tuple[tuple[int, int, str, str], Capture]] = OrderedDict()
_KEEP = 4  # 1 where a GPU is: its tensors live in device memory


def _stamp(path: str) -> tuple[int, int, str]:
    st = os.stat(path)
    with open(path, "rb") as f:
        digest = hashlib.sha1(f.read()).hexdigest()
    return st.st_size, st.st_mtime_ns, digest


def capture_file(path: str, kernels: set[str] | None = None,
                 seconds: float | None = None, want: str | None = None,
                 overrides: dict[str, KernelArgs] | None = None) -> Capture:
    """The capture of ``path`` (run once per process and file content). ``want`` names
    another file's kernel (:func:`foreign_key`) the run should go on to build: a capture
    cut short once the file's own kernels were built runs again until it builds that.
    ``overrides`` (kernel maker -> arguments: the ``[tool.laya-tui.kernel-args]`` table of
    a kernel made deeper inside it) replace what the run passes that maker."""
    path = os.path.realpath(path)
    stamp = (*_stamp(path), repr(sorted((k, sorted(v.items()))
                                        for k, v in (overrides or {}).items())))
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == stamp:
        cap = hit[1]
        if want is None or not cap.stopped_when_done or cap.builds_of(want) \
                or want in cap.failures:
            _CACHE.move_to_end(path)
            return cap
    if want is not None:
        kernels = (kernels or set()) | {want}
    _CACHE.pop(path, None)
    keep = 1 if has_gpu() else _KEEP
    while len(_CACHE) >= keep:
        _CACHE.popitem(last=False)
    if keep == 1:
        _release_device_memory()
    cap = _run_capture(path, kernels or set(), CAPTURE_SECONDS if seconds is None else seconds,
                       overrides or {})
    _CACHE[path] = (stamp, cap)
    return cap


# -- running the file ------------------------------------------------------------------------


def _release_captures() -> None:
    """Drop the captures this process keeps (a faked result needs their memory)."""
    import gc

    _CACHE.clear()
    gc.collect()


def _release_device_memory() -> None:
    import gc

    gc.collect()
    try:
        import torch

        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass


def _entry_points(tree: ast.Module, path: str, mod: ModuleType
                  ) -> list[tuple[str, Callable[[], object]]]:
    """The file's own ways to run: the __main__ block (or main()), then test_* functions."""
    from laya_tui.families.tilelang.static_calls import MAIN_BLOCK, main_block

    out: list[tuple[str, Callable[[], object]]] = []
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
        if not name.startswith("test"):
            continue
        if no_required(fn):
            out.append((f"{name}()", _calling(mod, name, {})))
            continue
        given = _first_parameters(getattr(mod, name, None))
        required = {a.arg for a in fn.args.args[:len(fn.args.args) - len(fn.args.defaults)]}
        if given is not None and required <= set(given):
            shown = ", ".join(f"{k}={v!r}" for k, v in given.items())
            out.append((f"{name}({shown})", _calling(mod, name, given)))
    return out


def _calling(mod: ModuleType, name: str, kwargs: Kwargs) -> Callable[[], object]:
    return lambda: getattr(mod, name)(**kwargs)


def _first_parameters(fn: object) -> Kwargs | None:
    """The arguments of a test's first case under ``@pytest.mark.parametrize`` (each mark's
    first values, as pytest's first generated test gets them); None when it has none."""
    marks = [m for m in getattr(fn, "pytestmark", None) or []
             if getattr(m, "name", None) == "parametrize" and len(m.args) >= 2]
    if not marks:
        return None
    given: Kwargs = {}
    for mark in marks:
        names, values = mark.args[0], list(mark.args[1])
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        if not values:
            return None
        first = getattr(values[0], "values", values[0])  # pytest.param(...) holds .values
        first = first if len(names) > 1 else (first[0] if isinstance(first, tuple) and
                                              hasattr(values[0], "values") else first)
        if len(names) > 1:
            given.update(zip(names, first, strict=False))
        else:
            given[names[0]] = first
    return given


def _run_capture(path: str, kernels: set[str], budget: float,
                 overrides: dict[str, KernelArgs]) -> Capture:
    from laya_tui.families.tilelang.capture_hooks import Recorder

    t0 = time.perf_counter()
    cap = Capture(file=path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError) as exc:
        cap.error = f"{type(exc).__name__}: {exc}"
        return cap
    _add_project_paths(path)
    gpu = has_gpu()
    rec = Recorder(path, cap, kernels, stop_when_done=not gpu)
    rec.overrides = overrides
    rec.mode_state.release = _release_captures
    cpu0, ceiling = time.process_time(), t0 + budget * CAPTURE_WALL_FACTOR
    mod: ModuleType | None
    with rec.installed(cuda_on_cpu=not gpu), _argv(path), capture_deadline(budget), \
            _own_imports():
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
            cap.import_error = exc
            if not (isinstance(exc, SystemExit) and exc.code in (0, None)):
                _stopped_without_gpu(cap, rec.asked_gpu,
                                     f"importing the file then stops ({cap.error})")
            mod = None
        if mod is not None:
            if cap.builds:
                cap.entries.append(("the import", "ran"))
            rec.wrap_makers(mod, tree)
            for entry, run in _entry_points(tree, path, mod):
                if rec.done() or time.process_time() - cpu0 > budget \
                        or time.perf_counter() > ceiling:
                    break
                rec.entry = entry
                how = _run_entry(run, path, cap)
                cap.entries.append((entry, how))
                if how.startswith("raised") or how.startswith("exited") and how not in (
                        "exited (0)", "exited (None)"):
                    _stopped_without_gpu(cap, rec.asked_gpu, f"the run then {how}")
            for name, values in overrides.items():  # the table's maker the run never called
                if name in rec.last_calls or not callable(getattr(mod, name, None)) \
                        or time.process_time() - cpu0 > budget:
                    continue
                entry = f"{name}({', '.join(f'{k}={v!r}' for k, v in values.items())}) " \
                    "with the [tool.laya-tui.kernel-args] table's values"
                rec.entry = entry
                rec.last_calls[name] = MakerCall((), dict(values), None)  # its arguments
                call = functools.partial(getattr(mod, name), **values)
                cap.entries.append((entry, _run_entry(call, path, cap)))
    cap.seconds = time.perf_counter() - t0
    cap.faked = rec.mode_state.faked
    return cap


@contextlib.contextmanager
def _own_imports() -> Iterator[None]:
    """The user's modules a capture imports are its own: dropped from ``sys.modules`` when
    it ends, so the next capture imports them afresh as ``python file.py`` does (a maker
    under ``functools.lru_cache`` would otherwise hand a later run the stand-in an earlier
    one built, and that run would build nothing). Installed packages and the standard
    library stay."""
    import sysconfig

    before = set(sys.modules)
    kept = tuple(os.path.realpath(p) + os.sep for p in {
        sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            file = getattr(sys.modules.get(name), "__file__", None)
            if not file or name.split(".")[0] == "laya_tui":
                continue
            real = os.path.realpath(file)
            if not real.startswith(kept) and f"{os.sep}site-packages{os.sep}" not in real:
                sys.modules.pop(name, None)


#: files that mark a project's root (where its tests' imports start)
_PROJECT_MARKS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini")


def _add_project_paths(path: str) -> None:
    """Put the root of the project holding ``path`` (the nearest folder above it with a
    ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``pytest.ini``) and the folders its
    pytest settings name on ``sys.path``, behind the rest: a project's test imports its
    package as pytest lets it (``from starter_tilelab.basic import ...`` in a sub-project of
    the workspace)."""
    from laya_tui.core.project_paths import pythonpath_of

    folder = os.path.dirname(path)
    while True:
        if any(os.path.isfile(os.path.join(folder, m)) for m in _PROJECT_MARKS):
            for extra in (folder, *pythonpath_of(folder)):
                if extra not in sys.path:
                    sys.path.append(extra)
            return
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _stopped_without_gpu(cap: Capture, asked: str | None, then: str) -> None:
    """The file asked ``torch.cuda.is_available()`` (at ``asked``), got no GPU and stopped:
    what a GPU run gets past, so its kernels need a GPU here."""
    if asked and cap.gpu_needed is None:
        cap.gpu_needed = f"{asked} asks torch.cuda.is_available() (no GPU here) and {then}"


def _run_entry(run: Callable[[], object], path: str, cap: Capture) -> str:
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


__all__ = ["AUTOTUNE_SOURCE", "Build", "Capture", "TraceFailure", "bound_arguments",
           "call_site", "capture_file", "describe", "first_tensor_dtype", "foreign_key",
           "gpu_reason",
           "record_check", "StubKernel"]
