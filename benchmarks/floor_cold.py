"""The plain-script floor of the cold demo run: the library work the demo's cells ask for,
with none of laya-tui's instrumentation (issue 45 item 1).

Usage: .venv/bin/python benchmarks/floor_cold.py [--family F ...] [--jobs N] [--json PATH]

One process per family, as laya-tui's workers run them (``--jobs 2``: two at once), each in
a fresh ``HOME`` and a fresh ``TORCHINDUCTOR_CACHE_DIR`` (no ``XDG_CACHE_HOME``), as
``bench_cold.py`` runs laya-tui, with the intra-op threads laya-tui gives a worker (the
usable cores // jobs, ``OMP_NUM_THREADS``, unless it is set). What each family's process
does, cell by cell, with the demo's models, dtypes, shapes, input sets and settings (read
from probes/*.py and the ``laya_tui.families`` code the cells call):

- ``explain``: per preset (tiny Llama, tiny ModernBERT) x dtype (fp32, bf16) x scenario
  (eager, compile-two-lengths, compile-padded; host-decode for Llama): the model and its
  fp32 reference built; the first call (``torch.compile(model, dynamic=False)`` for the
  compile scenarios: its compile), the warm-up calls and the later call
  :func:`laya_tui.families.explain.explain_steady` makes (width 9 after width 7: the
  recompile), the fp32 reference forward on each compared batch, the masked max |diff|.
- ``aoti``: decision[fp32] and decision[bf16] (bf16,cuda skips without a GPU): build,
  ``torch.export`` with the cell's dynamic shapes, ``aoti_compile_and_package``, load and
  run the four shapes in a fresh process, ``aoti_load_package`` here, the fp32 eager
  reference (and bf16 eager) on each shape, the package's outputs, ``torch.compile(model,
  dynamic=True)`` and its outputs per shape, head deltas, and the cell's latency table
  (eager / compiled / AOTI per shape, the same warm-up and interleaved groups).
- ``tilelang``: per factory kernel x target (c, cuda) x dtype x specialization (the
  ``cpu=True`` cells other than fp32 skip before any work, as the cells do): the factory
  called with its ``example()``, ``tilelang.compile`` with TileLang's default execution
  backend (cython for c, tvm_ffi for cuda at sm_90a, no GPU needed to build), and on the
  CPU the built kernel run on the example's inputs and checked against its reference. A
  stage that fails ends the cell, as it does in laya-tui (its seconds count).
- ``mlx`` (when mlx imports): the encoder cells' MLX forwards (parity shapes, 20 warm
  runs, the torch eager median; the retrace steps; the bucketed streams).

Left out (laya-tui's instrumentation): explain regions (profiler, dispatch hooks), their
re-runs for recurrence and overhead, drift hooks, gap tables, precision plans, the compile
bisector, TORCH_TRACE slices, placement, Dynamo watches, pass logs, the account cells'
file runs, failure artifacts, signals and the report.

Printed: CPU-seconds (whole process tree: ``RUSAGE_SELF`` + ``RUSAGE_CHILDREN`` and the
live descendants) and wall per stage, per cell and per family, and the total. ``--json``
writes the same rows for ``bench_cold.py --floor``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from laya_tui.core.defaults import THREADS_VAR, worker_threads

REPO = Path(__file__).resolve().parents[1]
FAMILIES = ("aoti", "explain", "tilelang", "mlx")
_TICK = os.sysconf("SC_CLK_TCK")


# -- CPU of this process tree -------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, CPU seconds incl. its reaped children) of every process we can read."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read().decode(errors="replace")
        except OSError:
            continue
        f = raw[raw.rfind(")") + 2:].split()
        out[int(name)] = (int(f[1]), sum(int(x) for x in f[11:15]) / _TICK)
    return out


def tree_cpu() -> float:
    """CPU-seconds of this process, its reaped children and its live descendants."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    table = _proc_table()
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _) in table.items():
        children[ppid].append(pid)
    todo = list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        total += table[pid][1]
        todo.extend(children.get(pid, []))
    return total


