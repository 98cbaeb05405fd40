"""Where inductor's CPU vector-ISA probe spends its time in one process.

``aoti_load_package`` calls ``pick_vec_isa()`` (``get_device_information``) even for a
CUDA package; the probe compiles a tiny program per candidate ISA into the inductor
cache and dlopens each result in a child Python. laya-tui's aoti cell reports the
probe as ``isa_probe_seconds``; on the H200 host it took 40-54 s per process. This
script times the compiles and the child processes separately, in a fresh process:

    python benchmarks/gpu/isa_probe_cost.py            # the configured compiler
    CXX=/usr/bin/g++ python benchmarks/gpu/isa_probe_cost.py
"""

import os
import subprocess
import sys
import time

import torch
from torch._inductor import cpp_builder, cpu_vec_isa

calls: list[tuple[str, float, str]] = []
inside_compile = False


def timed(kind: str, func):
    def wrapper(*args, **kwargs):
        global inside_compile
        if kind == "child" and inside_compile:  # the compiler itself: counted as compile
            return func(*args, **kwargs)
        inside_compile = kind == "compile"
        t0 = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            inside_compile = False
            what = args[0] if kind == "child" else getattr(args[0], "_name", "")
            calls.append((kind, time.perf_counter() - t0, str(what)[-90:]))
    return wrapper


subprocess.run = timed("child", subprocess.run)
subprocess.check_call = timed("child", subprocess.check_call)
cpp_builder.CppBuilder.build = timed("compile", cpp_builder.CppBuilder.build)

t0 = time.perf_counter()
isa = cpu_vec_isa.pick_vec_isa()
total = time.perf_counter() - t0
print(f"torch {torch.__version__}  CXX={os.environ.get('CXX', '')}  "
      f"cache={os.environ.get('TORCHINDUCTOR_CACHE_DIR', 'default')}")
print(f"pick_vec_isa() -> {isa}  in {total:.2f} s")
for kind in ("compile", "child"):
    spent = [c for c in calls if c[0] == kind]
    print(f"  {kind}: {len(spent)} calls, {sum(c[1] for c in spent):.2f} s")
    for _, sec, what in spent:
        print(f"    {sec:7.2f} s  {what}")
print(f"  other: {total - sum(c[1] for c in calls):.2f} s")
sys.exit(0)
