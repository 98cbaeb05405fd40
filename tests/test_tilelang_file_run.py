"""Kernel files in each style TileLang's examples use (tests/fixtures/run_kernels): the
arguments the file's own run builds each kernel with and where each came from, the static
fallback reading the same, the cells' outcomes and messages, and agreement with TileLang's
own compile (a cell fails exactly when ``tilelang.compile`` does, with the same first line;
a failing cell's repro.py prints it too)."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import SignalDict
from laya_tui.families.tilelang.discover import matrix_cells
from laya_tui.families.tilelang.plain_resolve import static_missing
from tests._signals import detail_of, site_of
from tests._tilelang_cells import run_folder_cell

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "fixtures" / "run_kernels"
UP = ROOT / "tests" / "fixtures" / "upstream_kernels"
TUNED = "first @autotune config (the file tunes it; TileLang picks on a GPU)"


def _cells(folder: Path = RUN) -> dict[str, dict[str, Any]]:
    """The cells, each with ``missing``: the static reading's gaps, which are no cell
    parameter (a kernel the file's run builds misses nothing; issue 41)."""
    opts = {"kernels": [str(folder)], "workspace": str(ROOT)}
    cells: dict[str, dict[str, Any]] = {f"{c['name']}[{c['id']}]": dict(c)
                                        for c in matrix_cells(opts)}
    for c in cells.values():
        assert "missing" not in c["kwargs"]
        if c["kwargs"].get("obj"):
            c["missing"] = static_missing(c["kwargs"]["file"], c["kwargs"]["obj"], opts)
    return cells


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


# -- the static reading (no TileLang) ---------------------------------------------------------


def test_cells_take_the_kernels_own_dtype_and_no_spec_axis() -> None:
    cells = _cells()
    # int8 in, int32 out: the data dtype names both sides (issue 41)
    assert {k for k in cells if k.startswith("int8_mul[")} == {"int8_mul[c,int8-int32]",
                                                              "int8_mul[cuda,int8-int32]"}
    assert "needs_gpu[c,fp16]" in cells and "argparse_scale[cuda,fp32]" in cells
    assert all(c["kwargs"]["spec"] is None for c in cells.values())


def test_static_arguments_in_each_style() -> None:
    cells = _cells()

    def kw(cid: str) -> dict[str, Any]:
        return cells[cid]["kwargs"]

    # argparse defaults, a dest= option too
    a = kw("argparse_scale[c,fp32]")
    line = _line(RUN / "argparse_scale.py", "kernel = scale(")
    assert (a["args"]["M"], a["args"]["N"], a["args"]["block_M"]) == (40, 24, 16)
    assert a["arg_sources"]["M"] == f"argparse default --M (main() at line {line})"
    assert a["arg_sources"]["N"] == f"argparse default --n (main() at line {line})"
    # math.ceil(SEQ_LEN / BLOCK) of module constants
    assert kw("computed_args[c,fp32]")["args"]["num_blocks"] == 3
    # one call level up: test_grouped_rows() passes run() its list
    a = kw("call_one_up[c,fp32]")
    assert a["args"]["batch_sizes_list"] == (8, 8) and cells["call_one_up[c,fp32]"]["missing"] == []
    assert a["arg_sources"]["K"] == (
        f"run() at line {_line(RUN / 'call_one_up.py', 'kernel = grouped_rows(')}, given by "
        f"test_grouped_rows() at line {_line(RUN / 'call_one_up.py', 'run((8, 8), 4)')}")
    # x.shape of a tensor built from literals, and arithmetic on it
    a = kw("tensor_shape[c,fp32]")
    assert (a["args"]["M"], a["args"]["N"], a["args"]["block_M"]) == (24, 16, 8)
    # subscript annotations are tensors, not arguments to ask for
    assert cells["subscript_annot[c,fp32]"]["missing"] == []
    # @autotune: explicit tiling -> not tuned, defaults for the rest; no tiling -> tuned
    a = kw("autotune_explicit.tiled_double[c,fp32]")
    assert (a["args"]["block_M"], a["args"]["num_stages"], a["tuned"]) == (8, 2, False)
    assert a["arg_sources"]["num_stages"] == "default"
    a = kw("autotune_explicit.tuned_double[c,fp32]")
    assert (a["args"]["block_M"], a["args"]["num_stages"], a["tuned"]) == (4, 0, True)
    assert a["arg_sources"]["block_M"] == TUNED
    # a helper nothing calls
    assert kw("helper_kernel.unused_helper[c,fp32]")["called"] is False
    assert kw("helper_kernel.negate[c,fp32]")["called"] is True


# -- the file's own run (TileLang, no lowering) ------------------------------------------------


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


def _capture(name: str | Path) -> Any:
    from laya_tui.families.tilelang.capture import capture_file
    from laya_tui.families.tilelang.plain_resolve import expected_kernels

    path = str(RUN / name)
    return capture_file(path, expected_kernels(path, {}))


def test_the_capture_records_what_the_file_builds_and_compiles_nothing(tl: Any) -> None:
    import tilelang
    import torch
    from tilelang.jit.kernel import JITKernel

    before = (sys.modules["tilelang.jit"].cached, JITKernel.__init__, tilelang.lower,
              torch.testing.assert_close)
    cap = _capture("argparse_scale.py")
    assert (sys.modules["tilelang.jit"].cached, JITKernel.__init__, tilelang.lower,
            torch.testing.assert_close) == before  # every patch is gone
    (b,) = cap.builds
    line = _line(RUN / "argparse_scale.py", "kernel = scale(")
    assert (b.obj, b.entry, b.site) == ("scale", "the __main__ block", f"main() at line {line}")
    assert b.args == {"M": 40, "N": 24, "block_M": 16, "factor": 3.0, "dtype": "float32"}
    assert b.sources["M"] == f"argparse default --M (main() at line {line})"
    assert b.sources["factor"] == "default" and b.out_idx == [-1]
    # the stand-in went on to the file's own check, which is recorded, not run
    (check,) = b.call.checks
    assert (check.how, check.rtol, check.output) == ("torch.testing.assert_close", 1e-5, 0)
    assert check.line == _line(RUN / "argparse_scale.py", "torch.testing.assert_close(")
    assert b.call.inputs[0].shape == (40, 24) and b.call.inputs[0].device.type in ("cpu",
                                                                                   "cuda")
    # the traced PrimFunc is the one TileLang's own jit builds from these arguments
    from tvm import ir

    own = cap.module.scale.get_tir(40, 24, 16)
    assert ir.structural_equal(b.func, own)


def test_the_capture_follows_tilelangs_autotune_rule(tl: Any) -> None:
    cap = _capture("autotune_explicit.py")
    explicit, tuned = cap.builds_of("tiled_double")[0], cap.builds_of("tuned_double")[0]
    # the tiling given: TileLang compiles it as given, the rest keep the defaults
    assert explicit.tuned is None
    assert (explicit.args["block_M"], explicit.args["num_stages"]) == (8, 2)
    assert explicit.sources["num_stages"] == "default"
    # none given: TileLang would tune; the first config stands in, and says so
    assert tuned.tuned == {"configs": 2, "config": {"block_M": 4, "num_stages": 0,
                                                    "threads": 1}}
    assert tuned.sources["block_M"] == TUNED and tuned.args["block_M"] == 4


def test_eager_tensors_nested_reference_and_a_test_function(tl: Any) -> None:
    b = _capture("tensor_shape.py").builds[0]
    assert b.args["X"] == {"tensor": [24, 16], "dtype": "float32"}
    assert b.args["block_M"] == 8 and b.out_idx == [-1]
    b = _capture("computed_args.py").builds[0]
    assert b.args["num_blocks"] == 3 and b.call.ref_program is not None  # nested in main()
    assert b.call.ref_options == {"rtol": 1e-5, "atol": 1e-5}
    b = _capture("call_one_up.py").builds[0]
    assert b.entry == "test_grouped_rows()" and b.args["batch_sizes_list"] == [8, 8]
    # T.const shapes given as keywords (matmul.compile(M=512, ...)): the defaults stay
    b = _capture(UP / "gemm.py").builds[0]
    assert (b.args["M"], b.args["block_K"], b.args["dtype"]) == (512, 32, "float16")
    assert b.sources["dtype"] == "default" and b.sources["M"].startswith("main() at line")


def test_a_gpu_only_call_while_tracing_is_recognised(tl: Any) -> None:
    import torch

    cap = _capture("needs_gpu.py")
    if torch.cuda.is_available():
        assert cap.builds_of("persistent_copy")
        return
    failure = cap.failures["persistent_copy"]
    assert failure.gpu is not None and "driver.get_num_sms()" in failure.gpu
    assert failure.args["M"] == 4096


# -- cells -------------------------------------------------------------------------------------


needs_cc = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                              reason="no C++ compiler on PATH: target c builds with it")