class Stages:
    """Per (cell, stage): CPU-seconds of the process tree and wall seconds."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.rows: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def stage(self, cell: str, name: str) -> Iterator[None]:
        """Time a stage; an exception is recorded (the cell's verdict) and re-raised."""
        c0, w0 = tree_cpu(), time.perf_counter()
        error = None
        try:
            yield
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            error = f"{type(exc).__name__}: {first}"
            raise
        finally:
            self.rows.append({"family": self.family, "cell": cell, "stage": name,
                              "cpu": round(tree_cpu() - c0, 3),
                              "wall": round(time.perf_counter() - w0, 3), "error": error})


def wanted(cell: str) -> bool:
    """``--cells GLOB`` (``*`` the only wildcard; passed to the family processes as
    ``FLOOR_CELLS``, one glob a line)."""
    import re

    globs = [g for g in os.environ.get("FLOOR_CELLS", "").splitlines() if g]
    return not globs or any(re.fullmatch(re.escape(g).replace(r"\*", ".*"), cell)
                            for g in globs)


def run_cell(stages: Stages, cell: str, body: Callable[[], None]) -> None:
    """One cell; a failing stage ends it (as in laya-tui), the next cell runs."""
    if not wanted(cell):
        return
    try:
        body()
    except Exception:  # noqa: BLE001 - recorded on the stage row
        if os.environ.get("FLOOR_DEBUG"):
            traceback.print_exc()


# -- explain ------------------------------------------------------------------------------


def family_explain(st: Stages) -> None:
    import torch

    from laya_tui import presets
    from probes import explain_models as em

    def diff(out: Any, ref: Any, mask: Any) -> float:
        a = (out.logits if hasattr(out, "logits") else out.last_hidden_state).float()
        b = (ref.logits if hasattr(ref, "logits") else ref.last_hidden_state).float()
        m = mask.bool()[..., None]
        return float(((a - b).abs() * m).max())

    for preset in em.PRESETS:
        for dt in em.DTYPES:
            for sc in em.SCENARIOS + em.PRESET_SCENARIOS.get(preset, ()):
                cell = f"explain/{preset}[{dt},{sc}]"

                def body(preset: str = preset, dt: str = dt, sc: str = sc,
                         cell: str = cell) -> None:
                    build = getattr(presets, preset)
                    with st.stage(cell, "build"):
                        model = build({"fp32": torch.float32, "bf16": torch.bfloat16}[dt])
                        reference = build(None)
                    if sc == "host-decode":
                        batch = presets.token_batch(em.DECODE_ROWS)
                        with st.stage(cell, "forward"):  # cold, 2 warm-up, the warm call
                            for _ in range(4):
                                res = presets.host_greedy_decode(model, batch,
                                                                 steps=em.DECODE_STEPS,
                                                                 device="cpu")
                        width = int(res.logits.shape[1])
                        ids, mask = res.ids[:, :width], res.mask[:, :width]
                        with st.stage(cell, "reference"), torch.no_grad():
                            ref = reference(input_ids=ids, attention_mask=mask)
                        with st.stage(cell, "compare"):
                            diff(res, ref, mask)
                        return
                    pad = em.PAD_TO if sc == "compile-padded" else None
                    batches = [presets.token_batch(r, pad_to=pad)
                               for r in (em.BATCH_A, em.BATCH_B)]
                    fn = model
                    if sc.startswith("compile"):
                        torch._dynamo.reset()
                        fn = torch.compile(model, backend="inductor", dynamic=False)
                    outs: dict[int, Any] = {}

                    def call(i: int) -> None:
                        with torch.no_grad():
                            outs[i] = fn(**batches[i])

                    first, later = (0, 0) if sc == "eager" else (0, 1)
                    with st.stage(cell, "compile" if sc != "eager" else "forward"):
                        call(first)
                    with st.stage(cell, "forward"):
                        for _ in range(2 if sc == "eager" else 1):
                            call(first)
                    with st.stage(cell, "recompile" if sc == "compile-two-lengths"
                                  else "forward"):
                        call(later)
                    refs = {}
                    with st.stage(cell, "reference"), torch.no_grad():
                        for i in sorted(outs):
                            refs[i] = reference(**batches[i])
                    with st.stage(cell, "compare"):
                        for i in sorted(outs):
                            diff(outs[i], refs[i], batches[i]["attention_mask"])
                    if sc.startswith("compile"):
                        torch._dynamo.reset()

                run_cell(st, cell, body)


# -- aoti ---------------------------------------------------------------------------------

#: The fresh process: what ``python -m laya_tui.families.aoti.load`` does, without laya-tui.
FRESH_LOADER = """
import sys, torch, torch._inductor.package
from torch._inductor.cpu_vec_isa import pick_vec_isa
pick_vec_isa()
compiled = torch._inductor.aoti_load_package(sys.argv[1])
out = {}
with torch.no_grad():
    for s in torch.load(sys.argv[2], weights_only=True)["shapes"]:
        out[s["name"]] = compiled(*s["args"], **s["kwargs"])
torch.save(out, sys.argv[3])
"""

#: The latency table's protocol (laya_tui/families/aoti/measure.py).
WARMUP, WARMUP_SECONDS, GROUPS, GROUP_SECONDS, MAX_REPS = 3, 0.5, 5, 0.08, 64


def _latencies(torch: Any, fns: dict[str, Any], kwargs: dict[str, Any]) -> None:
    """Warm-up, then GROUPS interleaved rounds of ~GROUP_SECONDS each per callable."""
    reps = {}
    with torch.no_grad():
        for name, fn in fns.items():
            t0, warm = time.perf_counter(), 0
            while warm < WARMUP and (warm == 0 or time.perf_counter() - t0 < WARMUP_SECONDS):
                fn(**kwargs)
                warm += 1
            t0 = time.perf_counter()
            fn(**kwargs)
            one = max(time.perf_counter() - t0, 1e-7)
            reps[name] = max(1, min(MAX_REPS, int(GROUP_SECONDS / one)))
        means: dict[str, list[float]] = defaultdict(list)
        for _ in range(GROUPS):
            for name, fn in fns.items():
                t0 = time.perf_counter()
                for _ in range(reps[name]):
                    fn(**kwargs)
                means[name].append((time.perf_counter() - t0) / reps[name])
    for m in means.values():
        statistics.median(m)


def family_aoti(st: Stages) -> None:
    import torch

    from laya_tui.families import decision_model as dm

    tmp = tempfile.mkdtemp(prefix="floor-aoti-")
    for dt in ("fp32", "bf16"):
        cell = f"aoti/decision[{dt}]"

        def body(dt: str = dt, cell: str = cell) -> None:
            tdt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dt]
            with st.stage(cell, "build"):
                model = dm.build_decision_model(tdt)
                ref_model = model if dt == "fp32" else dm.build_decision_model(torch.float32)
                example = dm.decision_inputs(dm.EXAMPLE)
                shapes = [(s.name, dm.decision_inputs(s)) for s in dm.SHAPES]
            with st.stage(cell, "export"), torch.no_grad():
                ep = torch.export.export(model, (), example,
                                         dynamic_shapes=dm.dynamic_shapes())
            package = os.path.join(tmp, f"decision-{dt}.pt2")
            with st.stage(cell, "package"):
                torch._inductor.aoti_compile_and_package(ep, package_path=package)
            with st.stage(cell, "load-fresh"):
                inputs, result = os.path.join(tmp, f"in-{dt}.pt"), os.path.join(tmp, f"o-{dt}.pt")
                torch.save({"shapes": [{"name": n, "args": [], "kwargs": k}
                                       for n, k in shapes]}, inputs)
                subprocess.run([sys.executable, "-c", FRESH_LOADER, package, inputs, result],
                               check=True)
                fresh = torch.load(result, weights_only=True)
            with st.stage(cell, "load-warm"):
                compiled = torch._inductor.aoti_load_package(package)
            with st.stage(cell, "eager"), torch.no_grad():
                refs = {n: ref_model(**k) for n, k in shapes}
                same = {n: model(**k) for n, k in shapes} if ref_model is not model else {}
            with st.stage(cell, "run-warm"), torch.no_grad():
                warm = {n: compiled(**k) for n, k in shapes}
            with st.stage(cell, "compile"), torch.no_grad():
                torch._dynamo.reset()
                cmodel = torch.compile(model, dynamic=True)
                cmodel(**shapes[0][1])
            with st.stage(cell, "compiled-run"), torch.no_grad():
                by_compile = {n: cmodel(**k) for n, k in shapes}
            with st.stage(cell, "compare"):
                for n, _ in shapes:
                    for i in range(2):
                        r = refs[n][i].float()
                        for o in (fresh[n][i], warm[n][i], by_compile[n][i],
                                  *([same[n][i]] if same else [])):
                            o = o.float()
                            (o - r).abs().max()
                            (torch.softmax(o, -1) - torch.softmax(r, -1)).abs().max()
            with st.stage(cell, "latency"):
                for _, k in shapes:
                    _latencies(torch, {"eager": model, "compiled": cmodel, "aoti": compiled},
                               k)
            torch._dynamo.reset()

        run_cell(st, cell, body)


