"""export -> aoti_compile_and_package -> aoti_load_package (fresh process and warm) -> compare.

The export and package steps live in :mod:`laya_tui.families.aoti.packaging`, the
comparisons in :mod:`laya_tui.families.aoti.compare`; this module runs the cell: its steps
in order, loading, the eager / warm / torch.compile outputs and results.json.
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from laya_tui.families.aoti.compare import compare_heads, compare_latency
from laya_tui.families.aoti.exported import specialised
from laya_tui.families.aoti.failure import StepFailure, describe, describe_remote
from laya_tui.families.aoti.load import check_shapes
from laya_tui.families.aoti.measure import (
    call,
    flat_outputs,
    output_names,
)
from laya_tui.families.aoti.packaging import build_package
from laya_tui.families.aoti.records import (
    EagerReference,
    FlatOutputs,
    InputSpec,
    LoadResult,
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
    write_results,
)
from laya_tui.families.aoti.targets import Inputs, Reference, ShapeCase, Target
from laya_tui.families.aoti.toolchain import (
    Unavailable,
    Unwritable,
    cache_key,
    isa_probe_note,
    require_aoti,
)

if TYPE_CHECKING:
    import torch

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
    def step(self, name: str, **detail: object) -> Iterator[StepBox]:
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

        spec = build_package(self, model, package, cdir, key)
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

    def shapes_in_range(self, spec: InputSpec) -> list[ShapeCase]:
        """The target's shapes, dropping (and logging) any the exported ranges refuse."""
        from laya_tui.families.aoti.load import ShapeError, flat_tensors

        keep: list[ShapeCase] = []
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
    def load_fresh(self, package: Path, shapes: list[ShapeCase]
                   ) -> dict[str, FlatOutputs] | None:
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
            result: LoadResult | None = (torch.load(result_path, weights_only=True)
                                         if os.path.isfile(result_path) else None)
        error = result.get("error") if result is not None else None
        if result is None or error:
            failure = describe_remote("load-fresh", error, proc.stderr, proc.returncode,
                                      process="fresh", shape=error.get("shape") if error else None)
            self.fail(failure)
            if result is None or "load_seconds" not in result:
                return None
        isa = round(result.get("isa_probe_seconds", 0.0), 4)
        detail = {"process_seconds": round(wall, 4),
                  "import_seconds": round(result["import_seconds"], 4),
                  "loader_import_seconds": round(result.get("loader_import_seconds", 0.0), 4),
                  "isa_probe_seconds": isa,
                  "first_run_seconds": {k: round(v, 6) for k, v in
                                        result["first_run_seconds"].items()},
                  "model_code_imported": result.get("forbidden_imported", []),
                  "isa": result["metadata"].get("AOTI_CPU_ISA"),
                  "threads": result.get("threads")}
        self.results["steps"]["load-fresh"] = {"ok": not error, "seconds": result["load_seconds"],
                                               **detail}
        self.ctx.timing("load-fresh", result["load_seconds"], detail=detail)
        note = isa_probe_note(isa, result["load_seconds"])
        if note:
            self.ctx.log(note, subject="load-fresh")
        if result.get("forbidden_imported"):
            self.ctx.log("the fresh process imported model code: "
                         + ", ".join(result["forbidden_imported"]), subject="load-fresh")
        return None if error else result["outputs"]

    def load_warm(self, package: Path) -> Callable[..., object] | None:
        """``aoti_load_package`` in this (warm) process."""
        import torch

        from laya_tui.families.aoti.load import isa_probe_seconds

        compiled: Callable[..., object] | None = None
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
    def gap_tables(self, model: torch.nn.Module, ref_model: Reference, shapes: list[ShapeCase],
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
        reference: torch.nn.Module
        if isinstance(ref_model, OnHost):
            reference = ref_model.model
        else:
            reference = ref_model if ref_model is not model else copy.deepcopy(model)
        for name, inputs, passed in todo:
            def forward(m: Callable[..., object], i: Inputs = inputs) -> object:
                return call(m, i)

            def forward_reference(r: torch.nn.Module, i: Inputs = inputs) -> object:
                return call(OnHost(r) if host else r, i)

            table_after_verdict(self.ctx, f"outputs[{name}]", {"passed": passed},
                                model=model, reference=reference, forward=forward,
                                forward_reference=forward_reference, path=AOTI)

    def eager_outputs(self, model: torch.nn.Module, ref_model: Reference, shapes: list[ShapeCase]
                      ) -> tuple[dict[str, EagerReference], dict[str, FlatOutputs]]:
        """fp32 eager reference outputs, and the model's own (same-dtype) eager outputs."""
        refs: dict[str, EagerReference] = {}
        same: dict[str, FlatOutputs] = {}
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

    def warm_outputs(self, compiled: Callable[..., object], shapes: list[ShapeCase]
                     ) -> dict[str, FlatOutputs]:
        """The package's outputs in this process, per shape (stops at the first error)."""
        outs: dict[str, FlatOutputs] = {}
        for name, inputs, _ in shapes:
            with self.step("run", process="warm", shape=name) as box:
                outs[name] = flat_outputs(call(compiled, inputs))
            if not box["ok"]:
                break
        return outs

    def compiled_outputs(self, cmodel: Callable[..., object], shapes: list[ShapeCase]
                         ) -> dict[str, FlatOutputs]:
        """torch.compile's outputs per shape; a recompile on a shape becomes a signal, sited
        at the compiled function in the user's code (with the user stack)."""
        from laya_tui.families.explain.dynamo_watch import DynamoWatch

        outs: dict[str, FlatOutputs] = {}
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

    def compile_model(self, model: torch.nn.Module, shapes: list[ShapeCase]
                      ) -> Callable[..., object] | None:
        """``torch.compile(model, dynamic=True)``; the first call's seconds is the compile."""
        import torch

        if not shapes:
            return None
        torch._dynamo.reset()
        cmodel: Callable[..., object] | None = None
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

