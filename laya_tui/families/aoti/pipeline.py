"""export -> aoti_compile_and_package -> aoti_load_package (fresh process and warm) -> compare.

Worker side: torch is imported inside the functions. Every step's time, the package size,
latencies and numeric deltas go out as signals and into ``results.json`` beside the
package. A failing step is a result: a ``log`` signal naming the step, exception, first
meaningful line and call site; the steps that do not depend on it still run.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from laya_tui.families.aoti.compare import compare_heads, compare_latency
from laya_tui.families.aoti.exported import input_spec, mixed_dtype_matmuls, specialised
from laya_tui.families.aoti.failure import StepFailure, describe, describe_remote
from laya_tui.families.aoti.load import KEY_KEY, SPEC_KEY, check_shapes, encode_metadata
from laya_tui.families.aoti.measure import (
    call,
    flat_outputs,
    output_names,
)
from laya_tui.families.aoti.records import (
    EagerReference,
    InductorConfig,
    InputSpec,
    MixedMatmul,
    ResultsDoc,
    ShapeResult,
    StepBox,
)
from laya_tui.families.aoti.results import (
    PACKAGE_NAME,
    RESULTS_NAME,
    RESULTS_SCHEMA_ID,
    cell_dir,
    prune_old,
    read_results,
    write_results,
)
from laya_tui.families.aoti.targets import Inputs, Target
from laya_tui.families.aoti.toolchain import (
    Unavailable,
    Unwritable,
    aoti_compiler,
    cache_key,
    isa_probe_note,
    require_aoti,
)

if TYPE_CHECKING:
    from laya_tui.families.explain.records import Recompile
    from laya_tui.families.probe_context import ProbeContext

FRESH_TIMEOUT = 300.0
FIX_CONSTANT = ("torch.export bakes non-tensor inputs into the package: export one package "
                "per value, or pass the choice as a tensor (torch.cond / torch.where on it)")


class Pipeline:
    """One cell: its steps, their signals, and its results.json."""

    def __init__(self, ctx: ProbeContext, target: Target, root: Path) -> None:
        self.ctx = ctx
        self.target = target
        self.root = Path(root)
        self.failures: list[StepFailure] = []
        self.mixed: list[MixedMatmul] = []
        #: shape name -> "the package is specialised to mode='sum'; input set 2 passes ..."
        self.specialised: dict[str, list[str]] = {}
        self.results: ResultsDoc = {
            "schema": RESULTS_SCHEMA_ID, "model": target.name, "dtype": target.dtype,
            "steps": {}, "shapes": [], "failures": [], "ok": False, "package": None,
            "package_bytes": None, "input_spec": None,
        }

    # -- reporting helpers ---------------------------------------------------------------
    def fail(self, failure: StepFailure) -> None:
        """Record a failed step: a ``log`` signal and a results.json entry."""
        if self.mixed and "same dtype" in failure.line and self.mixed[0].get("site"):
            if failure.site and failure.site != self.mixed[0]["site"]:
                failure.detail.setdefault("runtime_site", failure.site)
            failure.site = self.mixed[0]["site"]
        self.failures.append(failure)
        self.results["failures"].append(failure.as_dict())
        self.results["steps"].setdefault(failure.step, {"ok": False})["ok"] = False
        self.ctx.signal("log", subject=failure.step, reason=failure.line, site=failure.site,
                        fix=failure.fix, detail={"step": failure.step,
                                                 "exception": failure.exception,
                                                 "text": failure.text[-6000:],
                                                 **failure.detail})

    @contextlib.contextmanager
    def step(self, name: str, **detail: Any) -> Iterator[StepBox]:
        """Run a block as step ``name``; an exception becomes a failure, not a crash."""
        box: StepBox = {"ok": False}
        self.ctx.step(name)  # a timeout's reason names it
        t0 = time.perf_counter()
        try:
            yield box
            box["ok"] = True
        except Exception as exc:  # noqa: BLE001 - every step failure is reported
            self.fail(describe(name, exc, **detail))
        finally:
            box["seconds"] = time.perf_counter() - t0

    # -- main ----------------------------------------------------------------------------
    def run(self) -> ResultsDoc:
        """Every step; returns results.json's content (also written beside the package)."""
        import torch

        t = self.target
        env = require_aoti(t.dtype)
        self.results["environment"] = env
        self.ctx.environment("aoti/toolchain", env["torch"], detail=env)
        for src in t.sources:
            self.ctx.depends_on(src)
        model = t.build()
        key, parts = cache_key(t, model, env)
        self.results.update(key=key, cache_parts=parts,
                            limits={"logits": t.limit, "probs": t.limit,
                                    "scaled_by": "max(1, max|reference|)"})
        cdir = cell_dir(self.root, t.name, key)
        try:
            cdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Unwritable(f"cannot write packages under {self.root}: {exc.strerror or exc}"
                             " (pass --out DIR)") from exc
        package = cdir / PACKAGE_NAME
        self.results["package"] = str(package)
        self.results["removed_old"] = prune_old(self.root, t.name, cdir)

        spec = self.build_package(model, package, cdir, key)
        shapes = []
        if spec is not None:
            shapes = self.shapes_in_range(spec)
        fresh = self.load_fresh(package, shapes) if spec is not None else None
        compiled = self.load_warm(package) if spec is not None else None
        ref_model = t.reference(model)
        per_shape: dict[str, ShapeResult] = {
            name: {"name": name, "dims": dims, "heads": {}, "latency": {}, "ratios": {}}
            for name, _, dims in shapes}
        self.results["shapes"] = list(per_shape.values())
        refs, same = self.eager_outputs(model, ref_model, shapes)
        warm = self.warm_outputs(compiled, shapes) if compiled is not None else {}
        cmodel = self.compile_model(model, shapes)
        by_compile = self.compiled_outputs(cmodel, shapes) if cmodel is not None else {}
        compare_heads(self, shapes, per_shape, refs, same, fresh, warm, by_compile)
        self.gap_tables(model, ref_model, shapes, per_shape, fp32=bool(same)
                        or t.dtype == "fp32")
        compare_latency(self, model, compiled, cmodel, by_compile, shapes, per_shape)
        torch._dynamo.reset()

        self.results["ok"] = not self.failures and all(
            h["passed"] for s in per_shape.values() for h in s["heads"].values())
        results_path = cdir / RESULTS_NAME
        if not write_results(results_path, self.results):
            self.ctx.log("results.json written without schema validation: jsonschema is not"
                         " installed (pip install 'jsonschema>=4.18')", subject="results")
        self.ctx.artifact("results.json", results_path)
        return self.results

    # -- export + package ------------------------------------------------------------------
    def build_package(self, model: Any, package: Path, cdir: Path, key: str
                      ) -> InputSpec | None:
        """Export and package, or reuse the cached package; returns the input spec."""
        t0 = time.perf_counter()
        prev = read_results(cdir / RESULTS_NAME)
        steps = (prev or {}).get("steps", {})
        if (package.is_file() and prev and prev.get("key") == key
                and steps.get("package", {}).get("ok") and prev.get("input_spec")):
            lookup = time.perf_counter() - t0
            for name in ("export", "package"):
                built = dict(steps.get(name) or {})
                self.results["steps"][name] = {**built, "ok": True, "cached": True,
                                               "seconds": lookup,
                                               "built_seconds": built.get("built_seconds",
                                                                          built.get("seconds"))}
            self.results["export_graph"] = prev.get("export_graph")
            cached_spec: InputSpec = prev["input_spec"]
            self.results["input_spec"] = cached_spec
            self.mixed = prev.get("mixed_dtype") or []
            self.results["mixed_dtype"] = self.mixed
            self.ctx.timing("export", lookup, detail={"cached": True, **(prev.get(
                "export_graph") or {}), "built_seconds": steps.get("export", {}).get("seconds")})
            self.report_mixed()
            self.ctx.timing("package", lookup, detail={
                "cached": True, "built_seconds": self.results["steps"]["package"]["built_seconds"],
                "key": key})
            self.report_package(package, cached=True)
            return cached_spec

        import torch

        ep = None
        with self.step("export") as box:
            dyn = self.target.dynamic_shapes(model)
            args, kwargs = self.target.example
            with torch.no_grad():
                ep = torch.export.export(model, tuple(args), dict(kwargs), dynamic_shapes=dyn)
        self.results["steps"]["export"] = {"ok": box["ok"], "seconds": box["seconds"],
                                           "cached": False}
        if ep is None:
            return None
        try:
            spec = input_spec(ep, self.target.example, self.target.dim_names)
        except Exception as exc:  # noqa: BLE001 - an odd input structure: no range checks
            self.ctx.log(f"exported ranges unreadable ({type(exc).__name__}: {exc}); "
                         "shapes are not checked before running", subject="export")
            spec = {"inputs": [], "unreadable": True}
        self.results["input_spec"] = spec
        graph_path = cdir / "exported_graph.py"
        code = ep.graph_module.print_readable(print_output=False)
        graph_path.write_text(code)
        nodes = [n for n in ep.graph.nodes if n.op == "call_function"]
        graph = {"nodes": len(nodes), "ops": len({str(n.target) for n in nodes}),
                 "graph_chars": len(code),
                 "ranges": {str(k): [str(v.lower), str(v.upper)]
                            for k, v in ep.range_constraints.items()}}
        self.results["export_graph"] = graph
        self.ctx.timing("export", box["seconds"], detail={"cached": False, **graph})
        self.ctx.artifact("exported-graph", graph_path, detail={"nodes": graph["nodes"]})
        self.mixed = mixed_dtype_matmuls(ep)
        self.results["mixed_dtype"] = [{k: v for k, v in m.items() if k != "trace"}
                                       for m in self.mixed]
        self.report_mixed()

        tmp = package.with_name(f"partial-{os.getpid()}-{package.name}")
        configs: InductorConfig = {"aot_inductor.metadata": {
            SPEC_KEY: encode_metadata(spec), KEY_KEY: encode_metadata(key)}}
        compiler, note = aoti_compiler(self.results["environment"]["compiler"])
        if note is not None:
            configs["cpp.cxx"] = (None, compiler)
            self.results["compiler_note"] = note
            self.ctx.log(note, subject="package", detail={"compiler": compiler})
        with self.step("package") as box:
            torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp),
                                                     inductor_configs=configs)
            os.replace(tmp, package)
        self.results["steps"]["package"] = {"ok": box["ok"], "seconds": box["seconds"],
                                            "cached": False}
        if not box["ok"]:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return None
        self.ctx.timing("package", box["seconds"], detail={"cached": False, "key": key})
        self.report_package(package, cached=False)
        return spec

    def report_mixed(self) -> None:
        for m in self.mixed:
            self.ctx.signal("cast", subject=m["op"], count=len(m["nodes"]), site=m.get("site"),
                            reason=f"mixed-dtype matmul: {' x '.join(m['dtypes'])}",
                            fix="cast the odd input to the weight's dtype before this op",
                            detail={"nodes": m["nodes"], "dtypes": m["dtypes"]})

    def report_package(self, package: Path, *, cached: bool) -> None:
        size = package.stat().st_size
        self.results["package_bytes"] = size
        self.ctx.artifact("package", package, bytes=size, detail={"cached": cached})

    def shapes_in_range(self, spec: InputSpec) -> list[tuple[str, Inputs, dict[str, int]]]:
        """The target's shapes, dropping (and logging) any the exported ranges refuse."""
        from laya_tui.families.aoti.load import ShapeError, flat_tensors

        keep = []
        for k, (name, inputs, dims) in enumerate(self.target.shapes(spec)):
            label = f"input set {k + 1}" if name == f"set{k + 1}" else f"shape {name}"
            for text in specialised(spec, inputs, label):
                self.specialised.setdefault(name, []).append(text)
                self.ctx.log(text, subject=f"shape[{name}]", fix=FIX_CONSTANT,
                             detail={"specialised": True})
            if spec.get("unreadable"):
                keep.append((name, inputs, dims))
                continue
            flat = flat_tensors(*inputs)
            try:
                check_shapes(spec, [tuple(x.shape) for x in flat], [str(x.dtype) for x in flat],
                             what=f"shape {name}")
                keep.append((name, inputs, dims))
            except ShapeError as exc:
                self.ctx.log(str(exc), subject=f"shape[{name}]")
        return keep

    # -- loading ---------------------------------------------------------------------------
    def load_fresh(self, package: Path, shapes: list[tuple[str, Inputs, dict[str, int]]]
                   ) -> dict[str, list[Any]] | None:
        """``python -m laya_tui.families.aoti.load`` in a new process: its outputs per shape."""
        import torch

        from laya_tui.families.rbln_status import guard_autoload

        env = dict(os.environ)
        guard_autoload(env)
        # the folder holding laya_tui/ as imported (not resolved: under --env it is a
        # folder with only a link to laya_tui, never laya-tui's own site-packages)
        src_root = str(Path(os.path.abspath(__file__)).parents[3])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH")) if p)
        with tempfile.TemporaryDirectory(prefix="laya-aoti-") as tmp:
            inputs_path, result_path = os.path.join(tmp, "inputs.pt"), os.path.join(tmp, "out.pt")
            torch.save({"shapes": [{"name": n, "args": list(i[0]), "kwargs": i[1]}
                                   for n, i, _ in shapes]}, inputs_path)
            cmd = [sys.executable, "-m", "laya_tui.families.aoti.load", str(package), inputs_path,
                   "--result", result_path]
            for mod in self.target.forbid:
                cmd += ["--forbid", mod]
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                                      timeout=FRESH_TIMEOUT, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired as exc:
                self.fail(describe_remote("load-fresh", None, str(exc.stderr or ""), None,
                                          process="fresh"))
                return None
            wall = time.perf_counter() - t0
            result = (torch.load(result_path, weights_only=True)
                      if os.path.isfile(result_path) else None)
        error = (result or {}).get("error")
        if result is None or error:
            failure = describe_remote("load-fresh", error, proc.stderr, proc.returncode,
                                      process="fresh", shape=(error or {}).get("shape"))
            self.fail(failure)
            if result is None or "load_seconds" not in result:
                return None
        detail = {"process_seconds": round(wall, 4),
                  "import_seconds": round(result["import_seconds"], 4),
                  "loader_import_seconds": round(result.get("loader_import_seconds", 0.0), 4),
                  "isa_probe_seconds": round(result.get("isa_probe_seconds", 0.0), 4),
                  "first_run_seconds": {k: round(v, 6) for k, v in
                                        result["first_run_seconds"].items()},
                  "model_code_imported": result.get("forbidden_imported", []),
                  "isa": result["metadata"].get("AOTI_CPU_ISA"),
                  "threads": result.get("threads")}
        self.results["steps"]["load-fresh"] = {"ok": not error, "seconds": result["load_seconds"],
                                               **detail}
        self.ctx.timing("load-fresh", result["load_seconds"], detail=detail)
        note = isa_probe_note(detail["isa_probe_seconds"], result["load_seconds"])
        if note:
            self.ctx.log(note, subject="load-fresh")
        if result.get("forbidden_imported"):
            self.ctx.log("the fresh process imported model code: "
                         + ", ".join(result["forbidden_imported"]), subject="load-fresh")
        return None if error else result["outputs"]

    def load_warm(self, package: Path) -> Any:
        """``aoti_load_package`` in this (warm) process."""
        import torch

        from laya_tui.families.aoti.load import isa_probe_seconds

        compiled = None
        # Packaging already ran inductor's CPU-ISA probe; a cached run has not, so run it
        # first and keep it out of the warm figure.
        isa = isa_probe_seconds()
        with self.step("load-warm", process="warm") as box:
            compiled = torch._inductor.aoti_load_package(str(package))
        self.results["steps"]["load-warm"] = {"ok": box["ok"], "seconds": box["seconds"],
                                              "isa_probe_seconds": isa}
        if box["ok"]:
            self.ctx.timing("load-warm", box["seconds"],
                            detail={"isa_probe_seconds": round(isa, 4)})
        return compiled

    # -- outputs -----------------------------------------------------------------------------
    def gap_tables(self, model: Any, ref_model: Any,
                   shapes: list[tuple[str, Inputs, dict[str, int]]],
                   per_shape: dict[str, ShapeResult], *, fp32: bool) -> None:
        """After the verdicts, for a cell compared with fp32 eager: each input set's gap
        table where its heads failed (or every set with ``--numerics``), the model's
        modules compiled one by one by Inductor standing in for the package. A set whose
        failure is the package's specialisation on a constant input gets none (no module
        makes that error)."""
        from laya_tui.families.explain.gap_table import AOTI, table_after_verdict, wanted

        if not fp32:
            return
        todo = [(name, inputs, all(h["passed"] for h in per_shape[name]["heads"].values()))
                for name, inputs, _ in shapes
                if per_shape[name]["heads"] and name not in self.specialised]
        todo = [x for x in todo if wanted(self.ctx.options, x[2])]
        if not todo:
            return
        import copy

        from laya_tui.families.aoti.targets import OnHost

        # the reference stays eager while the model's modules are compiled; off the CPU it
        # is the fp32 model on the host, called with the inputs moved there
        host = isinstance(ref_model, OnHost)
        reference = ref_model.model if host else (
            ref_model if ref_model is not model else copy.deepcopy(model))
        for name, inputs, passed in todo:
            def forward(m: Any, i: Inputs = inputs) -> Any:
                return call(m, i)

            def forward_reference(r: Any, i: Inputs = inputs) -> Any:
                return call(OnHost(r) if host else r, i)

            table_after_verdict(self.ctx, f"outputs[{name}]", {"passed": passed},
                                model=model, reference=reference, forward=forward,
                                forward_reference=forward_reference, path=AOTI)

    def eager_outputs(self, model: Any, ref_model: Any,
                      shapes: list[tuple[str, Inputs, dict[str, int]]]
                      ) -> tuple[dict[str, EagerReference], dict[str, list[Any]]]:
        """fp32 eager reference outputs, and the model's own (same-dtype) eager outputs."""
        refs: dict[str, EagerReference] = {}
        same: dict[str, list[Any]] = {}
        with self.step("eager") as box:
            for name, inputs, _ in shapes:
                out = call(ref_model, inputs)
                refs[name] = (flat_outputs(out), output_names(out, self.target.heads))
        if ref_model is not model:
            with self.step("eager", dtype=self.target.dtype) as box2:
                for name, inputs, _ in shapes:
                    same[name] = flat_outputs(call(model, inputs))
            box["ok"] = box["ok"] and box2["ok"]
        self.results["steps"]["eager"] = {"ok": box["ok"], "seconds": box["seconds"]}
        return refs, same

    def warm_outputs(self, compiled: Any, shapes: list[tuple[str, Inputs, dict[str, int]]]
                     ) -> dict[str, list[Any]]:
        """The package's outputs in this process, per shape (stops at the first error)."""
        outs: dict[str, list[Any]] = {}
        for name, inputs, _ in shapes:
            with self.step("run", process="warm", shape=name) as box:
                outs[name] = flat_outputs(call(compiled, inputs))
            if not box["ok"]:
                break
        return outs

    def compiled_outputs(self, cmodel: Any, shapes: list[tuple[str, Inputs, dict[str, int]]]
                         ) -> dict[str, list[Any]]:
        """torch.compile's outputs per shape; a recompile on a shape becomes a signal, sited
        at the compiled function in the user's code (with the user stack)."""
        from laya_tui.families.explain.dynamo_watch import DynamoWatch

        outs: dict[str, list[Any]] = {}
        recompiled: dict[str, list[Recompile]] = {}
        spent: dict[str, float] = {}
        for name, inputs, _ in shapes:
            watch = DynamoWatch().start()
            try:
                with self.step("run", process="torch.compile", shape=name) as box:
                    outs[name] = flat_outputs(call(cmodel, inputs))
            finally:
                watch.stop()
            found = watch.recompiles()
            if box["ok"] and found:
                recompiled[name] = found[:5]
                spent[name] = box["seconds"]
        step = self.results["steps"].setdefault("compile", {"ok": True})
        step["recompiled_on"] = {k: [r["reason"] for r in v] for k, v in recompiled.items()}
        # a recompile is a second full compile: its seconds are torch.compile's work too
        step["recompile_seconds"] = spent
        for name, found in recompiled.items():
            first = found[0]
            self.ctx.signal("recompile", subject="torch.compile", count=1,
                            reason=first["reason"][:300], seconds=round(spent[name], 6),
                            site=first["site"],
                            detail={"shape": name, "guard_failures": [r["guard"] for r in found],
                                    "frame": first["subject"], "stack": first["stack"]})
        return outs

    def compile_model(self, model: Any, shapes: list[tuple[str, Inputs, dict[str, int]]]
                      ) -> Any:
        """``torch.compile(model, dynamic=True)``; the first call's seconds is the compile."""
        import torch

        if not shapes:
            return None
        torch._dynamo.reset()
        cmodel = None
        with self.step("compile") as box:
            cmodel = torch.compile(model, dynamic=True)
            call(cmodel, shapes[0][1])
        self.results["steps"]["compile"] = {"ok": box["ok"], "seconds": box["seconds"]}
        if not box["ok"]:
            return None
        self.ctx.timing("compile", box["seconds"], detail={"mode": "dynamic=True",
                                                           "first_shape": shapes[0][0]})
        return cmodel


def run_target(ctx: ProbeContext, target: Target, out: str | None) -> ResultsDoc:
    """Run one cell end to end; skip when AOTInductor cannot run, fail on a failed step."""
    from laya_tui.core.files import artifact_dir

    pipe = Pipeline(ctx, target, Path(artifact_dir({**ctx.options, "out": out}, "aoti")))
    try:
        results = pipe.run()
    except Unavailable as exc:
        ctx.skip(str(exc))
        raise  # unreachable: skip raises
    except Unwritable as exc:
        ctx.fail(str(exc))
        raise  # unreachable: fail raises
    if pipe.failures:
        first = pipe.failures[0]
        ctx.fail(f"{first.step} failed: {first.exception}: {first.line}")
    return results