# -- tilelang -----------------------------------------------------------------------------

KERNEL_FILES = ("add_ln", "attn", "geglu", "gemm", "rope")  # kernels/, discovery's order
TARGETS, DTYPES, SPECS = ("c", "cuda"), ("float32", "float16", "bfloat16"), ("gpu", "cpu")
LABEL = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
CUDA_TARGET = {"kind": "cuda", "arch": "sm_90a"}  # no GPU here: Hopper, as laya-tui builds


def family_tilelang(st: Stages) -> None:
    import importlib
    import inspect

    import tilelang  # noqa: F401
    import torch
    from tvm.target import Target

    seed = 1234
    for stem in KERNEL_FILES:
        mod = importlib.import_module(f"kernels.{stem}")
        names = [n for n, f in vars(mod).items() if inspect.isfunction(f)
                 and f.__module__ == mod.__name__ and n.endswith("_kernel")]
        for name in names:
            factory = getattr(mod, name)
            for target in TARGETS:
                for dtype in DTYPES:
                    for spec in SPECS:
                        if spec == "cpu" and dtype != "float32":
                            continue  # skipped before any work, as the cell is
                        cell = f"tilelang/{name}[{target},{LABEL[dtype]},{spec}]"

                        def body(factory: Any = factory, target: str = target,
                                 dtype: str = dtype, spec: str = spec, cell: str = cell,
                                 mod: Any = mod) -> None:
                            with st.stage(cell, "trace"):
                                maker = getattr(mod, f"example_{factory.__name__}", None) \
                                    or mod.example
                                ex = maker(seed=seed)
                                func = factory(*ex.args, **ex.kwargs, dtype=dtype,
                                               cpu=spec == "cpu")
                            tgt = Target(CUDA_TARGET if target == "cuda" else target)
                            with st.stage(cell, "lower+build"):
                                kernel = tilelang.compile(func, target=tgt)
                            if target != "c":
                                return  # no GPU: built, not run
                            with st.stage(cell, "run"):
                                tensors = {k: v.clone() for k, v in ex.inputs.items()}
                                kernel(*tensors.values())
                            with st.stage(cell, "compare"):
                                want = ex.reference(dict(ex.inputs))
                                for out, get in ex.outputs.items():
                                    got = get(tensors)
                                    torch.allclose(got.float(), want[out].float(),
                                                   atol=ex.atol.get(out, 1e-5))

                        run_cell(st, cell, body)