def _run(cid: str, out: Path, folder: Path = RUN) -> tuple[str, list[SignalDict]]:
    return run_folder_cell(cid, out, folder)


def _lowering(signals: list[SignalDict]) -> SignalDict:
    (low,) = [s for s in signals if s["kind"] == "lowering"]
    return low


def _tilelang_compiles(cell: SignalDict, target: str) -> str | None:
    """TileLang's own ``tilelang.compile`` of what the cell examined: None when it builds,
    else the first line of what it raises."""
    import tilelang

    from laya_tui.families.tilelang.cell_state import cuda_target_spec
    from laya_tui.families.tilelang.diagnostics import first_line

    d = detail_of(cell)
    cap = _capture(d["file"])  # an absolute path: RUN / path is the path itself
    build = cap.builds[0] if len(cap.builds) == 1 else next(
        b for b in cap.builds if d["kernel"].endswith("." + str(b.obj)))
    attrs = build.func.attrs
    own_idx = attrs is not None and "tilelang_out_idx" in attrs  # eager: T.empty outputs
    try:
        tilelang.compile(build.func, out_idx=None if own_idx else build.out_idx,
                         target=cuda_target_spec() if target == "cuda" else target,
                         pass_configs=build.pass_configs or None)
    except Exception as exc:  # noqa: BLE001 - its first line is the expected diagnostic
        return first_line(str(exc))
    return None


