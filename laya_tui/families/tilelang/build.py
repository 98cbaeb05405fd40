"""Build a lowered kernel the way TileLang's cython backend does, keeping the compiler's words.

TileLang's own build (``LibraryGenerator.compile_lib``) lets the compiler print straight to
the terminal; here the same wrapper source and the same command run with the output
captured, so a failing build reports its first error line and the command. Libraries are
cached by a hash of source and command: an unchanged kernel is not rebuilt.

Imported inside workers only (TileLang at call time).
"""

from __future__ import annotations

import ctypes.util
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING

from laya_tui.families.tilelang.records import ProbeOptions
from laya_tui.families.tilelang.tl_objects import Artifact, Kernel, OutIdx, PrimFunc, Target

if TYPE_CHECKING:
    pass

BUILD_TIMEOUT = 300.0


@dataclass
class BuildResult:
    """One compile: the command, where the library went, what the compiler said."""

    ok: bool
    command: list[str]
    seconds: float
    source_path: str
    lib_path: str | None
    output: str
    returncode: int
    cached: bool = False
    linked: bool = True  # False: compiled to an object only (nothing to link against)
    note: str | None = None


@dataclass
class Recorded:
    """What TileLang's own build ran: compiler commands, and whether its CUDA binary cache
    answered instead (then nvcc did not run)."""

    commands: list[list[str]]
    cached_binary: bool = False


@contextmanager
def recorded_commands() -> Iterator[Recorded]:
    """The compiler commands TileLang's own build runs meanwhile (``tilelang.contrib.nvcc``
    starts nvcc through its module's ``subprocess``): a JITKernel build's nvcc command is
    recorded as a cython build's is, not left out of the report."""
    from tilelang.cache.cuda_binary_cache import CUDABinaryCache
    from tilelang.contrib import nvcc

    rec = Recorded([])
    real, real_load = nvcc.subprocess, CUDABinaryCache.load  # (BinaryCache's classmethod)
    own = CUDABinaryCache.__dict__.get("load")

    def popen(cmd: object, *args: object, **kwargs: object) -> object:
        rec.commands.append([str(c) for c in cmd] if isinstance(cmd, (list, tuple))
                            else [str(cmd)])
        return real.Popen(cmd, *args, **kwargs)

    def load(cls: type, /, *args: object, **kwargs: object) -> object:
        hit = real_load(*args, **kwargs)
        rec.cached_binary = rec.cached_binary or hit is not None
        return hit

    names = {k: getattr(real, k) for k in dir(real) if not k.startswith("__")}
    nvcc.subprocess = SimpleNamespace(**{**names, "Popen": popen})
    setattr(CUDABinaryCache, "load", classmethod(load))  # noqa: B010 - restored below
    try:
        yield rec
    finally:
        nvcc.subprocess = real
        if own is None:
            delattr(CUDABinaryCache, "load")
        else:
            setattr(CUDABinaryCache, "load", own)  # noqa: B010


def cache_root(opts: ProbeOptions) -> str:
    """Where generated sources and libraries go: ``--out``/tilelang or the per-user cache."""
    from laya_tui.core.files import artifact_dir

    return artifact_dir(opts, "tilelang")


def wrap_source(func: PrimFunc, artifact: Artifact, target: Target) -> str:
    """The host wrapper + kernel source TileLang's cython adapter compiles."""
    from tilelang import tvm
    from tilelang.jit.adapter.wrapper import TLWrapper

    wrapper = TLWrapper(target)
    wrapper.assign_optimized_module(tvm.IRModule({func.attrs["global_symbol"]: func}))
    wrapper.assign_pass_configs({})
    wrapper.assign_host_module(artifact.host_mod)
    wrapper.assign_device_module(artifact.device_mod)
    return str(wrapper.wrap(artifact.kernel_source))


def compiler_for(target_kind: str) -> str | None:
    """The compiler a target needs (C++ for ``c``, nvcc for ``cuda``), or None if absent."""
    if target_kind == "cuda":
        try:
            from tilelang.contrib.nvcc import get_nvcc_compiler

            nvcc = get_nvcc_compiler()
        except Exception:  # noqa: BLE001 - no CUDA toolkit found
            nvcc = None
        return nvcc if nvcc and os.path.isfile(nvcc) else shutil.which("nvcc")
    from tilelang.contrib.cc import get_cplus_compiler

    cxx = get_cplus_compiler()
    return None if cxx is None else str(cxx)