# -- mlx ----------------------------------------------------------------------------------


def family_mlx(st: Stages) -> None:
    try:
        import mlx.core  # noqa: F401
    except ImportError:
        return  # the cells skip
    if not any(wanted(f"mlx/encoder[{c}]") for c in ("fp32,eager", "fp32,compiled",
                                                       "fp16,eager", "fp16,compiled",
                                                       "fp32,retrace", "fp32,bucketed")):
        return
    import torch

    from laya_tui import presets
    from laya_tui.families.mlx.encoder import MlxEncoder, timed_forward
    from probes import mlx_forward as mf

    model = None

    def ref(batch: dict[str, Any]) -> Any:
        with torch.no_grad():
            return model(**batch).last_hidden_state

    for dt in ("fp32", "fp16"):
        for compiled in (False, True):
            cell = f"mlx/encoder[{dt},{'compiled' if compiled else 'eager'}]"
            with st.stage(cell, "build"):
                model = presets.tiny_modernbert()
                enc = MlxEncoder.from_torch(model, dt)
            with st.stage(cell, "parity"):
                for lengths in mf.PARITY_LENGTHS:
                    inputs = presets.token_batch(lengths)
                    ref(inputs)
                    timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                  compiled=compiled)
            with st.stage(cell, "warm"):
                inputs = presets.token_batch(mf.PARITY_LENGTHS[-1])
                for _ in range(mf.WARM_RUNS + 1):
                    timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                  compiled=compiled)
            with st.stage(cell, "torch eager"), torch.no_grad():
                for _ in range(mf.WARM_RUNS + 1):
                    model(**inputs)
    cell = "mlx/encoder[fp32,retrace]"
    with st.stage(cell, "build"):
        model = presets.tiny_modernbert()
        enc = MlxEncoder.from_torch(model, "fp32")
    with st.stage(cell, "steps"):
        seen: set[tuple[int, ...]] = set()
        firsts = []
        for _, lengths in mf.RETRACE_STEPS:
            inputs = presets.token_batch(lengths)
            before = len(enc.traces)
            out = timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                compiled=True)
            if len(enc.traces) > before and out[2].shape not in seen:
                seen.add(out[2].shape)
                firsts.append(inputs)
                ref(inputs)
    with st.stage(cell, "warm"):
        for inputs in firsts:
            for _ in range(mf.WARM_RUNS):
                timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                              compiled=True)
    cell = "mlx/encoder[fp32,bucketed]"
    with st.stage(cell, "build"):
        model = presets.tiny_modernbert()
        streams = [presets.token_batch(lengths) for lengths in mf.STREAM]
        [ref(x) for x in streams]
    for bk in (None, 16):
        with st.stage(cell, "stream" + (f" bucket={bk}" if bk else "")):
            enc = MlxEncoder.from_torch(model, "fp32")
            for _ in ("cold", "warm"):
                for inputs in streams:
                    timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                  compiled=True, bucket=bk)


