"""``repro.py`` for a failing cell: the same kernel, arguments, target, pass configuration and
execution backend, traced, lowered and built outside laya-tui, printing the same first
diagnostic line.

On a machine without a GPU it stands in for one as the cell's capture did (target "auto"
is an sm_90a GPU, ``cuda`` tensors are made on the CPU, and a build in the file's top level
ends its import there, as it ended the capture's), so a kernel file whose top level needs
CUDA or builds a kernel reproduces there too. The script needs TileLang (and whatever the
kernel file imports), never laya-tui: the few helpers it needs (importing a kernel folder, the first
meaningful line of an error, reading a compiler's first error) are written into it. A cell
that failed running the file's own check re-runs the file itself (``python file.py``) and
prints the first line of what it raises. Standard library only here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.diagnostics import PROCESS_DEPENDENT

if TYPE_CHECKING:
    from laya_tui.families.tilelang.cell_state import CellState, KernelCall
    from laya_tui.families.tilelang.tl_objects import OutIdx

_TEMPLATE = '''#!/usr/bin/env python3
"""Reproduce {cell}: {first_line}

Written by laya-tui; runs with plain `python repro.py` (TileLang needed, laya-tui not).
It imports the kernel file, builds the same function with the same arguments, dtype,
target and pass configuration, lowers it{and_builds} and prints the first diagnostic line.
Exit status 1 when it fails as the cell did, 0 when it no longer does, 2 when an input
it needs is not here (it names which). The compiler's source and command are carried in it.
"""

import importlib
import importlib.util
import os
import re
import runpy
import subprocess
import sys
import types

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")  # torch-rbln without runtime

KERNEL_FILE = {file!r}
KIND = {kind!r}  # factory | jit | maker | primfunc | file
NAME = {name!r}  # the factory, jit function, maker or PrimFunc attribute
ARGS = {args!r}  # tensors as {{"tensor": shape, "dtype": name}}
RUN_GLOBALS = {run_globals!r}  # module globals the file's run set before the build
OUT_IDX = {out_idx!r}
DTYPE = {dtype!r}
CPU_SPEC = {cpu!r}  # factories: the cpu=True specialization
TARGET = {target!r}
PASS_CONFIGS = {pass_configs!r}
EXECUTION_BACKEND = {backend!r}
CALL_STYLE = {call_style!r}  # "call": the cell failed where the file calls the kernel
STAGE = {stage!r}  # the stage the cell failed in
BUILD_COMMAND = {command!r}  # the compiler command of the cell's cython build
WRAPPED_SOURCE = {wrapped!r}  # where the cell's build wrote the source it compiled
WRAPPED_CODE = {wrapped_code!r}  # that source itself, so no cache file is needed
EXPECTED = {first_line!r}
CC_ERROR_RE = re.compile(
    r"^(?P<file>[^\\s:()][^:()]*?)(?::(?P<line>\\d+)(?::(?P<col>\\d+))?:|\\((?P<pline>\\d+)\\):)"
    r"\\s*(?:fatal )?error\\b[^:]*:\\s*(?P<msg>.*)$", re.MULTILINE)
NOISE = ("Traceback", "File ", "  File", "[", "During handling", "The above")


def first_line(message):
    for raw in message.splitlines():
        line = raw.strip()
        if line and not line.startswith(NOISE) and not line.startswith("-->"):
            return line[:500]
    return message.strip()[:500]


def compiler_line(output):
    m = CC_ERROR_RE.search(output)
    if m:
        return (os.path.basename(m.group("file")) + ":" + (m.group("line") or m.group("pline"))
                + ": error: " + m.group("msg").strip())
    errors = [ln for ln in output.splitlines() if "error" in ln.lower()]
    return (errors[0] if errors else first_line(output)).strip()[:500]


STOOD_IN = []  # [True] once no_gpu_stand_ins stood in for a GPU
PROCESS_DEPENDENT = re.compile({process_dependent!r})


def say(line):
    """Print the failure's first line; where it differs from the cell's only in what changes
    between processes (an address, the fragment layout inference names first), say so."""
    same = PROCESS_DEPENDENT.sub("?", line) == PROCESS_DEPENDENT.sub("?", EXPECTED)
    named = [m.group(0) for m in PROCESS_DEPENDENT.finditer(EXPECTED) if "0x" not in m.group(0)]
    if line != EXPECTED and same and named and not all(n in line for n in named):
        print("the same failure as the cell's, naming another fragment: TileLang names the "
              "first one without a layout in an order that follows memory addresses, which "
              "changes between processes (the cell named " + ", ".join(named) + ")")
    print(line)


class BuiltAtImport(BaseException):
    """The kernel file builds a kernel at import: without a GPU that build cannot run, so
    the file's top level stops there (what it defined before stays), as the cell's capture
    stopped it."""


def builds_stop_the_import():
    """Without a GPU: TileLang's build entry points end the import (undo: call the result)."""
    if not STOOD_IN:
        return lambda: None
    import tilelang
    from tilelang.jit import JITImpl
    from tilelang.jit.kernel import JITKernel

    def stop(*args, **kwargs):
        raise BuiltAtImport()

    saved = [(JITImpl, "__call__", JITImpl.__call__), (JITImpl, "compile", JITImpl.compile),
             (JITKernel, "__init__", JITKernel.__init__), (tilelang, "compile", tilelang.compile)]
    for owner, name, _ in saved:
        setattr(owner, name, stop)

    def undo():
        for owner, name, value in saved:
            setattr(owner, name, value)
    return undo


