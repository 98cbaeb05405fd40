"""aoti family, fast part: shape checks, failure descriptions, results schema, cache paths,
import hygiene, and the failures that need no packaging (export error, missing compiler)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import jsonschema
import pytest

from laya_tui.core.protocol import SignalEvent
from laya_tui.core.report_types import SignalDict
from laya_tui.families.aoti.failure import cpp_site, first_meaningful_line, fix_for
from laya_tui.families.aoti.load import ShapeError, check_shapes, shape_problems
from laya_tui.families.aoti.records import InputSpec, ShapeResult
from laya_tui.families.aoti.results import (
    RESULTS_SCHEMA_ID,
    default_root,
    output_root,
    prune_old,
    slug,
    validate_results,
    write_results,
)
from tests._signals import detail_of, site_of
from tests._util import heavy_imports

REPO = Path(__file__).resolve().parents[1]

SPEC: InputSpec = {"inputs": [
    {"name": "input_ids", "dtype": "torch.int64", "dims": [
        {"name": "rows", "min": 2, "max": 64, "symbol": "s0"},
        {"name": "tokens", "min": 32, "max": 256, "multiple": 16, "symbol": "s1"}]},
    {"name": "confidence", "dtype": "torch.float32", "dims": [
        {"name": "rows", "min": 2, "max": 64, "symbol": "s0"},
        {"name": "features", "min": 3, "max": 3}]},
]}


# -- shape checks ------------------------------------------------------------------------
def test_shapes_inside_the_ranges_pass():
    assert shape_problems(SPEC, [(4, 64), (4, 3)], ["torch.int64", "torch.float32"]) == []
    check_shapes(SPEC, [(64, 256), (64, 3)])


@pytest.mark.parametrize("shapes, expected", [
    ([(65, 64), (65, 3)], "input_ids dim 0 (rows) = 65 is outside the exported range 2..64"),
    ([(1, 64), (1, 3)], "input_ids dim 0 (rows) = 1 is outside the exported range 2..64"),
    ([(4, 40), (4, 3)], "input_ids dim 1 (tokens) = 40 is not a multiple of 16"),
    ([(4, 272), (4, 3)], "input_ids dim 1 (tokens) = 272 is outside the exported range 32..256"),
    ([(4, 64), (5, 3)], "confidence dim 0 (rows) = 5 must equal input_ids dim 0 (rows) = 4"),
    ([(4, 64), (4, 4)], "confidence dim 1 (features) = 4, but the package is static there (3)"),
    ([(4, 64, 1), (4, 3)], "input_ids has 3 dims [4, 64, 1], exported with 2"),
    ([(4, 64)], "got 1 tensor inputs, the package was exported with 2"),
])
def test_shapes_outside_the_ranges_are_named(shapes, expected):
    with pytest.raises(ShapeError) as info:
        check_shapes(SPEC, shapes, what="shape x")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("shape x outside the exported ranges: ")
    assert expected in msg


def test_dtype_mismatch_is_named():
    problems = shape_problems(SPEC, [(4, 64), (4, 3)], ["torch.int64", "torch.float64"])
    assert problems == ["confidence has dtype torch.float64, exported with torch.float32"]


# -- failure descriptions ----------------------------------------------------------------
CXX_TEXT = """backend='inductor' raised:
CppCompileError: C++ compile error

Command:
g++ /tmp/x/cabc.cpp -shared -fPIC -O3 -o /tmp/x/cabc.so