RUNNERS = {"explain": family_explain, "aoti": family_aoti, "tilelang": family_tilelang,
           "mlx": family_mlx}


def worker(family: str, out: str) -> None:
    """One family's process: its stages, written to ``out`` as JSON.

    The repository goes last on ``sys.path``, as laya-tui's worker puts a workspace
    (laya_tui/worker/shadow.py): its ``kernels/`` folder must not shadow the Hugging Face
    ``kernels`` package transformers imports. The TileLang process imports it first."""
    here = {str(REPO), "", "."}
    sys.path[:] = [p for p in sys.path if p not in here]
    if family == "tilelang":
        sys.path.insert(0, str(REPO))
    else:
        sys.path.append(str(REPO))
    st = Stages(family)
    c0, w0 = tree_cpu(), time.perf_counter()
    RUNNERS[family](st)
    Path(out).write_text(json.dumps({"family": family, "rows": st.rows,
                                     "cpu": round(tree_cpu() - c0, 3),
                                     "wall": round(time.perf_counter() - w0, 3)}))


# -- the parent: one process per family ---------------------------------------------------


def run_families(families: list[str], jobs: int, env: dict[str, str] | None = None
                 ) -> dict[str, Any]:
    """Run each family's process (``jobs`` at once); their rows, the tree's CPU and wall."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="laya-floor-") as tmp:
        if env is None:
            home, inductor = Path(tmp) / "home", Path(tmp) / "inductor"
            home.mkdir()
            inductor.mkdir()
            env = dict(os.environ, HOME=str(home), TORCHINDUCTOR_CACHE_DIR=str(inductor),
                       TORCH_DEVICE_BACKEND_AUTOLOAD="0")
            env.pop("XDG_CACHE_HOME", None)
        if not env.get(THREADS_VAR):  # each process's threads as laya-tui gives its workers
            env = dict(env, **{THREADS_VAR: str(worker_threads(jobs))})
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        todo = list(families)
        running: list[tuple[subprocess.Popen[bytes], str, float]] = []
        walls: dict[str, float] = {}
        while todo or running:
            while todo and len(running) < max(1, jobs):
                fam = todo.pop(0)
                path = str(Path(tmp) / f"{fam}.json")
                with open(Path(tmp) / f"{fam}.log", "wb") as log:  # libraries' chatter
                    proc = subprocess.Popen([sys.executable, __file__, "--worker", fam,
                                             "--json", path], cwd=REPO, env=env,
                                            stdout=log, stderr=subprocess.STDOUT)
                running.append((proc, path, time.perf_counter()))
            time.sleep(0.2)
            for item in list(running):
                proc, path, started = item
                if proc.poll() is None:
                    continue
                running.remove(item)
                fam = Path(path).stem
                walls[fam] = time.perf_counter() - started
                if proc.returncode != 0 or not Path(path).is_file():
                    tail = (Path(tmp) / f"{fam}.log").read_text(errors="replace")[-3000:]
                    sys.exit(f"{tail}\nfloor: the {fam} process failed "
                             f"(exit {proc.returncode})")
                results.append(json.loads(Path(path).read_text()))
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    for r in results:
        r["process_wall"] = round(walls[r["family"]], 3)
    return {"cpu": round(cpu, 3), "wall": round(wall, 3), "families": results}


def per_cell(floor: dict[str, Any]) -> dict[str, dict[str, float]]:
    """cell -> {"cpu", "wall"} summed over its stages."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"cpu": 0.0, "wall": 0.0})
    for fam in floor["families"]:
        for r in fam["rows"]:
            out[r["cell"]]["cpu"] += r["cpu"]
            out[r["cell"]]["wall"] += r["wall"]
    return dict(out)