@needs_cc
@pytest.mark.parametrize("cid", ["argparse_scale[c,fp32]", "computed_args[c,fp32]",
                                 "tensor_shape[c,fp32]", "int8_mul[c,int8-int32]"])
def test_cells_run_against_the_files_own_check_and_agree_with_tilelang(
        tl: Any, tmp_path: Path, cid: str) -> None:
    status, signals = _run(cid, tmp_path)
    low = _lowering(signals)
    d = detail_of(low)
    assert status == "ok", low.get("reason")
    assert _tilelang_compiles(low, "c") is None  # TileLang's own compile builds it too
    assert d["execution_backend"] == "cython"  # TileLang's default for target c
    if cid.startswith("int8_mul"):  # no check of its own: the module-level ref_program
        assert d["outcome"] == "ran" and d["dtype"] == "int8-int32"
        return
    assert d["outcome"] == "ran" and d["reference"] == "the file's own check"
    tol = [s for s in signals if s["kind"] == "tolerance"]
    assert tol and all(s["passed"] for s in tol)


@needs_cc
def test_a_failing_cell_fails_as_tilelangs_own_compile_does_and_its_repro_agrees(
        tl: Any, tmp_path: Path) -> None:
    status, signals = _run("gemm[c,fp16]", tmp_path, folder=UP)
    low = _lowering(signals)
    assert status == "failed" and detail_of(low)["outcome"] == "lower-failed"
    assert detail_of(low)["built_by"]["site"] == "main() at line " + str(
        _line(UP / "gemm.py", "matmul.compile("))
    assert low["reason"] == "lower failed: " + str(_tilelang_compiles(low, "c"))
    assert low["fix"] is not None
    assert low["fix"].startswith("fragments are GPU registers: this kernel is written for a GPU")
    assert low["fix"] is not None
    assert "cpu=True" not in low["fix"]
    _assert_repro(low, tmp_path)


