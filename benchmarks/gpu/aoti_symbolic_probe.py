"""Reproduce the torch 2.11 AOTI load segfault and check laya-tui's fix (GPU host run).

A tiny Linear model is packaged twice, plainly and through laya-tui's compiler shim
(``laya_tui.aoti.toolchain.symbolic_compiler``, which links the wrapper .so with
-Wl,-Bsymbolic), and each package is loaded in a fresh process. On the H200 host (torch
2.11.0+cu130, g++ 13.3.0) the plain package segfaulted in std::regex inside
parse_device_str and the shimmed one loaded.
"""

import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def load(path: str) -> None:
    m = torch._inductor.aoti_load_package(path)
    print("loaded; out", tuple(m(torch.randn(4, 16)).shape), flush=True)


def dynamic_section(path: str, tmp: str) -> str:
    d = tempfile.mkdtemp(dir=tmp)
    zipfile.ZipFile(path).extractall(d)
    so = next(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".so"))
    out = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
    return "\n".join(ln for ln in out.splitlines() if "NEEDED" in ln or "SYMBOLIC" in ln)


def main() -> None:
    from laya_tui.aoti.toolchain import symbolic_compiler

    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Softmax(-1)).eval()
    ep = torch.export.export(model, (torch.randn(4, 16),))
    tmp = tempfile.mkdtemp()
    shim = symbolic_compiler("g++", Path(tmp))
    print("torch", torch.__version__, "shim", shim, flush=True)
    for name, configs in (("plain", {}), ("bsymbolic", {"cpp.cxx": (None, shim)})):
        path = os.path.join(tmp, name + ".pt2")
        t0 = time.time()
        torch._inductor.aoti_compile_and_package(ep, package_path=path,
                                                 inductor_configs=configs)
        print(name, "packaged in", round(time.time() - t0, 1), "s", flush=True)
        print(dynamic_section(path, tmp), flush=True)
        p = subprocess.run([sys.executable, __file__, path], capture_output=True, text=True,
                           timeout=120)
        print(name, "fresh load rc", p.returncode, (p.stdout + p.stderr)[-600:], flush=True)


if __name__ == "__main__":
    load(sys.argv[1]) if len(sys.argv) > 1 else main()
