"""``repro.py`` for a failing cell: the same kernel, arguments, target and pass configuration,
lowered (and built) outside laya-tui, printing the same first diagnostic line.

The script needs TileLang (and whatever the kernel file imports), never laya-tui: the few
helpers it needs (importing a kernel folder, the first meaningful line of an error) are
written into it. Standard library only here.
"""

from __future__ import annotations

import os
from typing import Any

_TEMPLATE = '''#!/usr/bin/env python3
"""Reproduce {cell}: {first_line}

Written by laya-tui; runs with plain `python repro.py` (TileLang needed, laya-tui not).
It imports the kernel file, builds the same function with the same arguments, dtype,
target and pass configuration, lowers it{and_builds} and prints the first diagnostic line.
Exit status 1 when it fails as the cell did, 0 when it no longer does.
"""

import importlib
import importlib.util
import os
import re
import subprocess
import sys
import types

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")  # torch-rbln without runtime

KERNEL_FILE = {file!r}
KIND = {kind!r}  # factory | jit | primfunc | file
NAME = {name!r}  # the factory, jit function or PrimFunc attribute
ARGS = {args!r}
DTYPE = {dtype!r}
CPU_SPEC = {cpu!r}  # factories: the cpu=True specialization
TARGET = {target!r}
PASS_CONFIGS = {pass_configs!r}
STAGE = {stage!r}  # the stage the cell failed in
BUILD_COMMAND = {command!r}  # the compiler command of the cell's build (build failures)
WRAPPED_SOURCE = {wrapped!r}
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


def import_kernel():
    folder = os.path.dirname(KERNEL_FILE)
    stem = os.path.splitext(os.path.basename(KERNEL_FILE))[0]
    if os.path.isfile(os.path.join(folder, "__init__.py")):  # a package: relative imports
        pkg = types.ModuleType("_repro_kernels")
        pkg.__path__ = [folder]
        sys.modules["_repro_kernels"] = pkg
        return importlib.import_module("_repro_kernels." + stem)
    sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("_repro_" + stem, KERNEL_FILE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


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
    return obj.get_tir(**ARGS) if isinstance(obj, JITImpl) else obj


def main():
    try:
        mod = import_kernel()
        func = build_function(mod)
    except Exception as exc:
        print(first_line(str(exc) or type(exc).__name__))
        return 1
    import tilelang
    from tvm.target import Target

    target = Target(TARGET)
    try:
        with tilelang.transform.PassContext(opt_level=3, config=PASS_CONFIGS), target:
            tilelang.lower(func, target=target, enable_device_compile=False)
    except Exception as exc:
        print(first_line(str(exc) or type(exc).__name__))
        return 1
    if STAGE == "build" and BUILD_COMMAND and os.path.isfile(WRAPPED_SOURCE):
        proc = subprocess.run(BUILD_COMMAND, shell=True, capture_output=True, text=True)
        if proc.returncode != 0:
            out = proc.stdout + proc.stderr
            m = CC_ERROR_RE.search(out)
            if m:
                print(os.path.basename(m.group("file")) + ":"
                      + (m.group("line") or m.group("pline")) + ": error: "
                      + m.group("msg").strip())
            else:
                errors = [ln for ln in out.splitlines() if "error" in ln.lower()]
                print((errors[0] if errors else first_line(out)).strip()[:500])
            return 1
    print("lowered" + (" and built" if STAGE == "build" else "") + ": no longer fails; the "
          "cell said: " + EXPECTED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def write_repro(folder: str, state: Any, call: Any, cuda_target: dict[str, str] | None) -> str:
    """Write ``<folder>/repro.py`` for a failed cell and return its path."""
    os.makedirs(folder, exist_ok=True)
    diag = state.diag
    target: Any = cuda_target if state.target == "cuda" and cuda_target else state.target
    name = call.obj if state.kind in ("jit", "primfunc") else (
        state.kernel if state.kind == "factory" else None)
    command = diag.command if diag and diag.command else state.extra.get("command")
    text = _TEMPLATE.format(
        cell=f"tilelang/{state.name}", first_line=(diag.line if diag else "").replace(
            '"""', "'''"),
        and_builds=" (and builds it)" if state.stage == "build" else "",
        file=os.path.realpath(state.file), kind=state.kind, name=name,
        args=dict(call.args) if state.kind == "jit" else {}, dtype=state.dtype,
        cpu=state.spec == "cpu", target=target,
        pass_configs=state.extra.get("pass_configs") or {}, stage=state.stage,
        command=command or "", wrapped=state.extra.get("wrapped_source") or "")
    path = os.path.join(folder, "repro.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path
