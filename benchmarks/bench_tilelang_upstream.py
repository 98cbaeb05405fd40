"""Upstream-style TileLang kernels: the pass instrumentation's cost and discovery's speed.

Usage: .venv/bin/python benchmarks/bench_tilelang_upstream.py [--parts instrument,discover]
       [--reps N] [--files N] [--json PATH]

All figures come from this one run:

* ``instrument``: per cell (kernels of tests/fixtures/upstream_kernels that lower), the
  seconds of ``tilelang.lower`` under a bare ``PassContext`` against the same call under
  laya-tui's lowering session (TileLang's ``PassTimingTool`` + the IR-reference recorder,
  ``laya_tui.families.tilelang.passlog``), interleaved, median of ``--reps`` each; ratio =
  instrumented / bare (also the ratio of the fastest runs, steadier on a loaded machine).
  Then the one-off cost a failing cell adds: writing the IR before the failing pass, the
  last pass's diff and the timing report (a cell failing in ``tl.LayoutInference``), as a
  ratio to that cell's instrumented lowering.
* ``discover``: ``matrix_cells`` over a folder of ``--files`` upstream-style kernel files
  (copies of the fixtures, each kernel renamed), in a fresh interpreter that must not
  import tilelang, tvm or torch: seconds for the folder and per file (median of ``--reps``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
UP = REPO / "tests" / "fixtures" / "upstream_kernels"
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: (cell, target) lowered in the instrumentation benchmark: they lower successfully.
CELLS = ("scale_serial[c,fp32]", "elementwise_add[cuda,fp32]", "rms_norm.rms_norm[cuda,fp32]")
FAILING = "gemm_autotune[c,bf16]"


def _func(cell: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """(PrimFunc, target, pass config) of a cell, as the matrix builds them."""
    import tilelang  # noqa: F401 - puts its bundled tvm on the path
    from tvm.target import Target

    from laya_tui.families.tilelang.cell_state import KernelCall, cuda_target_spec
    from laya_tui.families.tilelang.modules import find_kernel_object, import_kernel_file
    from laya_tui.families.tilelang.stages import pass_config

    kw = cell["kwargs"]
    mod = import_kernel_file(kw["file"])
    call = KernelCall(obj=kw["obj"], args=dict(kw["args"]),
                      pass_configs=dict(kw.get("pass_configs") or {}))
    func, jit = find_kernel_object(mod, call.obj, call.args)
    if jit is not None:
        call.pass_configs.update({str(getattr(k, "value", k)): v
                                  for k, v in (jit.pass_configs or {}).items()})
    tgt = Target(cuda_target_spec() if kw["target"] == "cuda" else kw["target"])
    return func, tgt, pass_config(call)


def _lower(func: Any, tgt: Any, config: dict[str, Any], instrumented: bool) -> tuple[float, Any]:
    import tilelang

    from laya_tui.families.tilelang.passlog import PassLog, lowering_session

    log = PassLog()
    t0 = time.perf_counter()
    try:
        if instrumented:
            session, instruments = lowering_session("bench", log)
            with session, tilelang.transform.PassContext(opt_level=3, config=config,
                                                         instruments=instruments()), tgt:
                tilelang.lower(func, target=tgt, enable_device_compile=False)
        else:
            with tilelang.transform.PassContext(opt_level=3, config=config), tgt:
                tilelang.lower(func, target=tgt, enable_device_compile=False)
    except Exception:  # noqa: BLE001 - the failing cell
        pass
    return time.perf_counter() - t0, log


def bench_instrument(reps: int) -> dict[str, Any]:
    from laya_tui.families.tilelang.discover import matrix_cells
    from laya_tui.families.tilelang.passlog import write_failure_artifacts

    cells = {f"{c['name']}[{c['id']}]": c for c in matrix_cells({"kernels": [str(UP)]})}
    out: dict[str, Any] = {"cells": {}}
    for cid in CELLS:
        func, tgt, config = _func(cells[cid])
        _lower(func, tgt, config, False)  # warm: first-call costs out of the figures
        bare, inst = [], []
        for _ in range(reps):
            bare.append(_lower(func, tgt, config, False)[0])
            inst.append(_lower(func, tgt, config, True)[0])
        b, i = statistics.median(bare), statistics.median(inst)
        rmin = min(inst) / min(bare)
        out["cells"][cid] = {"bare_s": round(b, 4), "instrumented_s": round(i, 4),
                             "ratio": round(i / b, 3), "ratio_of_minima": round(rmin, 3)}
        print(f"  {cid:40s} bare {b:.3f} s  instrumented {i:.3f} s  ratio {i / b:.3f} "
              f"(of minima {rmin:.3f})")
    func, tgt, config = _func(cells[FAILING])
    _lower(func, tgt, config, True)
    lows, writes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(reps):
            seconds, log = _lower(func, tgt, config, True)
            t0 = time.perf_counter()
            write_failure_artifacts(log, tmp, failing_pass="tl.LayoutInference", message="x")
            writes.append(time.perf_counter() - t0)
            lows.append(seconds)
    lo, wr = statistics.median(lows), statistics.median(writes)
    out["failing"] = {"cell": FAILING, "lower_s": round(lo, 4), "artifacts_s": round(wr, 4),
                      "ratio": round(wr / lo, 3)}
    print(f"  {FAILING:40s} failing lower {lo:.3f} s  + artifacts {wr:.3f} s "
          f"(ratio {wr / lo:.3f})")
    return out


def _make_folder(folder: Path, n: int) -> None:
    """``n`` kernel files: the fixtures in turn, each kernel function renamed."""
    sources = sorted(p for p in UP.glob("*.py"))
    for i in range(n):
        src = sources[i % len(sources)].read_text()
        names = re.findall(r"^def (\w+)\(", src, re.MULTILINE)
        for name in names:
            src = re.sub(rf"\b{name}\b", f"{name}_{i}", src)
        (folder / f"k{i:03d}_{sources[i % len(sources)].name}").write_text(src)


_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from laya_tui.families.tilelang.discover import matrix_cells
t1 = time.perf_counter()
times = []
for _ in range({reps}):
    s = time.perf_counter()
    cells = matrix_cells({{"kernels": [{folder!r}]}})
    times.append(time.perf_counter() - s)
heavy = sorted(m for m in ("tilelang", "tvm", "torch", "numpy") if m in sys.modules)
print(json.dumps({{"import_s": t1 - t0, "times": times, "cells": len(cells),
                  "kernels": len({{c["name"] for c in cells}}), "heavy": heavy}}))
"""


def bench_discover(files: int, reps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        _make_folder(Path(tmp), files)
        proc = subprocess.run([sys.executable, "-c", _CHILD.format(reps=reps, folder=tmp)],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    med = statistics.median(got["times"])
    if got["heavy"]:
        raise SystemExit(f"discovery imported {got['heavy']}")
    print(f"  {files} files, {got['kernels']} kernels, {got['cells']} cells: "
          f"{med * 1000:.1f} ms ({med / files * 1000:.2f} ms per file), no heavy import "
          f"(module import {got['import_s'] * 1000:.1f} ms)")
    return {"files": files, "kernels": got["kernels"], "cells": got["cells"],
            "seconds": round(med, 4), "per_file_ms": round(med / files * 1000, 3),
            "heavy_imports": got["heavy"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="instrument,discover")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    result: dict[str, Any] = {}
    if "discover" in parts:
        print("discovery (fresh interpreter, syntax trees only):")
        result["discover"] = bench_discover(args.files, args.reps)
    if "instrument" in parts:
        print("pass instrumentation (TileLang PassTimingTool + IR recorder) vs bare lower:")
        result["instrument"] = bench_instrument(args.reps)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
