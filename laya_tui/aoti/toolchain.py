"""The aoti toolchain facts and the package cache key (worker side, torch imported lazily)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from laya_tui.aoti.targets import Target


class Unwritable(Exception):
    """The package folder cannot be created: the cell fails with this one line."""


class Unavailable(Exception):
    """AOTInductor cannot run here (no compiler, no API, no bf16): a skip with this reason."""


def require_aoti(dtype: str) -> dict[str, Any]:
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


#: What the compiler shim appends when it links a shared object.
SYMBOLIC_FLAG = "-Wl,-Bsymbolic"


def symbolic_compiler(compiler: str, root: Path) -> str | None:
    """A shim around ``compiler`` that links shared objects with ``-Wl,-Bsymbolic``.

    The AOTI wrapper .so instantiates std:: templates (std::regex in parse_device_str) that
    libtorch_cpu.so also exports. Without -Bsymbolic the dynamic linker binds the wrapper's
    calls to libtorch's copies; when the two came from different GCC versions (torch 2.11's
    wheel: GCC 13.3 vs Ubuntu 24.04's g++ 13.3.0) the mixed regex code recurses until the
    stack overflows, so ``aoti_load_package`` segfaults. Linux only; None elsewhere. The
    shim keeps the compiler's basename, which Inductor reads to tell gcc from clang.
    """
    if not sys.platform.startswith("linux"):
        return None
    real = shutil.which(compiler) or compiler
    folder = root / "cxx-bsymbolic"
    path = folder / os.path.basename(real)
    q = shlex.quote(real)
    text = ("#!/bin/sh\n# laya-tui: link AOTI shared objects with -Bsymbolic "
            "(laya_tui/aoti/toolchain.py)\n"
            f'case " $* " in *" -shared "*) exec {q} "$@" {SYMBOLIC_FLAG};; esac\n'
            f'exec {q} "$@"\n')
    try:
        if not path.is_file() or path.read_text() != text:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{path.name}.{os.getpid()}"
            tmp.write_text(text)
            tmp.chmod(0o755)
            os.replace(tmp, path)
    except OSError:
        return None
    return str(path)


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


def weights_digest(model: Any) -> str:
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


def cache_key(target: Target, model: Any, env: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(model source hash, weights, config, torch version, dtype) -> ``(hex key, parts)``."""
    parts = {
        "sources": {os.path.basename(p): _file_digest(p) for p in target.sources},
        "weights": weights_digest(model), "config": target.config, "dtype": target.dtype,
        "torch": env["torch"], "transformers": env.get("transformers"),
        "machine": env["machine"], "python": ".".join(env["python"].split(".")[:2]),
    }
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest(), parts
