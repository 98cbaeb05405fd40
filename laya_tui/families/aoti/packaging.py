"""The aoti cell's export and package steps: ``torch.export`` with the target's dynamic
shapes, then ``aoti_compile_and_package`` into the cell's folder, or the package a previous
run built under the same cache key. The exported graph, its input ranges and any
mixed-dtype matmul go out as signals and into results.json. Worker side: torch is imported
inside the functions."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from laya_tui.families.aoti.exported import input_spec, mixed_dtype_matmuls
from laya_tui.families.aoti.load import KEY_KEY, SPEC_KEY, encode_metadata
from laya_tui.families.aoti.records import InductorConfig, InputSpec, ResultsDoc
from laya_tui.families.aoti.results import RESULTS_NAME, read_results
from laya_tui.families.aoti.toolchain import aoti_compiler

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram

    from laya_tui.families.aoti.pipeline import Pipeline


def build_package(pipe: Pipeline, model: torch.nn.Module, package: Path, cdir: Path, key: str
                  ) -> InputSpec | None:
    """Export and package, or reuse the cached package; returns the input spec."""
    t0 = time.perf_counter()
    prev = read_results(cdir / RESULTS_NAME)
    steps = (prev or {}).get("steps", {})
    if (package.is_file() and prev and prev.get("key") == key
            and steps.get("package", {}).get("ok") and prev.get("input_spec")):
        return reuse_cached(pipe, prev, package, key, time.perf_counter() - t0)

    import torch

    ep: ExportedProgram | None = None
    with pipe.step("export") as box:
        dyn = pipe.target.dynamic_shapes(model)
        args, kwargs = pipe.target.example
        with torch.no_grad():
            ep = torch.export.export(model, tuple(args), dict(kwargs), dynamic_shapes=dyn)
    pipe.results["steps"]["export"] = {"ok": box["ok"], "seconds": box["seconds"],
                                       "cached": False}
    if ep is None:
        return None
    try:
        spec = input_spec(ep, pipe.target.example, pipe.target.dim_names)
    except Exception as exc:  # noqa: BLE001 - an odd input structure: no range checks
        pipe.ctx.log(f"exported ranges unreadable ({type(exc).__name__}: {exc}); "
                     "shapes are not checked before running", subject="export")
        spec = {"inputs": [], "unreadable": True}
    pipe.results["input_spec"] = spec
    graph_path = cdir / "exported_graph.py"
    code = ep.graph_module.print_readable(print_output=False)
    graph_path.write_text(code)
    nodes = [n for n in ep.graph.nodes if n.op == "call_function"]
    graph = {"nodes": len(nodes), "ops": len({str(n.target) for n in nodes}),
             "graph_chars": len(code),
             "ranges": {str(k): [str(v.lower), str(v.upper)]
                        for k, v in ep.range_constraints.items()}}
    pipe.results["export_graph"] = graph
    pipe.ctx.timing("export", box["seconds"], detail={"cached": False, **graph})
    pipe.ctx.artifact("exported-graph", graph_path, detail={"nodes": graph["nodes"]})
    pipe.mixed = mixed_dtype_matmuls(ep)
    pipe.results["mixed_dtype"] = [{k: v for k, v in m.items() if k != "trace"}
                                   for m in pipe.mixed]
    report_mixed(pipe)

    tmp = package.with_name(f"partial-{os.getpid()}-{package.name}")
    configs: InductorConfig = {"aot_inductor.metadata": {
        SPEC_KEY: encode_metadata(spec), KEY_KEY: encode_metadata(key)}}
    compiler, note = aoti_compiler(pipe.results["environment"]["compiler"])
    if note is not None:
        configs["cpp.cxx"] = (None, compiler)
        pipe.results["compiler_note"] = note
        pipe.ctx.log(note, subject="package", detail={"compiler": compiler})
    with pipe.step("package") as box:
        torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp),
                                                 inductor_configs=configs)
        os.replace(tmp, package)
    pipe.results["steps"]["package"] = {"ok": box["ok"], "seconds": box["seconds"],
                                        "cached": False}
    if not box["ok"]:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None
    pipe.ctx.timing("package", box["seconds"], detail={"cached": False, "key": key})
    report_package(pipe, package, cached=False)
    return spec


def report_mixed(pipe: Pipeline) -> None:
    """A ``cast`` signal per mixed-dtype matmul of the exported graph."""
    for m in pipe.mixed:
        pipe.ctx.signal("cast", subject=m["op"], count=len(m["nodes"]), site=m.get("site"),
                        reason=f"mixed-dtype matmul: {' x '.join(m['dtypes'])}",
                        fix="cast the odd input to the weight's dtype before this op",
                        detail={"nodes": m["nodes"], "dtypes": m["dtypes"]})


def report_package(pipe: Pipeline, package: Path, *, cached: bool) -> None:
    """The package's size in results.json and its ``artifact`` signal."""
    size = package.stat().st_size
    pipe.results["package_bytes"] = size
    pipe.ctx.artifact("package", package, bytes=size, detail={"cached": cached})


def reuse_cached(pipe: Pipeline, prev: ResultsDoc, package: Path, key: str, lookup: float
                 ) -> InputSpec:
    """The package built earlier under the same key: its steps, graph facts and mixed-dtype
    matmuls from the previous results.json, reported as cached (``lookup`` seconds)."""
    steps = prev.get("steps", {})
    for name in ("export", "package"):
        built = dict(steps.get(name) or {})
        pipe.results["steps"][name] = {**built, "ok": True, "cached": True,
                                       "seconds": lookup,
                                       "built_seconds": built.get("built_seconds",
                                                                  built.get("seconds"))}
    pipe.results["export_graph"] = prev.get("export_graph")
    cached_spec: InputSpec = prev["input_spec"]
    pipe.results["input_spec"] = cached_spec
    pipe.mixed = prev.get("mixed_dtype") or []
    pipe.results["mixed_dtype"] = pipe.mixed
    pipe.ctx.timing("export", lookup, detail={"cached": True, **(prev.get(
        "export_graph") or {}), "built_seconds": steps.get("export", {}).get("seconds")})
    report_mixed(pipe)
    pipe.ctx.timing("package", lookup, detail={
        "cached": True, "built_seconds": pipe.results["steps"]["package"]["built_seconds"],
        "key": key})
    report_package(pipe, package, cached=True)
    return cached_spec