Output:
/tmp/x/cabc.cpp: In function 'void kernel()':
/tmp/x/cabc.cpp:12:5: error: 'foo' was not declared in this scope
"""
AOTI_RUN_TEXT = "\n".join([
    "Error: aoti_torch_cpu_addmm_out(buf89, b, buf88, w, 1L, 1L) API call failed "
    "at /tmp/ti/c.wrapper.cpp, line 1756",
    "mat1 and mat2 must have the same dtype, but got Float and BFloat16",
    "Exception raised from meta at aten/src/ATen/native/LinearAlgebra.cpp:194 (most recent "
    "call first):",
    "frame #0: c10::Error::Error() + 0x9d",
])


def test_first_meaningful_line_skips_banners():
    assert first_meaningful_line(CXX_TEXT) == \
        "/tmp/x/cabc.cpp:12:5: error: 'foo' was not declared in this scope"
    assert first_meaningful_line(AOTI_RUN_TEXT) == \
        "mat1 and mat2 must have the same dtype, but got Float and BFloat16"
    assert first_meaningful_line("\n\nTraceback (most recent call last):\nValueError: x\n") == \
        "ValueError: x"


def test_cpp_site_and_fixes():
    assert cpp_site(AOTI_RUN_TEXT) == {"file": "/tmp/ti/c.wrapper.cpp", "line": 1756,
                                       "func": "aoti_torch_cpu_addmm_out"}
    def fix(text: str) -> str:
        found = fix_for(text)
        assert found is not None, text
        return found

    assert "cast" in fix(AOTI_RUN_TEXT)
    assert "torch.cond" in fix("Could not guard on data-dependent expression Eq(u0, 1)")
    assert "compiler" in fix(CXX_TEXT)
    assert fix_for("something nobody has seen") is None


# -- results.json and folders ------------------------------------------------------------
def _minimal_results() -> dict[str, Any]:
    return {
        "schema": RESULTS_SCHEMA_ID, "model": "decision[fp32]", "dtype": "fp32",
        "key": "0" * 64, "ok": True, "environment": {"torch": "2.x", "python": "3.11"},
        "steps": {"export": {"ok": True, "seconds": 0.5, "cached": False}},
        "shapes": [{"name": "r4.t64.m3", "latency": {"eager": 0.01, "aoti": 0.005},
                    "heads": {"action": {"max_logit_delta": 1e-7, "max_prob_delta": 1e-8,
                                         "limit": 1e-4, "argmax_agree": [True, True],
                                         "passed": True}}}],
        "failures": [],
    }


def test_results_schema_accepts_and_rejects():
    doc = _minimal_results()
    validate_results(doc)
    bad = json.loads(json.dumps(doc))
    del bad["shapes"][0]["heads"]["action"]["argmax_agree"]
    with pytest.raises(jsonschema.ValidationError):
        validate_results(bad)
    bad = dict(doc, failures=[{"step": "export"}])
    with pytest.raises(jsonschema.ValidationError):
        validate_results(bad)


def test_write_results_validates_or_says_it_could_not(monkeypatch, tmp_path):
    path = tmp_path / "results.json"
    assert write_results(path, _minimal_results()) is True
    bad = dict(_minimal_results(), failures=[{"step": "export"}])
    with pytest.raises(jsonschema.ValidationError):
        write_results(tmp_path / "bad.json", bad)
    assert not (tmp_path / "bad.json").exists()
    # A bare GPU host running from source may lack jsonschema: keep the measurements.
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    assert write_results(path, dict(_minimal_results(), ok=False)) is False
    assert json.loads(path.read_text())["ok"] is False


def test_isa_probe_note_only_when_the_probe_is_most_of_a_slow_load():
    from laya_tui.families.aoti.toolchain import isa_probe_note

    assert isa_probe_note(0.3, 0.35) is None          # torch 2.13 here: nothing to say
    assert isa_probe_note(3.0, 20.0) is None          # a slow load for other reasons
    note = isa_probe_note(53.86, 53.87)               # the H200 host, torch 2.11
    assert note is not None and note.startswith("53.9 s of the 53.9 s load")
    assert "pick_vec_isa" in note


def test_output_root_is_out_or_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_root() == tmp_path / "xdg" / "laya-tui" / "aoti"
    assert output_root(None) == default_root()
    assert output_root(str(tmp_path / "o")) == tmp_path / "o" / "aoti"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_root() == Path.home() / ".cache" / "laya-tui" / "aoti"
    assert REPO not in default_root().parents


def test_prune_keeps_the_newest_old_folders(tmp_path):
    import os

    dirs = [tmp_path / f"decision_fp32-{i:016x}" for i in range(5)]
    for i, d in enumerate(dirs):
        d.mkdir()
        os.utime(d, (1000 + i, 1000 + i))
    other = tmp_path / "decision_bf16-" f"{0:016x}"
    other.mkdir()
    removed = prune_old(tmp_path, "decision[fp32]", dirs[4], keep=2)
    assert sorted(removed) == sorted(str(d) for d in dirs[:2])
    assert other.exists() and dirs[2].exists() and dirs[3].exists() and dirs[4].exists()


# -- import hygiene ------------------------------------------------------------------------
def test_light_modules_and_probe_discovery_import_no_torch():
    code = (
        "import laya_tui.families.aoti, laya_tui.families.aoti.failure\n"
        "import laya_tui.families.aoti.results, laya_tui.families.aoti.load\n"
        "from laya_tui.worker.loader import import_probe_file\n"
        f"mod = import_probe_file({str(REPO / 'probes' / 'aoti_package.py')!r}, {str(REPO)!r})\n"
    )
    assert heavy_imports(code) == []


def test_cells_follow_the_model_option(monkeypatch):
    from laya_tui.worker.loader import import_probe_file

    monkeypatch.setenv("LAYA_TUI_OPTIONS", json.dumps({"models": ["pkg.mod:build"]}))
    mod = import_probe_file(str(REPO / "probes" / "aoti_package.py"), str(REPO))
    ids = [cid for cid, _ in mod.package.__laya_probe__.cells()]
    assert ids == ["aoti/decision[fp32]", "aoti/decision[bf16]", "aoti/decision[bf16,cuda]",
                   "aoti/model[pkg.mod:build]"]


def test_cuda_cell_skips_without_a_gpu(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the cuda cell runs for real (scripts/gpu-report.sh)")
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--workspace", str(REPO), "--headless",
         "--json", str(out), "--only", "aoti/decision[bf16,cuda]", "--no-cache",
         "--cache-dir", str(tmp_path / "c")],
        capture_output=True, text=True, cwd=REPO, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    (cell,) = json.loads(out.read_text())["probes"]
    assert cell["status"] == "skipped" and "no CUDA device" in cell["reason"]


# -- failures that need no packaging -------------------------------------------------------
def data_dependent_model() -> tuple[Any, Any]:
    """A model whose Python branch reads a tensor value: torch.export must refuse it."""
    import torch
    from torch import nn

    class DataDependent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 4)

        def forward(self, x: Any) -> Any:
            if x.sum() > 0:  # the data-dependent branch
                return self.lin(x)
            return -self.lin(x)

    torch.manual_seed(0)
    return DataDependent().eval(), (torch.randn(4, 8),)


def tiny_model() -> tuple[Any, Any]:
    """A small two-output model: fast to export (the compiler-failure tests use it)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 6), nn.GELU(), nn.Linear(6, 3)).eval(), \
        (torch.randn(4, 8),)


