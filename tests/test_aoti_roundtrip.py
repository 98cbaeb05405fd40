"""aoti family, real round trips on CPU (slow: each package takes ~15-30 s here).

The decision model is exported, packaged, loaded in a fresh process and in this one, and
compared with eager on several shapes; a re-run through the real CLI reuses the package;
shapes outside the exported ranges are refused by the fresh loader; the deliberately
uncast bf16 variant and a failing C++ compiler are reported as failing steps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from laya_tui.families.aoti.results import validate_results
from tests._signals import detail_of, site_of
from tests._util import run_cli
from tests.test_aoti_unit import results_of, run_cell

pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.slow
DECISION_FILE = str(Path(__file__).resolve().parents[1] / "laya_tui" / "families"
                    / "decision_model.py")


@pytest.fixture(scope="module")
def fp32_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from torch._dynamo.utils import counters

    from laya_tui.families.aoti.targets import decision_target

    out = tmp_path_factory.mktemp("aoti-out")
    before = counters["stats"].get("unique_graphs", 0)
    status, signals = run_cell(decision_target("fp32"), out)
    return {"out": out, "status": status, "signals": signals,
            "results": results_of(out, "decision_fp32"),
            "graphs": counters["stats"].get("unique_graphs", 0) - before}


def _by(signals: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {s["subject"]: s for s in signals if s["kind"] == kind}


def test_round_trip_matches_eager(fp32_run):
    assert fp32_run["status"] == "ok", fp32_run["status"]
    timings = _by(fp32_run["signals"], "timing")
    for step in ("export", "package", "load-fresh", "load-warm", "compile"):
        assert timings[step]["seconds"] > 0, step
    assert timings["package"]["detail"]["cached"] is False
    assert timings["export"]["detail"]["nodes"] > 50
    fresh = timings["load-fresh"]["detail"]
    assert fresh["model_code_imported"] == []  # the fresh process never saw the model code
    artifacts = _by(fp32_run["signals"], "artifact")
    assert artifacts["package"]["bytes"] > 100_000
    assert artifacts["package"]["detail"]["path"].endswith("model.pt2")
    assert artifacts["results.json"]["bytes"] > 0

    tolerances = [s for s in fp32_run["signals"] if s["kind"] == "tolerance"]
    shapes = {s["subject"].split("[")[1].rstrip("]") for s in tolerances}
    assert len(shapes) >= 3 and "r4.t64.m3" in shapes and len(shapes - {"r4.t64.m3"}) >= 2
    assert len(tolerances) == len(shapes) * 2 * 2  # heads x (logits, probs)
    for s in tolerances:
        assert s["passed"] and s["value"] <= s["limit"] <= 2e-4, s
        assert all(s["detail"]["argmax_agree"]), s
        assert s["detail"]["compared"] == "aoti fresh process"
        assert s["detail"]["fresh_vs_warm"] == 0.0
        # torch.compile ran on every shape and was compared with AOTI and the reference
        assert s["detail"]["vs_compiled"] is not None and s["detail"]["vs_compiled"] <= 1e-4
        assert 0 <= s["detail"]["compiled_vs_reference"] <= s["limit"], s
    for shape in shapes:
        for variant in ("eager", "compiled", "aoti"):
            assert timings[f"latency/{variant}[{shape}]"]["seconds"] > 0


def test_results_json_is_valid_and_complete(fp32_run):
    doc = fp32_run["results"]
    validate_results(doc)
    assert doc["ok"] is True and doc["failures"] == []
    assert doc["package_bytes"] == os.path.getsize(doc["package"])
    assert Path(doc["package"]).parent == Path(fp32_run["out"]) / "aoti" / Path(
        doc["package"]).parent.name
    assert doc["environment"]["torch"] and doc["environment"]["compiler"]
    dims = {d["name"]: d for d in doc["input_spec"]["inputs"][0]["dims"]}
    assert dims["rows"]["min"] == 2 and dims["rows"]["max"] == 64
    assert dims["tokens"] == {"name": "tokens", "min": 32, "max": 256, "multiple": 16,
                              "symbol": dims["tokens"]["symbol"]}
    for shape in doc["shapes"]:
        assert set(shape["latency"]) == {"eager", "compiled", "aoti"}
        assert set(shape["heads"]) == {"decision", "action"}
        for head in shape["heads"].values():
            assert head["vs_compiled"] is not None and head["compiled_vs_reference"] is not None
    # every recompile torch.compile made on a shape is in results.json and is a signal
    recompiled = doc["steps"]["compile"]["recompiled_on"]
    assert set(recompiled) <= {s["name"] for s in doc["shapes"]}
    signals = [s for s in fp32_run["signals"] if s["kind"] == "recompile"]
    assert {s["detail"]["shape"] for s in signals} == set(recompiled)
    for s in signals:  # the signal carries dynamo's own guard failure
        assert s["reason"] == recompiled[s["detail"]["shape"]][0]
        # sited at the compiled forward of the model (demo model code), with its stack
        assert s["site"]["file"] == DECISION_FILE and s["site"]["func"].endswith(".forward")
        assert s["detail"]["stack"][0].endswith(f"({s['site']['func']})")
    # ... and the seconds of the call that recompiled (a second compile: library work that
    # benchmarks/bench_cold.py counts), the same figure as results.json's
    spent = doc["steps"]["compile"]["recompile_seconds"]
    # the cell compiles exactly what it reports: one graph for the first compile, one per
    # recompile (export and packaging make no dynamo graph)
    assert fp32_run["graphs"] == 1 + len(signals)
    assert set(spent) == set(recompiled)
    for s in signals:
        assert s["seconds"] == pytest.approx(spent[s["detail"]["shape"]], abs=1e-6)
        assert s["seconds"] > 0


def test_shapes_outside_the_range_are_refused_by_the_fresh_loader(fp32_run, tmp_path):
    import torch

    from laya_tui.families.decision_model import Shape, decision_inputs

    package = fp32_run["results"]["package"]
    bad = decision_inputs(Shape(3, 48, 2))
    bad["input_ids"] = torch.cat([bad["input_ids"], bad["input_ids"][:, :8]], dim=1)  # 56
    bad["attention_mask"] = torch.ones_like(bad["input_ids"])
    inputs = tmp_path / "inputs.pt"
    torch.save({"shapes": [{"name": "t56", "args": [], "kwargs": bad}]}, inputs)
    proc = subprocess.run([sys.executable, "-m", "laya_tui.families.aoti.load", package,
                           str(inputs),
                           "--result", str(tmp_path / "r.pt")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("laya_tui.families.aoti.load")]
    assert lines == ["laya_tui.families.aoti.load: error: shape-check: ShapeError: shape t56 "
                     "outside "
                     "the exported ranges: input_ids dim 1 (tokens) = 56 is not a multiple of "
                     "16 (exported range 32..256, step 16); attention_mask dim 1 (tokens) = 56 "
                     "is not a multiple of 16 (exported range 32..256, step 16)"]
    result = torch.load(tmp_path / "r.pt", weights_only=True)
    assert result["error"]["step"] == "shape-check" and not result["outputs"]


def test_cli_rerun_reuses_the_package(fp32_run, tmp_path):
    report_path = tmp_path / "report.json"
    before = os.path.getmtime(fp32_run["results"]["package"])
    proc = run_cli("--headless", "--json", str(report_path), "--only", "aoti/decision[fp32]",
                   "--out", str(fp32_run["out"]), "--no-cache", "-q", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    from laya_tui.report.document import validate_report

    validate_report(report)
    (probe,) = report["probes"]
    assert probe["id"] == "aoti/decision[fp32]" and probe["status"] == "ok", probe["reason"]
    timings = _by(probe["signals"], "timing")
    assert timings["package"]["detail"]["cached"] is True
    assert timings["package"]["seconds"] < 1.0
    assert timings["package"]["detail"]["built_seconds"] == pytest.approx(
        fp32_run["results"]["steps"]["package"]["seconds"])
    assert os.path.getmtime(fp32_run["results"]["package"]) == before
    assert all(s["passed"] for s in probe["signals"] if s["kind"] == "tolerance")


def test_uncast_bf16_variant_fails_with_the_dtype_mismatch(tmp_path):
    from laya_tui.families.aoti.targets import decision_target

    status, signals = run_cell(decision_target("bf16", cast_features=False), tmp_path)
    assert status == ("failed: run failed: RuntimeError: mat1 and mat2 must have the same "
                      "dtype, but got Float and BFloat16"), status
    casts = [s for s in signals if s["kind"] == "cast"]
    assert casts and site_of(casts[0])["file"] == DECISION_FILE
    assert casts[0]["reason"] is not None
    assert "float32 x bfloat16" in casts[0]["reason"]
    runs = [s for s in signals if s["kind"] == "log" and s.get("subject") == "run"]
    assert {detail_of(r)["process"] for r in runs} == {"fresh", "warm"}
    fresh = next(r for r in runs if detail_of(r)["process"] == "fresh")
    assert fresh["reason"] == "mat1 and mat2 must have the same dtype, but got Float and BFloat16"
    assert site_of(fresh)["file"] == DECISION_FILE and site_of(fresh)["func"] == "forward"
    assert "wrapper.cpp" in detail_of(fresh)["runtime_site"]["file"]
    assert fresh["fix"] is not None
    assert "cast" in fresh["fix"]
    doc = results_of(tmp_path, "decision_bf16_uncast")
    assert doc["steps"]["export"]["ok"] and doc["steps"]["package"]["ok"]
    assert doc["failures"][0]["step"] == "run" and doc["ok"] is False


def test_cxx_compile_error_is_a_package_failure(tmp_path, monkeypatch):
    import torch._inductor.config as inductor_config

    from laya_tui.families.aoti.targets import user_target

    fake = tmp_path / "fake-c++"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in --version|-v) exec g++ "$@";; '
                    'esac; done\necho "injected.cpp:1:1: error: injected failure" >&2\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    with inductor_config.patch({"cpp.cxx": (None, str(fake))}):
        status, signals = run_cell(user_target("tests.test_aoti_unit:tiny_model"), tmp_path)
    assert status.endswith("injected.cpp:1:1: error: injected failure"), status
    assert status.startswith("failed: package failed: ")
    (log,) = [s for s in signals if s["kind"] == "log" and s.get("subject") == "package"]
    assert log["fix"] is not None
    assert detail_of(log)["step"] == "package" and "compiler" in log["fix"]
    assert [s for s in signals if s["kind"] == "timing" and s["subject"] == "export"]
    assert not list((tmp_path / "aoti").glob("*/model.pt2"))


def test_a_static_libstdcxx_compiler_is_replaced_and_the_package_loads(tmp_path, monkeypatch):
    """The GPU host's CXX links libstdc++ statically into shared objects: packages built
    with it fail to load (a segfault on torch 2.11). Shown here first with that compiler
    (the control), then the cell detects it, builds with another g++ and loads."""
    import shutil

    import torch
    import torch._inductor.config as inductor_config

    from laya_tui.families.aoti.targets import user_target
    from laya_tui.families.aoti.toolchain import static_libstdcxx
    from tests.test_aoti_unit import tiny_model

    gxx = shutil.which("g++") or pytest.skip("no g++")
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\ncase " $* " in *" -shared "*) exec {gxx} "$@" '
                       f'-static-libstdc++;; esac\nexec {gxx} "$@"\n')
    wrapper.chmod(0o755)
    if not static_libstdcxx(str(wrapper)):
        pytest.skip("g++ cannot link libstdc++ statically into a shared object here")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))

    model, args = tiny_model()
    control = tmp_path / "control.pt2"
    torch._inductor.aoti_compile_and_package(
        torch.export.export(model, args), package_path=str(control),
        inductor_configs={"cpp.cxx": (None, str(wrapper))})
    load = "import sys, torch; torch._inductor.aoti_load_package(sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", load, str(control)], capture_output=True,
                          text=True, timeout=300)
    # torch 2.13 raises from the container's constructor; 2.11 segfaulted (rc -11)
    assert proc.returncode < 0 or "create_func_" in proc.stderr, (
        f"the control package did not fail as expected (rc {proc.returncode}): "
        f"{proc.stderr[-500:]}")

    with inductor_config.patch({"cpp.cxx": (None, str(wrapper))}):
        status, signals = run_cell(user_target("tests.test_aoti_unit:tiny_model"), tmp_path)
    assert status == "ok", status
    (note,) = [s for s in signals if s["kind"] == "log" and s.get("subject") == "package"]
    assert note["reason"] is not None
    assert note["reason"].startswith(f"{wrapper} links libstdc++ statically")
    assert [s for s in signals if s["kind"] == "timing" and s["subject"] == "load-fresh"]
    doc = results_of(tmp_path, "model_tests.test_aoti_unit_tiny_model")
    assert doc["compiler_note"] == note["reason"] and doc["steps"]["load-fresh"]["ok"]