def import_kernel():
    folder = os.path.dirname(KERNEL_FILE)
    stem = os.path.splitext(os.path.basename(KERNEL_FILE))[0]
    if os.path.isfile(os.path.join(folder, "__init__.py")):  # a package: relative imports
        pkg = types.ModuleType("_repro_kernels")
        pkg.__path__ = [folder]
        sys.modules["_repro_kernels"] = pkg
        mod = importlib.import_module("_repro_kernels." + stem)
        vars(mod).update(RUN_GLOBALS)
        return mod
    sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("_repro_" + stem, KERNEL_FILE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    undo = builds_stop_the_import()
    try:
        spec.loader.exec_module(mod)
    except BuiltAtImport:
        pass
    finally:
        undo()
    vars(mod).update(RUN_GLOBALS)  # what the file's __main__ block set (`H = 1`)
    return mod


def no_gpu_stand_ins():
    """No GPU here: what the cell's capture stood in for too, so the kernel is traced as a
    GPU run traces it: target "auto" detects an sm_90a GPU, and tensors the kernel file
    puts on "cuda" are made on the CPU. Nothing changes where a GPU is."""
    try:
        import torch
        from tilelang.backend import target as targets
    except ImportError:
        return
    if torch.cuda.is_available():
        return
    targets.register_target_detector(
        "repro-no-gpu", lambda: {{"kind": "cuda", "arch": "sm_90a"}}, override=True)
    from torch.overrides import TorchFunctionMode

    def cpu(value):
        return "cpu" if str(value).startswith("cuda") else value

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {{}})
            name = getattr(func, "__name__", "")
            if name == "cuda" and args and isinstance(args[0], torch.Tensor):
                return args[0]
            if "device" in kwargs:
                kwargs["device"] = cpu(kwargs["device"])
            if name == "to":
                args = tuple(cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
            return func(*args, **kwargs)

    CudaOnCpu().__enter__()
    STOOD_IN.append(True)


def arguments():
    out = {{}}
    for key, value in ARGS.items():
        if isinstance(value, dict) and "tensor" in value:
            import torch

            name = {{"float8_e4m3": "float8_e4m3fn"}}.get(value["dtype"], value["dtype"])
            out[key] = torch.empty(value["tensor"], dtype=getattr(torch, name))
        elif isinstance(value, str):
            out[key] = as_dtype(value)
        else:
            out[key] = value
    return out


def as_dtype(text):
    """A dtype name as TileLang's dtype (a str subclass, so a kernel taking the plain name
    gets it too; one reading `dtype.bits` needs it): the cell wrote the file's dtype
    objects by name."""
    try:
        from tilelang import language as T

        return T.dtype(text)
    except Exception:
        return text


def build_function(mod):
    if KIND == "factory":
        fn = getattr(mod, NAME)
        maker = getattr(mod, "example_" + NAME, None) or getattr(mod, "example", None)
        args, kwargs = (), {{}}
        if maker is not None:
            import inspect

            ex = maker(seed=1234) if "seed" in inspect.signature(maker).parameters else maker()
            args, kwargs = tuple(ex.args), dict(ex.kwargs)
        return fn(*args, **kwargs, dtype=DTYPE, cpu=CPU_SPEC)
    from tilelang.jit import JITImpl

    obj = getattr(mod, NAME) if NAME else next(
        v for v in vars(mod).values() if isinstance(getattr(v, "jit_impl", v), JITImpl)
        or type(v).__name__ == "PrimFunc")
    obj = getattr(obj, "jit_impl", obj)  # @autotune on top of @tilelang.jit
    if isinstance(obj, JITImpl):  # its arguments are hashable: a sequence was a tuple
        return obj.get_tir(**{{k: tuple(v) if isinstance(v, list) else v
                              for k, v in arguments().items()}})
    if KIND == "maker":
        return obj(**arguments())
    return obj


def backend_of(target):
    from tilelang.backend.module import create_backend_context
    from tilelang.env import env

    requested = EXECUTION_BACKEND or env.get_default_execution_backend()
    try:
        return create_backend_context(target, None, requested).execution_backend
    except Exception:
        return None


def watch_checks():
    """The file's assert_close calls that fail, also those the file catches itself (a
    file that prints "failed" and goes on still failed its check)."""
    failed = []
    try:
        import torch
    except ImportError:
        return failed

    def watched(orig):
        def check(*args, **kwargs):
            try:
                return orig(*args, **kwargs)
            except AssertionError as exc:
                failed.append(exc)
                raise
        return check

    torch.testing.assert_close = watched(torch.testing.assert_close)
    for name in ("tilelang.testing", "tilelang.utils.tensor"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, "torch_assert_close"):
            mod.torch_assert_close = watched(mod.torch_assert_close)
    return failed


def run_the_file():
    """The cell failed the file's own check: run the file as `python file.py` does."""
    sys.argv = [KERNEL_FILE]
    sys.path.insert(0, os.path.dirname(KERNEL_FILE))
    failed = watch_checks()
    try:
        runpy.run_path(KERNEL_FILE, run_name="__main__")
    except SystemExit as exc:
        if exc.code:
            say(first_line(str(failed[0]) if failed else str(exc.code)))
            return 1
    except BaseException as exc:
        say(first_line(str(exc) or type(exc).__name__))
        return 1
    if failed:  # the file caught its own failing check and went on
        say(first_line(str(failed[0])))
        return 1
    print("the file ran: no longer fails; the cell said: " + EXPECTED)
    return 0


def call_like_the_file():
    """The cell failed where the file calls the kernel: call it the same way."""
    try:
        obj = getattr(import_kernel(), NAME)
        obj = getattr(obj, "jit_impl", obj)  # @autotune on top: its config is in ARGS
        obj(**arguments())
    except Exception as exc:
        say(first_line(str(exc) or type(exc).__name__))
        return 1
    print("the kernel builds: no longer fails; the cell said: " + EXPECTED)
    return 0


def missing(what):
    """An input this script needs is not here: say which, exit 2 (never "no longer fails")."""
    print("cannot reproduce: " + what + "; the cell said: " + EXPECTED)
    return 2


def compile_carried():
    """The cell's compiler command on the source it compiled, both carried in this file,
    in a temporary folder (the cache file the cell wrote is not needed)."""
    import tempfile

    if not WRAPPED_CODE:
        if not os.path.isfile(WRAPPED_SOURCE):
            return missing("the generated source " + WRAPPED_SOURCE + " is not here and "
                           "this repro.py does not carry it")
        with open(WRAPPED_SOURCE, encoding="utf-8") as f:
            code = f.read()
    else:
        code = WRAPPED_CODE
    with tempfile.TemporaryDirectory(prefix="repro-") as tmp:
        src = os.path.join(tmp, os.path.basename(WRAPPED_SOURCE) or "kernel.cpp")
        with open(src, "w", encoding="utf-8") as f:
            f.write(code)
        words = BUILD_COMMAND.split()
        out = os.path.join(tmp, os.path.basename(words[-1]) or "kernel.so")
        command = " ".join([src if w == WRAPPED_SOURCE else w for w in words[:-1]] + [out])
        proc = subprocess.run(command, shell=True, capture_output=True, text=True)
    if proc.returncode != 0:
        say(compiler_line(proc.stdout + proc.stderr))
        return 1
    print("lowered and built: no longer fails; the cell said: " + EXPECTED)
    return 0


def main():
    if not os.path.isfile(KERNEL_FILE):
        return missing("the kernel file " + KERNEL_FILE + " is not here")
    if STAGE == "run" and KIND != "factory":
        return run_the_file()
    no_gpu_stand_ins()
    if STAGE == "factory" and CALL_STYLE == "call":
        return call_like_the_file()
    try:
        mod = import_kernel()
        func = build_function(mod)
    except Exception as exc:
        say(first_line(str(exc) or type(exc).__name__))
        return 1
    import tilelang
    from tvm.target import Target

    target = Target(TARGET)
    spec = backend_of(target)
    lowered = func
    if spec is not None and spec.name == "tvm_ffi":
        from tilelang.jit.abi import prepare_tvm_ffi_callee_allocated_outputs

        lowered, _ = prepare_tvm_ffi_callee_allocated_outputs(
            func, OUT_IDX,
            supports_callee_allocated_outputs=spec.supports_callee_allocated_outputs)
    try:
        with tilelang.transform.PassContext(opt_level=3, config=PASS_CONFIGS), target:
            tilelang.lower(lowered, target=target, enable_device_compile=False)
    except Exception as exc:
        say(first_line(str(exc) or type(exc).__name__))
        return 1
    if STAGE == "build" and spec is not None and spec.name != "cython":
        from tilelang.jit.kernel import JITKernel

        try:
            JITKernel(func, out_idx=OUT_IDX, execution_backend=spec.name, target=target,
                      pass_configs=PASS_CONFIGS)
        except Exception as exc:
            text = str(exc)
            if "Compilation error:" in text:
                output = text.split("Compilation error:", 1)[1].split("\\nCommand: ", 1)[0]
                say(compiler_line(output))
            else:
                say(first_line(text or type(exc).__name__))
            return 1
    elif STAGE == "build" and BUILD_COMMAND:
        return compile_carried()
    print("lowered" + (" and built" if STAGE == "build" else "") + ": no longer fails; the "
          "cell said: " + EXPECTED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def write_repro(folder: str, state: CellState, call: KernelCall,
                cuda_target: dict[str, str] | None) -> str:
    """Write ``<folder>/repro.py`` for a failed cell and return its path."""
    os.makedirs(folder, exist_ok=True)
    diag = state.diag
    target: dict[str, str] | str = cuda_target if state.target == "cuda" and cuda_target \
        else state.target
    plain = state.kind in ("jit", "primfunc", "maker")
    name = call.obj if plain else (state.kernel if state.kind == "factory" else None)
    command = diag.command if diag and diag.command else state.extra.get("command")
    backend = state.extra.get("execution_backend") or getattr(call, "execution_backend", None)
    text = _TEMPLATE.format(
        cell=f"tilelang/{state.name}", first_line=(diag.line if diag else "").replace(
            '"""', "'''"),
        and_builds=" (and builds it)" if state.stage == "build" else "",
        file=os.path.realpath(state.file), kind=state.kind, name=name,
        args=dict(call.args) if state.kind in ("jit", "maker") else {},
        run_globals=dict(getattr(call, "run_globals", None) or {}),
        process_dependent="|".join(PROCESS_DEPENDENT),
        out_idx=_plain(getattr(call, "out_idx", None)), dtype=state.dtype,
        cpu=state.spec == "cpu", target=target,
        pass_configs=state.extra.get("pass_configs") or {}, backend=backend,
        stage=state.stage, command=command or "",
        call_style="call" if getattr(call, "trace_error", None) is not None else "get_tir",
        wrapped=state.extra.get("wrapped_source") or "",
        wrapped_code=_read(state.extra.get("wrapped_source")) if command else "")
    path = os.path.join(folder, "repro.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _read(path: str | None) -> str:
    """A generated source's text, carried in ``repro.py``; "" when unreadable."""
    try:
        with open(path or "", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def _plain(value: OutIdx) -> int | list[int] | None:
    """``out_idx`` as literal Python (TVM arrays become lists of ints)."""
    if value is None or isinstance(value, int):
        return value
    try:
        return [int(v) for v in value]
    except TypeError:
        return None
