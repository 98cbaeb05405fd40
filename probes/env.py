"""env probes: versions, compilers, devices and backend availability, each missing piece a
skip with its install hint."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys

from laya_tui import param, probe

INSTALL_HINTS = {
    "torch": "pip install 'laya-tui[torch]' -c constraints.txt  (torch==2.13.0, the CPU build)",
    "transformers": "pip install 'laya-tui[torch]'",
    "tilelang": "pip install 'laya-tui[tilelang]'  (tilelang==0.1.15)",
    "mlx": "pip install 'mlx[cpu]' on Linux, 'mlx' on macOS  (laya-tui[mlx])",
    "torch_rbln": "pip install 'laya-tui[rbln]'  (torch-rbln==0.12.0; the runtime comes from "
                  "rebel-compiler on an RBLN host)",
}
DISTRIBUTIONS = {"torch": "torch", "transformers": "transformers", "tilelang": "tilelang",
                 "mlx": "mlx", "torch_rbln": "torch-rbln"}


def _version_of(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _tool_version(cmd: list[str]) -> tuple[str | None, str | None]:
    """(path, first version line) of a command-line tool, or (None, None)."""
    path = shutil.which(cmd[0])
    if path is None:
        return None, None
    try:
        out = subprocess.run([path, *cmd[1:]], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return path, f"unusable: {exc}"
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    pick = [ln for ln in lines if "release" in ln.lower() or "version" in ln.lower()]
    return path, (pick[-1] if pick else (lines[0] if lines else "")).strip()


@probe(family="env")
def python(ctx):
    """The interpreter and the host."""
    ctx.environment("python", platform.python_version(), detail={"executable": sys.executable})
    ctx.environment("platform", platform.platform())
    ctx.environment("cpu_count", os.cpu_count())


@probe(family="env", params=[param(mod, module=mod) for mod in DISTRIBUTIONS])
def library(ctx, module: str):
    """One heavy library: installed version, or a skip with the install hint."""
    version = _version_of(DISTRIBUTIONS[module])
    if version is None:
        ctx.skip(f"{module} not installed: {INSTALL_HINTS[module]}")
    ctx.environment(module, version, detail={"distribution": DISTRIBUTIONS[module]})
    if module == "torch":
        import torch

        ctx.environment("torch.cuda", torch.cuda.is_available(),
                        detail={"devices": [torch.cuda.get_device_name(i)
                                            for i in range(torch.cuda.device_count())],
                                "cuda_version": torch.version.cuda})
        if not torch.cuda.is_available():
            ctx.log("no CUDA device: cuda cells lower and build but do not run",
                    subject="torch.cuda")


@probe(family="env", params=[param("cc", tool="cc"), param("c++", tool="c++"),
                             param("nvcc", tool="nvcc")])
def compiler(ctx, tool: str):
    """A compiler the probes need (C/C++ for TileLang `c` and AOTInductor, nvcc for cuda)."""
    path, version = _tool_version([tool, "--version"])
    if path is None:
        hint = ("install the CUDA toolkit (nvcc) to build cuda cells" if tool == "nvcc"
                else "install a C/C++ compiler (gcc/g++ or clang)")
        ctx.skip(f"{tool} not found on PATH: {hint}")
    ctx.environment(tool, version, detail={"path": path})


@probe(family="env")
def rbln_runtime(ctx):
    """torch-rbln and its runtime: the exact reason `import torch` breaks without it."""
    from laya_tui.families.rbln_status import AUTOLOAD_VAR, runtime_library, torch_rbln_installed

    if not torch_rbln_installed():
        ctx.skip(f"torch-rbln not installed: {INSTALL_HINTS['torch_rbln']}")
    lib = runtime_library()  # torch-rbln's own resolve_runtime_library(), torch not imported
    reason = lib.get("reason")
    # What a user's bare `import torch` does here, with backend autoload on.
    env = dict(os.environ)
    env.pop(AUTOLOAD_VAR, None)
    proc = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True,
                          env=env, timeout=120)
    import_error = _last_error_line(proc.stderr) if proc.returncode else None
    # The library's own load error, with autoload off so torch itself imports; and whether
    # an NPU is usable (a compile-only host has the runtime and no device).
    env[AUTOLOAD_VAR] = "0"
    proc2 = subprocess.run([sys.executable, "-c", "import torch, torch_rbln; "
                            "print(torch.rbln.is_available())"],
                           capture_output=True, text=True, env=env, timeout=120)
    load_error = _last_error_line(proc2.stderr) if proc2.returncode else None
    npu = proc2.stdout.strip().splitlines()[-1:] == ["True"] if not load_error else None
    available = reason is None and load_error is None
    ctx.environment(
        "rbln.runtime", "available" if available else "unavailable",
        reason=None if available else (load_error or reason),
        fix=None if available else (
            "install rebel-compiler on an RBLN host; elsewhere laya-tui sets "
            f"{AUTOLOAD_VAR}=0 in its workers and uses the portable explain region"),
        detail={"torch_import_with_autoload": import_error or "ok",
                "torch_rbln_import": load_error or "ok",
                "runtime_library": lib.get("path"), "found_via": lib.get("source"),
                "npu_available": npu,
                "worker_autoload_guard": os.environ.get(AUTOLOAD_VAR),
                "version": _version_of("torch-rbln")},
    )
    if not available:
        ctx.environment("rbln.explain", "unavailable",
                        reason="torch.rbln.explain() needs the RBLN runtime; explain probes "
                               "use the portable region")
    elif not npu:
        ctx.environment("rbln.device", "unavailable",
                        reason="torch.rbln.is_available() is False: the runtime loads but no "
                               "NPU is usable (a compile-only host); models stay off 'rbln'")


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errs = [ln for ln in lines if ("Error" in ln or "error" in ln) and ":" in ln]
    picked = [ln for ln in errs if "librbln" in ln or "rebel" in ln]
    return (picked or errs or lines or ["(no output)"])[0][:600]