def run_cell(target: Any, out: Path) -> tuple[str, list[SignalDict]]:
    """Run one aoti cell in this process; ``(status, signals)``."""
    from laya_tui.api import Context, Failed, Skipped
    from laya_tui.families.aoti.pipeline import run_target

    events: list[SignalEvent] = []
    ctx = Context("aoti/test", "aoti", events.append, opts={"out": str(out), "models": []})
    try:
        run_target(ctx, target, str(out))
        status = "failed" if ctx.failures else "ok"
    except Skipped as exc:
        status = f"skipped: {exc}"
    except Failed as exc:
        status = f"failed: {exc}"
    return status, [e["signal"] for e in events]


def results_of(out: Path, prefix: str) -> dict[str, Any]:
    paths = sorted((out / "aoti").glob(f"{prefix}-*/results.json"))
    assert len(paths) == 1, paths
    doc = json.loads(paths[0].read_text())
    validate_results(doc)
    return doc


def test_data_dependent_control_flow_fails_export(tmp_path):
    pytest.importorskip("torch")
    from laya_tui.families.aoti.targets import user_target

    status, signals = run_cell(user_target(f"{__name__}:data_dependent_model"), tmp_path)
    assert status.startswith("failed: export failed: GuardOnDataDependentSymNode: "
                             "Could not guard on data-dependent expression"), status
    logs = [s for s in signals if s["kind"] == "log" and s.get("subject") == "export"]
    assert len(logs) == 1
    log = logs[0]
    assert detail_of(log)["step"] == "export"
    assert detail_of(log)["exception"] == "GuardOnDataDependentSymNode"
    assert site_of(log)["file"] == __file__ and site_of(log)["func"] == "forward"
    line = site_of(log)["line"]
    assert line is not None
    assert "if x.sum() > 0" in Path(__file__).read_text().splitlines()[line - 1]
    assert log["fix"] is not None
    assert "torch.cond" in log["fix"]
    assert not [s for s in signals if s["kind"] == "timing" and s["subject"] == "package"]
    doc = results_of(tmp_path, slug(f"model[{__name__}:data_dependent_model]"))
    assert doc["ok"] is False and doc["steps"]["export"]["ok"] is False
    assert doc["failures"][0]["step"] == "export"
    assert not list((tmp_path / "aoti").glob("*/model.pt2"))


