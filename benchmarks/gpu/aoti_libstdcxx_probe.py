"""Reproduce the AOTI load failure of a compiler that links libstdc++ statically, and
check laya-tui's fix (run on the GPU host, or here with CXX pointing at such a wrapper).

The GPU host's image sets CXX to /opt/gcc/bin/g++, a wrapper whose shared links carry
libstdc++ statically. A tiny model is packaged with $CXX and with the compiler
``laya_tui.families.aoti.toolchain.aoti_compiler`` picks, and each package is loaded in a fresh
process. Seen on the H200 host (torch 2.11): the $CXX package segfaults in std::regex
(parse_device_str); with torch 2.13 here, its load raises "create_func_ ... API call
failed". The package linking libstdc++ dynamically loads in both.
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


def needed(path: str, tmp: str) -> list[str]:
    d = tempfile.mkdtemp(dir=tmp)
    zipfile.ZipFile(path).extractall(d)
    so = next(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".so"))
    out = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
    return [ln.split("[")[-1].rstrip("]") for ln in out.splitlines() if "NEEDED" in ln]


def main() -> None:
    from torch._inductor import cpp_builder

    from laya_tui.families.aoti.toolchain import aoti_compiler

    configured = cpp_builder.get_cpp_compiler()
    chosen, note = aoti_compiler(configured)
    print("torch", torch.__version__, "| configured", configured, "| chosen", chosen)
    print("note:", note, flush=True)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Softmax(-1)).eval()
    ep = torch.export.export(model, (torch.randn(4, 16),))
    tmp = tempfile.mkdtemp()
    for name, cxx in (("configured", configured), ("chosen", chosen)):
        path = os.path.join(tmp, name + ".pt2")
        t0 = time.time()
        torch._inductor.aoti_compile_and_package(
            ep, package_path=path, inductor_configs={"cpp.cxx": (None, cxx)})
        print(name, cxx, "packaged in", round(time.time() - t0, 1), "s; NEEDED",
              needed(path, tmp), flush=True)
        p = subprocess.run([sys.executable, __file__, path], capture_output=True, text=True,
                           timeout=120)
        print(name, "fresh load rc", p.returncode, (p.stdout + p.stderr)[-300:], flush=True)
        if chosen == configured:
            break


if __name__ == "__main__":
    load(sys.argv[1]) if len(sys.argv) > 1 else main()