def _assert_repro(low: SignalDict, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, detail_of(low)["repro"]], capture_output=True,
                          text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert low["reason"] is not None
    assert proc.stdout.strip().splitlines()[-1] == low["reason"].split(": ", 1)[1]


def test_a_kernel_whose_trace_raises_in_the_files_run_is_a_finding(tl: Any,
                                                                    tmp_path: Path) -> None:
    status, signals = _run("bad_trace[c,fp32]", tmp_path)
    low = _lowering(signals)
    assert status == "failed" and detail_of(low)["outcome"] == "lower-failed"
    assert low["reason"] == "trace failed: M=40 must be a multiple of block_M=16"
    assert site_of(low)["line"] == _line(RUN / "bad_trace.py", "assert M % block_M")
    assert detail_of(low)["built_by"]["raised"] == "AssertionError"
    _assert_repro(low, tmp_path)


def test_a_typeerror_raised_by_the_kernel_s_own_body_is_a_finding(tl: Any,
                                                                  tmp_path: Path) -> None:
    """T.gemm(..., k_pack=2) on a TileLang without k_pack: the same TypeError as `python
    file.py`, at the kernel's line; only a TypeError binding the kernel's own arguments
    means laya-tui could not examine it. TileLang 0.1.14's T.gemm still takes ``k_pack``
    (ROCm's packing): there the kernel traces and nothing is found."""
    from importlib.metadata import version

    import tilelang.language as T

    status, signals = _run("api_drift[cuda,fp16-fp32]", tmp_path)
    low = _lowering(signals)
    if version("tilelang") == "0.1.14":  # the version matrix: noxfile.py tilelang(0.1.14)
        assert "k_pack" in inspect.signature(T.gemm).parameters
        assert status == "ok" and low["passed"], low.get("reason")
        return
    assert "k_pack" not in inspect.signature(T.gemm).parameters
    assert status == "failed", low.get("reason")
    assert low["reason"] == "trace failed: gemm() got an unexpected keyword argument 'k_pack'"
    assert site_of(low)["line"] == _line(RUN / "api_drift.py", "T.gemm(A_s, B_s, C_l")
    _assert_repro(low, tmp_path)


def test_a_helper_nothing_calls_is_skipped_with_the_exact_lines(tl: Any, tmp_path: Path) -> None:
    status, signals = _run("helper_kernel.unused_helper[c,fp32]", tmp_path)
    assert signals == []
    assert status.splitlines() == [
        "skipped: unused_helper is defined but nothing in its file or the files importing it "
        "builds it: nothing to examine until it gets its arguments (M, N, scale); to examine "
        "it, add to "
        f"{ROOT / 'pyproject.toml'}:",
        '[tool.laya-tui.kernel-args."tests/fixtures/run_kernels/helper_kernel.py::'
        'unused_helper"]',
        "M = 32  # the default of main(M=...)",
        "# N = ?  (your value: the file gives none)",
        "# scale = ?  (your value: the file gives none)"]


def test_a_kernel_tracing_needs_a_gpu_is_skipped_here(tl: Any, tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: needs_gpu.py is traced here")
    status, signals = _run("needs_gpu[c,fp16]", tmp_path)
    line = _line(RUN / "needs_gpu.py", "sm_num = driver.get_num_sms()")
    assert status == (
        "skipped: persistent_copy needs a GPU to be traced, so it is examined on a GPU host: "
        f"persistent_copy() at line {line} calls `sm_num = driver.get_num_sms()`, which needs "
        "a GPU (Failed to get device properties.)")
    assert signals == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None and not os.path.isfile(
    "/usr/local/cuda/bin/nvcc"), reason="nvcc not found: cuda cells build with it")