def describe(floor: dict[str, Any], *, cells: bool = True) -> None:
    """Per family, per stage kind and (``cells``) per cell: CPU and wall."""
    print(f"floor: CPU (whole process tree) {floor['cpu']:.1f} s, wall {floor['wall']:.1f} s")
    for fam in floor["families"]:
        staged = sum(r["cpu"] for r in fam["rows"])
        print(f"  {fam['family']}: process CPU {fam['cpu']:.1f} s (stages {staged:.1f} s, "
              f"start-up and imports {fam['cpu'] - staged:.1f} s), wall "
              f"{fam['process_wall']:.1f} s")
        kinds: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        for r in fam["rows"]:
            k = kinds[r["stage"]]
            k[0] += r["cpu"]
            k[1] += r["wall"]
            k[2] += 1
        print("    per stage (CPU / wall s, stages): " + ", ".join(
            f"{s} {c:.1f}/{w:.1f} ({int(n)})" for s, (c, w, n) in
            sorted(kinds.items(), key=lambda x: -x[1][0])))
        failed = [r for r in fam["rows"] if r["error"]]
        if failed:
            print(f"    {len(failed)} cell(s) ended by a failing stage, e.g. "
                  f"{failed[0]['cell']} {failed[0]['stage']}: {failed[0]['error']}")
    if cells:
        print("per cell (CPU s: stage CPU ...):")
        rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for fam in floor["families"]:
            for r in fam["rows"]:
                rows[r["cell"]].append(r)
        for cell, rs in rows.items():
            print(f"  {sum(r['cpu'] for r in rs):7.2f} {cell}: " + ", ".join(
                f"{r['stage']} {r['cpu']:.2f}" + (" (failed)" if r["error"] else "")
                for r in rs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", action="append", choices=FAMILIES, default=[])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--cells", action="append", default=[],
                    help="only cells matching this glob (a smoke test, not the floor)")
    ap.add_argument("--worker", choices=FAMILIES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        if not args.json:
            sys.exit("floor: --worker needs --json")
        worker(args.worker, args.json)
        return
    if args.cells:
        os.environ["FLOOR_CELLS"] = "\n".join(args.cells)
    load0 = os.getloadavg()
    floor = run_families(args.family or list(FAMILIES), args.jobs)
    load1 = os.getloadavg()
    floor["load"] = [list(load0), list(load1)]
    print(f"load average (1/5/15 min) before {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f}, "
          f"after {load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f} on {os.cpu_count()} CPUs")
    describe(floor)
    if args.json:
        Path(args.json).write_text(json.dumps(floor, indent=1))


if __name__ == "__main__":
    main()