def can_link_cuda() -> bool:
    """Whether a CUDA shared library can be linked here (libcuda from the driver)."""
    if ctypes.util.find_library("cuda"):
        return True
    try:
        from tilelang.contrib.nvcc import get_cuda_library_dirs

        dirs = get_cuda_library_dirs()
    except Exception:  # noqa: BLE001
        return False
    return any(os.path.exists(os.path.join(d, "libcuda.so")) for d in dirs)


def compile_command(target: Target, compiler: str, src: str, out: str, *,
                    link: bool = True) -> list[str]:
    """The command TileLang's ``LibraryGenerator`` runs for ``target`` (c or cuda).

    ``link=False`` compiles a CUDA source to an object only (no driver to link against).
    """
    from tilelang.env import TILELANG_TEMPLATE_PATH

    if target.kind.name == "cuda":
        from tilelang.contrib.nvcc import (
            format_target_code_for_gencode,
            get_cuda_library_dirs,
            get_target_arch_and_code,
        )
        from tilelang.env import CUTLASS_INCLUDE_DIR

        arch, code = get_target_arch_and_code(target)
        gencode = format_target_code_for_gencode(code) or f"sm_{arch}"
        cmd = [compiler, "-std=c++20", "-w", "-Xcudafe", "--diag_suppress=177", "-lineinfo"]
        if link:
            cmd += ["--shared", src, *[f"-L{d}" for d in get_cuda_library_dirs()], "-lcuda"]
        else:
            cmd += ["-c", src]
        cmd += ["-gencode", f"arch=compute_{arch},code={gencode}",
                "--compiler-options", "-fPIC", "-I" + CUTLASS_INCLUDE_DIR,
                "-I" + TILELANG_TEMPLATE_PATH, "-o", out]
        return cmd
    return [compiler, "-std=c++17", "-fPIC", "-shared", src, "-I" + TILELANG_TEMPLATE_PATH,
            "-o", out]


def build_library(code: str, target: Target, root: str, *, link: bool = True) -> BuildResult:
    """Compile the wrapped ``code`` for ``target`` under ``root/build`` (cached by hash)."""
    kind = target.kind.name
    compiler = compiler_for(kind)
    if not compiler:
        raise FileNotFoundError("nvcc not found" if kind == "cuda" else "no C++ compiler found")
    build_dir = os.path.join(root, "build")
    os.makedirs(build_dir, exist_ok=True)
    probe_cmd = compile_command(target, compiler, "SRC", "OUT", link=link)
    digest = hashlib.sha256((code + "\0" + " ".join(probe_cmd)).encode()).hexdigest()[:20]
    ext = ".cu" if kind == "cuda" else ".cpp"
    src = os.path.join(build_dir, f"{digest}{ext}")
    out = os.path.join(build_dir, f"{digest}{'.so' if link else '.o'}")
    cmd = compile_command(target, compiler, src, out, link=link)
    if os.path.isfile(out) and os.path.getsize(out) > 0:
        return BuildResult(True, cmd, 0.0, src, out, "", 0, cached=True, linked=link)
    with open(src, "w", encoding="utf-8") as f:
        f.write(code)
    tmp_out = out + f".tmp{os.getpid()}"
    run_cmd = cmd[:-1] + [tmp_out]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(run_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=BUILD_TIMEOUT,
                              stdin=subprocess.DEVNULL)
        output, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or "") if isinstance(exc.stdout, str) else ""
        output += f"\ncompiler timed out after {BUILD_TIMEOUT:g} s"
        rc = -9
    seconds = time.perf_counter() - t0
    if rc == 0 and os.path.isfile(tmp_out):
        os.replace(tmp_out, out)
        return BuildResult(True, cmd, seconds, src, out, output, rc, linked=link)
    if os.path.exists(tmp_out):
        os.unlink(tmp_out)
    return BuildResult(False, cmd, seconds, src, None, output, rc, linked=link)


def load_kernel(func: PrimFunc, artifact: Artifact, target: Target, code: str, lib_path: str,
                out_idx: OutIdx = None) -> Kernel:
    """A callable kernel over a built library (TileLang's cython adapter, no rebuild);
    with ``out_idx`` it allocates and returns those outputs as ``tilelang.compile``'s does."""
    from tilelang.jit.adapter import CythonKernelAdapter

    adapter = CythonKernelAdapter.from_database(
        params=artifact.params, result_idx=out_idx, target=target, func_or_mod=func,
        host_kernel_source=code, device_kernel_source=artifact.kernel_source,
        kernel_lib_path=lib_path, pass_configs={})
    kernel: Kernel = adapter.func
    return kernel