def test_cuda_cells_build_with_tilelangs_default_backend(tl: Any, tmp_path: Path) -> None:
    """out_idx kernels on cuda build as ``tilelang.compile`` builds them (tvm_ffi): the
    cython wrapper's "N parameters, but M arguments" is not a finding of the kernel."""
    status, signals = _run("argparse_scale[cuda,fp32]", tmp_path)
    low = _lowering(signals)
    assert status == "ok" and detail_of(low)["outcome"] in ("built", "ran")
    assert detail_of(low)["execution_backend"] == "tvm_ffi"
    assert detail_of(low)["out_idx"] == [-1]
    assert _tilelang_compiles(low, "cuda") is None


def test_the_cpu_stand_in_fakes_gpu_sized_reference_ops_and_says_so(tl: Any) -> None:
    import torch

    from laya_tui.families.tilelang.capture_stubs import ModeState, capture_mode

    state = ModeState()
    with capture_mode(cuda_on_cpu=True, on_compare=lambda *a: NotImplemented, state=state):
        small = torch.randn(8, 8, device="cuda")
        real = small @ small.T
        big = torch.randn(2048, 1024, device="cuda").half()
        ref = big @ big.T
    assert small.device.type == "cpu" and state.faked == 1
    assert torch.equal(real, small @ small.T)  # small ops compute for real
    assert ref.shape == (2048, 2048) and ref.dtype == torch.float16 and not ref.any()


def test_the_files_run_reads_no_stdin_and_writes_into_a_scratch_folder(
        tl: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from laya_tui.families.tilelang.capture import capture_file

    kernel = tmp_path / "asks.py"
    kernel.write_text((RUN / "helper_kernel.py").read_text().replace(
        "def main(M=32):\n", "def main(M=32):\n    open('written.txt', 'w').write('x')\n"
                             "    M = int(input('M? ') or M)\n"))
    monkeypatch.chdir(tmp_path)
    cap = capture_file(str(kernel), {"negate"})
    line = _line(kernel, "input('M? ')")
    assert cap.entries == [("the __main__ block", f"raised EOFError at line {line}: EOF when "
                                                  "reading a line")]
    assert not (tmp_path / "written.txt").exists() and os.getcwd() == str(tmp_path)
    assert cap.builds == []


@needs_cc
def test_a_reference_that_does_not_take_the_kernels_inputs_is_no_finding(
        tl: Any, tmp_path: Path) -> None:
    status, signals = _run("ref_raises[c,fp32]", tmp_path)
    low = _lowering(signals)
    assert status == "ok" and detail_of(low)["outcome"] == "built"
    assert detail_of(low)["run_skipped"].startswith(
        "the file's ref_program does not take the kernel's inputs (shape '[7, -1, 5]' is "
        "invalid for input of size 128)")


def test_a_reference_is_given_only_what_the_kernel_takes(tl: Any) -> None:
    import types

    from laya_tui.families.tilelang.reference import reference_example

    func = _capture("argparse_scale.py").builds[0].func  # A -> B (out_idx [-1])
    mod = types.SimpleNamespace(ref_program=lambda a: a)
    ex, why = reference_example(mod, func, 0, [0])  # the output is not the trailing one
    assert ex is None and why == ("ref_program takes 1 argument(s), the kernel 1 input(s) "
                                  "and returns parameters [0]: cannot tell what the "
                                  "reference is given")
    ex, why = reference_example(mod, func, 0, [-1])
    assert ex is not None and ex.n_inputs == 1 and why == ""


@needs_cc
def test_a_pyproject_table_wins_over_what_the_file_builds(tl: Any, tmp_path: Path) -> None:
    from laya_tui.api import Context
    from laya_tui.families.tilelang.cell import run_cell

    table = {"tests/fixtures/run_kernels/argparse_scale.py::scale": {"M": 8}}
    cells = {f"{c['name']}[{c['id']}]": c for c in matrix_cells(
        {"kernels": [str(RUN)], "workspace": str(ROOT), "kernel_args": table})}
    signals: list[SignalDict] = []
    ctx = Context("tilelang/x", "tilelang", lambda e: signals.append(e["signal"]),
                  opts={"out": str(tmp_path), "workspace": str(ROOT), "kernel_args": table},
                  add_dep=lambda p: None)
    run_cell(ctx, **cells["argparse_scale[c,fp32]"]["kwargs"])
    d = detail_of(_lowering(signals))
    assert (d["args"]["M"], d["args"]["N"]) == (8, 24)  # the table's M, the file's N
    assert d["arg_sources"]["M"] == \
        "pyproject tests/fixtures/run_kernels/argparse_scale.py::scale"
    assert d["arg_sources"]["N"].startswith("argparse default --n")
    assert d["outcome"] in ("built", "ran")


@needs_cc
def test_a_kernel_fed_by_another_kernel_is_not_checked_on_stand_in_numbers(
        tl: Any, tmp_path: Path) -> None:
    """plus_one's input is double's output: during the capture that is a stand-in's zeros,
    so the file's check (against x * 2 + 1) cannot be made with it. The cell says so instead
    of reporting a tolerance failure the file's own run does not have."""
    import torch

    status, signals = _run("chained.plus_one[c,fp32]", tmp_path)
    low = _lowering(signals)
    assert status == "ok" and detail_of(low)["outcome"] == "built", low.get("reason")
    assert detail_of(low)["run_skipped"].startswith(
        "the file's inputs to this kernel come from another TileLang kernel (double)")
    assert detail_of(low)["not_run"] == "inputs made by another kernel"
    assert not [s for s in signals if s["kind"] == "tolerance"]
    # the first kernel is checked by nothing of the file's own; and the file itself passes
    # with TileLang's real kernels
    cap = _capture("chained.py")
    assert [str(b.obj) for b in cap.builds] == ["double", "plus_one"]
    import tilelang

    x = torch.randn(16, 8)
    real = [tilelang.compile(b.func, target="c") for b in cap.builds]
    torch.testing.assert_close(real[1](real[0](x)), x * 2 + 1)


def test_a_run_out_of_gpu_memory_is_no_finding(tl: Any) -> None:
    """torch's own OutOfMemoryError (and cuBLAS failing to allocate) at the run stage: the
    kernel was not examined (status error), never a failed cell."""
    import torch

    from laya_tui.families.tilelang.cell import _unexamined
    from laya_tui.families.tilelang.cell_state import CellState, StageFailed
    from laya_tui.families.tilelang.diagnostics import from_exception

    state = CellState("k", "cuda", "float16", None, str(RUN / "chained.py"), "jit", stage="run")
    for exc in (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB."),
                RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
                             "`cublasCreate(handle)`")):
        diag = from_exception(exc, stage="run", target="cuda", kernel_file=state.file)
        assert _unexamined(state, StageFailed(diag))
    wrong = from_exception(RuntimeError("misaligned address"), stage="run", target="cuda",
                           kernel_file=state.file)
    assert not _unexamined(state, StageFailed(wrong))