def test_missing_compiler_is_a_skip(tmp_path):
    pytest.importorskip("torch")
    import torch._inductor.config as inductor_config

    from laya_tui.families.aoti.targets import user_target

    with inductor_config.patch({"cpp.cxx": (None, str(tmp_path / "no-such-c++"))}):
        status, signals = run_cell(user_target(f"{__name__}:tiny_model"), tmp_path)
    assert status.startswith("skipped: no working C++ compiler for AOTInductor"), status
    assert "install g++" in status


def test_package_metadata_is_plain_hex():
    from laya_tui.families.aoti.load import decode_metadata, encode_metadata

    spec = {"inputs": [{"name": "input_ids", "dims": [{"min": 2, "max": 64, "symbol": "s0"}]}]}
    text = encode_metadata(spec)
    assert set(text) <= set("0123456789abcdef")
    assert decode_metadata(text) == spec
    assert decode_metadata(None) is None
    assert decode_metadata('{"not": "hex"}') is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF shared objects")
def test_a_compiler_linking_libstdcxx_statically_is_replaced(tmp_path, monkeypatch):
    """A g++ wrapper adding -static-libstdc++ to shared links (as on the GPU host's image)
    gives AOTI packages that cannot load: it is detected and another g++ is used."""
    import shutil

    from laya_tui.families.aoti.toolchain import aoti_compiler, static_libstdcxx

    gxx = shutil.which("g++") or pytest.skip("no g++")
    shutil.which("readelf") or pytest.skip("no readelf")
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\ncase " $* " in *" -shared "*) exec {gxx} "$@" '
                       f'-static-libstdc++;; esac\nexec {gxx} "$@"\n')
    wrapper.chmod(0o755)
    if static_libstdcxx(str(wrapper)) is None:
        pytest.skip("this g++ cannot link libstdc++ statically into a shared object")
    assert static_libstdcxx(str(wrapper)) is True
    assert static_libstdcxx(gxx) is False
    assert aoti_compiler(gxx) == (gxx, None)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    chosen, note = aoti_compiler(str(wrapper))
    assert chosen != str(wrapper) and static_libstdcxx(chosen) is False
    assert os.path.basename(chosen) in ("g++", "c++")
    assert note is not None
    assert note.startswith(f"{wrapper} links libstdc++ statically") and chosen in note


# -- torch.compile recompiles in the cell: sited in the model, matching dynamo's record ----
def test_compiled_outputs_recompile_signal_is_sited_at_the_model_forward(tmp_path):
    pytest.importorskip("torch")
    import torch
    from torch._dynamo.utils import get_compilation_metrics

    from laya_tui.api import Context
    from laya_tui.families.aoti.pipeline import Pipeline
    from laya_tui.families.aoti.targets import user_target

    class Small(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).relu()

    model = Small().eval()
    sets = [(torch.randn(2, 4),), (torch.randn(3, 4),)]
    target = user_target("tests:small", loaded=(model, sets))
    events: list[SignalEvent] = []
    pipe = Pipeline(Context("aoti/model[tests:small]", "aoti", events.append, opts={}),
                    target, tmp_path)
    torch._dynamo.reset()
    cmodel = torch.compile(model, backend="eager", dynamic=False)
    seen = {id(m) for m in get_compilation_metrics()}
    pipe.compiled_outputs(cmodel, target.shapes(None))
    torch._dynamo.reset()
    metrics = [m for m in get_compilation_metrics() if id(m) not in seen]
    guards = [m.recompile_reason for m in metrics if m.recompile_reason]
    assert len(guards) == 1  # dynamo: the second set's batch size recompiles once
    (sig,) = [e["signal"] for e in events if e["type"] == "signal"
              and e["signal"]["kind"] == "recompile"]
    assert sig["reason"] == guards[0].strip().splitlines()[0]
    detail = sig.get("detail")
    assert detail is not None
    assert detail["shape"] == "set2"
    code = Small.forward.__code__
    assert sig["site"] == {"file": code.co_filename, "line": code.co_firstlineno,
                           "func": code.co_qualname.rsplit("<locals>.", 1)[-1]}
    assert detail["stack"][0].endswith("(Small.forward)")
    assert pipe.results["steps"]["compile"]["recompiled_on"] == {"set2": [sig["reason"]]}


