"""The aoti toolchain facts and the package cache key (worker side, torch imported lazily)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from laya_tui.families.aoti.records import KeyParts, Toolchain
from laya_tui.families.aoti.targets import Target

if TYPE_CHECKING:
    import torch


class Unwritable(Exception):
    """The package folder cannot be created: the cell fails with this one line."""


class Unavailable(Exception):
    """AOTInductor cannot run here (no compiler, no API, no bf16): a skip with this reason."""


def require_aoti(dtype: str) -> Toolchain:
    """Facts about the toolchain, or :class:`Unavailable` with the reason and a hint."""
    try:
        import torch
    except ImportError as exc:
        raise Unavailable(f"torch not installed ({exc}): pip install 'laya-tui[torch]'") from exc
    import torch._inductor as inductor

    if not (hasattr(inductor, "aoti_compile_and_package")
            and hasattr(inductor, "aoti_load_package")):
        raise Unavailable(f"torch {torch.__version__} has no AOTInductor packaging API "
                          "(aoti_compile_and_package): install torch>=2.6")
    from torch._inductor import cpp_builder

    try:
        compiler = cpp_builder.get_cpp_compiler()
    except Exception as exc:  # noqa: BLE001 - InvalidCxxCompiler and friends
        raise Unavailable(f"no working C++ compiler for AOTInductor ({type(exc).__name__}): "
                          "install g++ or clang++, or set CXX") from exc
    version = _compiler_version(compiler)
    if dtype == "bf16":
        try:
            a = torch.ones((4, 4), dtype=torch.bfloat16)
            (a @ a).sum().item()
        except Exception as exc:  # noqa: BLE001
            raise Unavailable(f"bf16 matmul does not run on this platform: {exc}") from exc
    try:
        import transformers

        tf_version: str | None = transformers.__version__
    except ImportError:
        tf_version = None
    native_bf16 = bool(getattr(torch.backends.mkldnn, "is_available", lambda: False)()
                       and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return {
        "python": platform.python_version(), "torch": torch.__version__,
        "transformers": tf_version, "platform": platform.platform(),
        "machine": platform.machine(), "cpu": _cpu_model(), "cores": os.cpu_count(),
        "threads": torch.get_num_threads(), "compiler": compiler, "compiler_version": version,
        "native_bf16": native_bf16, "loadavg": _loadavg(),
    }


_PROBE_SRC = "#include <string>\nstd::string laya_probe() { return std::string(40, 'x'); }\n"


@functools.cache  # one probe build per compiler and worker, not one per packaged cell
def static_libstdcxx(compiler: str) -> bool | None:
    """Whether ``compiler -shared`` links libstdc++ statically into a shared object.

    Such a .so carries a second libstdc++; loaded into torch (which uses the system's),
    std::locale facets from one copy meet code from the other, and the AOTI wrapper's
    std::regex (parse_device_str) fails at load: a segfault on torch 2.11, "create_func_
    ... API call failed" on 2.13. None when it cannot be told (no readelf, build failed).
    """
    readelf = shutil.which("readelf")
    if not readelf or not sys.platform.startswith("linux"):
        return None
    with tempfile.TemporaryDirectory(prefix="laya-cxx-") as tmp:
        src, lib = Path(tmp) / "probe.cpp", Path(tmp) / "probe.so"
        src.write_text(_PROBE_SRC)
        try:
            subprocess.run([compiler, "-shared", "-fPIC", str(src), "-o", str(lib)],
                           capture_output=True, timeout=120, check=True)
            out = subprocess.run([readelf, "-d", str(lib)], capture_output=True, text=True,
                                 timeout=30, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            return None
    return "libstdc++" not in out and "libc++" not in out


def _candidates(compiler: str) -> list[str]:
    """Other C++ compilers of the same family: every one on PATH, then /usr/bin's."""
    names = ["clang++", "c++"] if "clang" in os.path.basename(compiler) else ["g++", "c++"]
    found: list[str] = []
    for name in names:
        for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin"]:
            path = os.path.join(d, name)
            if os.access(path, os.X_OK) and path not in found:
                found.append(path)
    same = os.path.realpath(shutil.which(compiler) or compiler)
    return [p for p in found if os.path.realpath(p) != same]


def aoti_compiler(compiler: str) -> tuple[str, str | None]:
    """The compiler to build AOTI packages with, and a note when it is not ``compiler``.

    A compiler (wrapper) that links libstdc++ statically gives packages that cannot load
    (:func:`static_libstdcxx`); then the first other compiler that links it dynamically
    is used instead. Inductor tells gcc from clang by the name, which a path keeps.
    """
    if not static_libstdcxx(compiler):
        return compiler, None
    why = (f"{compiler} links libstdc++ statically into shared objects: an AOTI package "
           "built with it carries a second libstdc++ and fails to load (std::regex in "
           "parse_device_str)")
    for cand in _candidates(compiler):
        if static_libstdcxx(cand) is False:
            return cand, f"{why}; using {cand}"
    return compiler, f"{why}; no other C++ compiler found that links it dynamically"


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _compiler_version(compiler: str) -> str:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return (out.splitlines() or [""])[0].strip()[:200]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 over every state_dict entry's name, dtype, shape and bytes."""
    import torch

    h = hashlib.sha256()
    state = model.state_dict() if hasattr(model, "state_dict") else {}
    for name in sorted(state):
        t = state[name]
        if not isinstance(t, torch.Tensor):
            continue
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        flat = t.detach().to("cpu").contiguous().reshape(-1)
        if flat.numel():
            h.update(flat.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "missing"


def cache_key(target: Target, model: torch.nn.Module, env: Toolchain) -> tuple[str, KeyParts]:
    """(model source hash, weights, config, torch version, dtype) -> ``(hex key, parts)``."""
    parts: KeyParts = {
        "sources": {os.path.basename(p): _file_digest(p) for p in target.sources},
        "weights": weights_digest(model), "config": target.config, "dtype": target.dtype,
        "torch": env["torch"], "transformers": env.get("transformers"),
        "machine": env["machine"], "python": ".".join(env["python"].split(".")[:2]),
    }
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest(), parts


#: A fresh load whose CPU vector-ISA probe takes longer than this, and most of the load,
#: gets a note saying where the time went.
ISA_NOTE_SECONDS = 2.0


def isa_probe_note(isa_seconds: float, load_seconds: float) -> str | None:
    """Why a fresh ``aoti_load_package`` was slow, when inductor's ISA probe was most of it.

    ``aoti_load_package`` calls ``pick_vec_isa()`` for every package, CUDA ones included.
    torch 2.11 checks each candidate ISA in a child Python that imports torch (measured on
    the H200 host: 10 children at 3-4.5 s each, every process, cached builds or not);
    torch 2.13 loads the probe library without importing torch (0.3 s here).
    """
    if isa_seconds < ISA_NOTE_SECONDS or isa_seconds < 0.5 * load_seconds:
        return None
    return (f"{isa_seconds:.1f} s of the {load_seconds:.1f} s load is inductor's CPU ISA probe"
            " (pick_vec_isa, run by every aoti_load_package, CUDA packages too): torch 2.11"
            " starts one Python child importing torch per candidate ISA; torch 2.13 does not"
            " import torch there (benchmarks/gpu/isa_probe_cost.py shows the split)")