def test_an_fp8_output_is_compared_within_fp8_s_own_step(tl: Any) -> None:
    """A kernel that rounds to e4m3 differently from torch's cast is one fp8 step off (32
    near 448): within the fp8 limit, though far past fp32's."""
    import torch

    from laya_tui.families.tilelang.reference import LIMITS

    x = torch.linspace(256, 448, 97)
    near = x.to(torch.float8_e4m3fn).float()
    other = (x - 16).clamp(min=256).to(torch.float8_e4m3fn).float()  # one step down at most
    diff = float((near - other).abs().max())
    assert diff == 32.0
    limit = LIMITS["float8_e4m3"] * max(1.0, float(near.abs().max()))
    assert diff <= limit and diff > LIMITS["float32"] * 448


def test_a_required_option_is_an_unknown_argument_not_none() -> None:
    """``add_argument("--n", required=True)`` gives no value without the user's command
    line (``python file.py`` exits with a usage error). It was read as argparse's None, and
    the kernel was traced with N=None: a "lowering failed" finding about a kernel the tool
    never examined. Now the arguments are missing, and the cell could not be examined."""
    cells = _cells(ROOT / "tests" / "fixtures" / "required_args")
    assert set(cells) == {"required_options[c,fp32]", "required_options[cuda,fp32]"}
    for cell in cells.values():
        assert cell["missing"] == ["N", "block"]
        assert "N" not in cell["kwargs"]["args"]