# -- the gap table of an AOTI cell compared with fp32 (issue 43 item 2) ----------------------
@pytest.mark.slow
def test_the_gap_table_of_the_bf16_decision_cell_compares_inductor_compiled_modules(tmp_path):
    """With --numerics the bf16 decision cell gets a gap table per input set: the package
    has no module boundaries, so its modules compiled one by one by Inductor stand in (the
    note says so), against the fp32 eager reference; each row's output error is the
    module's bf16 output against the fp32 run's, checked here on the first rows with
    torch itself. A set whose heads passed gets none without the flag."""
    torch = pytest.importorskip("torch")
    from torch._dynamo.utils import counters

    from laya_tui.api import Context
    from laya_tui.families.aoti.measure import call
    from laya_tui.families.aoti.pipeline import Pipeline
    from laya_tui.families.aoti.targets import decision_target
    from laya_tui.families.explain.gap_table import AOTI_NOTE

    target = decision_target("bf16")
    model = target.build()
    ref_model = target.reference(model)
    assert isinstance(ref_model, torch.nn.Module)  # bf16 on the CPU: the fp32 eager model
    name, inputs, dims = target.shapes(None)[0]
    # only what gap_tables reads: whether the shape's heads passed
    per_shape = cast(dict[str, ShapeResult],
                     {name: {"name": name, "dims": dims, "heads": {"out": {"passed": True}}}})

    def logs(opts: dict[str, Any]) -> list[SignalDict]:
        events: list[SignalEvent] = []
        pipe = Pipeline(Context("aoti/decision[bf16]", "aoti", events.append,
                                opts={"out": str(tmp_path), **opts}), target, tmp_path)
        pipe.gap_tables(model, ref_model, [(name, inputs, dims)], per_shape, fp32=True)
        sigs = [e["signal"] for e in events if e["type"] == "signal"]
        return [s for s in sigs if s["kind"] == "log" and "gap_table" in (s.get("detail") or {})]

    assert logs({}) == []  # passed, no --numerics: nothing after the verdict
    torch._dynamo.reset()
    counters.clear()
    (sig,) = logs({"numerics": True})
    table = detail_of(sig)["gap_table"]
    assert sig["subject"] == f"outputs[{name}] gap table" and table["path"] == "aoti"
    assert AOTI_NOTE in table["note"]
    leaves = {n for n, m in model.named_modules() if n and next(m.children(), None) is None}
    rows = {r["module"]: r for r in table["rows"]}
    assert rows and set(rows) <= {n for n, _ in model.named_modules() if n}
    assert counters["stats"]["unique_graphs"] >= 1  # Inductor compiled the leaves
    # a leaf's output error, by torch: its bf16 output against the fp32 model's
    got: dict[str, Any] = {}
    ref_got: dict[str, Any] = {}

    def keep(into: dict[str, Any], n: str) -> Any:
        def hook(_m: Any, _a: Any, out: Any) -> None:  # None: the output stays the module's
            if torch.is_tensor(out):
                into.setdefault(n, out.detach().float())
        return hook

    hooks = [dict(model.named_modules())[n].register_forward_hook(keep(got, n))
             for n in leaves if n in rows]
    ref_hooks = [dict(ref_model.named_modules())[n].register_forward_hook(keep(ref_got, n))
                 for n in leaves if n in rows]
    call(model, inputs)
    call(ref_model, inputs)
    for h in hooks + ref_hooks:
        h.remove()
    checked = [n for n in got if n in ref_got][:3]
    assert checked
    for n in checked:
        mine = (got[n] - ref_got[n]).abs().max().item()
        # eager bf16 here, Inductor in the table: the same order of error
        assert rows[n]["error"] == pytest.approx(mine, rel=1.0, abs=1e-2), (n, rows[n], mine)
