"""A library module's kernel (no entry point of its own) is examined as the file importing
it builds it (tests/fixtures/run_kernels/row_lib.py, built by uses_row_lib.py): its
arguments and their sources, the importing file's own check, the dependency on that file,
and TileLang's own compile of the same call agreeing; alone in its folder it could not be
examined, as before."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import SignalDict
from laya_tui.families.tilelang.importers import importers_of
from tests._signals import detail_of
from tests._tilelang_cells import run_folder_cell

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "fixtures" / "run_kernels"

needs_cc = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                              reason="no C++ compiler on PATH: target c builds with it")


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


def test_the_importing_files_are_found_statically(tmp_path: Path) -> None:
    assert importers_of(str(RUN / "row_lib.py")) == [str(RUN / "uses_row_lib.py")]
    main = "\nif __name__ == '__main__':\n    print(X)\n"
    (tmp_path / "lib.py").write_text("X = 1\n")
    (tmp_path / "a.py").write_text("from lib import X\n" + main)
    (tmp_path / "test_a.py").write_text("import lib\ndef test_x():\n    pass\n")
    (tmp_path / "b.py").write_text("from . import lib\ndef main():\n    pass\n")
    (tmp_path / "c.py").write_text("import library\n" + main)
    (tmp_path / "__init__.py").write_text("from .lib import X\n")  # no entry point: not run
    (tmp_path / "uses.py").write_text("from lib import X\n")  # a library module too
    (tmp_path / "broken.py").write_text("import lib(\n")
    assert [Path(p).name for p in importers_of(str(tmp_path / "lib.py"))] == [
        "a.py", "b.py", "test_a.py"]


def test_the_workspace_s_tests_that_import_a_kernel_file_are_found(tmp_path: Path) -> None:
    """A project's tests/ import its kernels by the package's dotted name (or the kernel's
    name from the package); those naming the kernel come first, tests first among them."""
    pkg = tmp_path / "src" / "proj" / "ops"
    pkg.mkdir(parents=True)
    (pkg / "silu.py").write_text("def silu_kernel(M):\n    pass\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(
        "from proj.ops import silu_kernel\ndef test_silu():\n    silu_kernel(4)\n")
    (tmp_path / "tests" / "test_other.py").write_text(
        "from proj.ops import gelu_kernel\ndef test_gelu():\n    pass\n")
    (tmp_path / "bench.py").write_text(
        "from proj.ops.silu import other\nif __name__ == '__main__':\n    other()\n")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)  # never searched
    (tmp_path / ".venv" / "lib" / "test_v.py").write_text(
        "from proj.ops import silu_kernel\ndef test_v():\n    pass\n")
    found = importers_of(str(pkg / "silu.py"), workspace=str(tmp_path), kernel="silu_kernel")
    assert [os.path.relpath(p, tmp_path) for p in found] == [
        os.path.join("tests", "test_ops.py"), "bench.py"]
    assert importers_of(str(pkg / "silu.py")) == []  # without the workspace: its folder only


@needs_cc
def test_a_library_kernel_is_built_as_the_importing_file_builds_it(
        tl: Any, tmp_path: Path) -> None:
    deps: list[str] = []
    status, signals = _run("row_lib[c,fp32]", tmp_path, deps)
    (low,) = [s for s in signals if s["kind"] == "lowering"]
    d = detail_of(low)
    site = f"uses_row_lib.py: main() at line {_line(RUN / 'uses_row_lib.py', 'row_lib.sums(')}"
    assert status == "ok", low.get("reason")
    assert d["args"] == {"M": 12, "N": 20, "block_M": 3, "dtype": "float32"}
    assert d["arg_sources"] == {"M": site, "N": site, "block_M": site, "dtype": "default"}
    assert d["built_by"]["file"] == str(RUN / "uses_row_lib.py")
    assert d["built_by"]["site"] == site
    assert d["outcome"] == "ran" and d["reference"] == "the file's own check"
    tol = [s for s in signals if s["kind"] == "tolerance"]
    assert tol and all(s["passed"] for s in tol)
    assert str(RUN / "uses_row_lib.py") in deps  # an edit of the importer re-runs the cell
    # TileLang's own compile of the same call builds and computes the same sums
    import torch

    sys.path.insert(0, str(RUN))
    try:
        import row_lib
    finally:
        sys.path.remove(str(RUN))
    kernel = tl.compile(row_lib.row_sum.get_tir(12, 20, 3), out_idx=[1], target="c")
    x = torch.randn(12, 20)
    torch.testing.assert_close(kernel(x), x.sum(dim=1), rtol=1e-4, atol=1e-4)


def test_alone_in_its_folder_it_could_not_be_examined(tl: Any, tmp_path: Path) -> None:
    folder = tmp_path / "k"
    folder.mkdir()
    shutil.copy(RUN / "row_lib.py", folder / "row_lib.py")
    status, signals = _run("row_lib[c,fp32]", tmp_path, [], folder=folder)
    assert status.startswith("error: kernel arguments unknown: row_sum needs M, N"), status
    assert "(the file's own run: no entry point ran)" in status
    assert signals == []


def _run(cid: str, out: Path, deps: list[str], folder: Path = RUN
         ) -> tuple[str, list[SignalDict]]:
    return run_folder_cell(cid, out, folder, add_dep=deps.append)


# -- GPU questions a file's run asks on a machine without a GPU ---------------------------------


def _capture(name: str) -> Any:
    from laya_tui.families.tilelang.capture import capture_file
    from laya_tui.families.tilelang.plain_resolve import expected_kernels

    path = str(RUN / name)
    return capture_file(path, expected_kernels(path, {}))


def test_the_run_gets_past_a_files_gpu_questions_to_its_kernel(tl: Any) -> None:
    """nvcc's compute capability (the capture's sm_90a), a CUDA generator, a backward
    through a GPU-sized reference (faked: zeros, still a graph) and do_bench timings."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the file's run asks it")
    cap = _capture("gpu_checks.py")
    assert cap.entries == [("the __main__ block", "ran")], cap.how_it_ended()
    (build,) = cap.builds_of("double")
    line = _line(RUN / "gpu_checks.py", "y = double(8, 6)(x)")
    assert build.args == {"M": 8, "N": 6, "dtype": "float32"}
    assert build.sources["M"] == f"main() at line {line}"
    assert cap.faked == 1  # the reference matmul: the file's checks are not trusted
    assert torch.cuda.is_available() is False  # every patch is gone after the capture
    assert torch.Generator is torch._C.Generator


GIB = 1 << 30


def test_a_gpu_sized_reference_stops_the_run_instead_of_filling_the_memory(
        tl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """big_reference.py's reference makes a 4 GiB score matrix (a GPU run computes it on
    the GPU): past the process's memory budget (3 GiB here) the stand-in stops the run
    there, with the kernel the file built before it (a capture that went on had the OOM
    killer end the worker: 'crashed', no finding)."""
    import resource

    import torch

    from laya_tui.families.tilelang import capture_stubs

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the file's reference runs there")
    monkeypatch.setattr(capture_stubs, "memory_budget", lambda: 3 * GIB)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cap = _capture("big_reference.py")
    ((entry, how),) = cap.entries
    assert entry == "the __main__ block"
    assert how.startswith(
        "stopped (the file's torch einsum makes a 4.0 GiB result, computed on the GPU in a "
        "GPU run: too big for this machine's memory (with the "), how
    assert how.endswith(" GiB the run holds, more than the 3.0 GiB (1/4 of this machine's "
                        "memory) a capture may use))"), how
    (build,) = cap.builds_of("copy_rows")
    assert build.args == {"M": 8192, "N": 64, "dtype": "float32"}
    assert build.sources["M"] == \
        f"main() at line {_line(RUN / 'big_reference.py', 'kernel = copy_rows(')}"
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 1024, grown_mib


@pytest.mark.parametrize(("headroom", "built"), [(4 * GIB, True), (-GIB, False)])
def test_a_reference_over_1_gib_is_faked_while_the_process_stays_in_its_budget(
        tl: Any, monkeypatch: pytest.MonkeyPatch, headroom: int, built: bool) -> None:
    """reference_first.py computes a 1.1 GiB topk before it builds its kernel (gemm_sp's
    examples do): within the budget the stand-in makes it as zeros and the run goes on to
    the kernel, sized from the result's shape; past it the run stops there, unbuilt."""
    import torch

    from laya_tui.families.tilelang import capture, capture_stubs

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the file's reference runs there")
    assert 0 < capture_stubs.memory_budget() <= os.sysconf("SC_PHYS_PAGES") * os.sysconf(
        "SC_PAGE_SIZE") // 4
    held = capture_stubs.resident_bytes()
    monkeypatch.setattr(capture_stubs, "memory_budget", lambda: held + headroom)
    monkeypatch.setattr(capture, "_CACHE", type(capture._CACHE)())
    cap = _capture("reference_first.py")
    ((entry, how),) = cap.entries
    if built:
        assert how == "ran", how
        (build,) = cap.builds_of("keep_rows")
        assert build.args == {"M": 12288, "N": 8, "dtype": "float32"}
        assert cap.faked == 2  # the scores matmul, then the topk over them
    else:
        assert how.startswith("stopped (the file's torch topk makes a 1.1 GiB result"), how
        assert cap.builds_of("keep_rows") == []


def test_a_faked_result_frees_the_earlier_captures_before_it_gives_up(
        tl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the worker's earlier captures keep (their modules and tensors) must not decide
    whether a file reaches its kernel: past the budget, the capture drops them and looks
    again (here they 'hold' 3 GiB until dropped), then makes the 1.1 GiB result."""
    import torch

    from laya_tui.families.tilelang import capture, capture_stubs

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the file's reference runs there")
    real = capture_stubs.resident_bytes
    held = real()
    released: list[int] = []
    drop = capture._release_captures

    def release() -> None:
        released.append(len(capture._CACHE))
        drop()

    monkeypatch.setattr(capture_stubs, "memory_budget", lambda: held + 2 * GIB)
    monkeypatch.setattr(capture_stubs, "resident_bytes",
                        lambda: real() + (0 if released else 3 * GIB))
    monkeypatch.setattr(capture, "_release_captures", release)
    monkeypatch.setattr(capture, "_CACHE", type(capture._CACHE)(
        {"/earlier.py": ((0, 0, "", ""), capture.Capture(file="/earlier.py"))}))
    cap = _capture("reference_first.py")
    assert released == [1] and "/earlier.py" not in capture._CACHE
    assert cap.entries == [("the __main__ block", "ran")], cap.how_it_ended()
    assert cap.builds_of("keep_rows") and cap.faked == 2


def test_a_file_stopping_without_a_gpu_is_skipped_as_needing_one(tl: Any,
                                                                 tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: exits_without_gpu.py runs here")
    status, signals = _run("exits_without_gpu[c,fp32]", tmp_path, [])
    line = _line(RUN / "exits_without_gpu.py", "if not torch.cuda.is_available()")
    assert status == (
        "skipped: negate is built only after the file's run needs a GPU, so it is examined "
        f"on a GPU host: main() at line {line} asks torch.cuda.is_available() (no GPU here) "
        "and the run then exited (1)")
    assert signals == []


@needs_cc
@pytest.mark.parametrize(("cid", "arg", "value", "outcome"), [
    ("cuda_top_level[c,fp32]", "sizes", [4, 8], "lower-failed"),
    ("dtype_bits[c,fp16-fp32]", "dtype", "float16", "build-failed"),
    ("compiles_at_import[c,fp32]", "M", 64, "lower-failed"),
    ("main_sets_global[c,fp32]", "batch", 2, "lower-failed")])
def test_a_gpu_files_repro_reproduces_on_a_machine_without_a_gpu(
        tl: Any, tmp_path: Path, cid: str, arg: str, value: Any, outcome: str) -> None:
    """cuda_top_level.py makes a cuda tensor at import and passes a tuple of sizes;
    dtype_bits.py's kernel reads ``dtype.bits`` of the TileLang dtype it is given;
    compiles_at_import.py builds its kernel at import; main_sets_global.py's kernel reads a
    global only its __main__ block sets: each cell fails for c, and its repro.py (which
    stands in for a GPU as the capture did, passes sequences as tuples and dtype names as
    TileLang dtypes, stops the file's import at a build and sets the globals the run set
    before the build) agrees."""
    import os
    import subprocess

    status, signals = _run(cid, tmp_path, [])
    (low,) = [s for s in signals if s["kind"] == "lowering"]
    assert status == "failed" and detail_of(low)["outcome"] == outcome
    assert detail_of(low)["args"][arg] == value
    if cid.startswith("main_sets_global"):  # H, not B or D (the kernel does not read them)
        assert detail_of(low)["built_by"]["globals"] == {"H": 3}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, detail_of(low)["repro"]], capture_output=True,
                          text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert low["reason"] is not None
    assert proc.stdout.strip().splitlines()[-1] == low["reason"].split(": ", 1)[1]


def test_a_failing_check_of_stand_in_results_does_not_end_the_run(tl: Any) -> None:
    """check_then_build.py compares a sum of its first kernel's (stand-in) output, then
    builds a second kernel: the comparison is recorded as the first kernel's check (the
    sum made again on its real output), the run goes on."""
    import torch

    cap = _capture("check_then_build.py")
    assert cap.entries == [("the __main__ block", "ran")], cap.how_it_ended()
    assert {b.obj for b in cap.builds} == {"triple", "halve"}
    assert cap.unchecked == 0
    (derived,) = cap.builds_of("triple")[0].call.checks
    assert derived.line == _line(RUN / "check_then_build.py", "assert_close(total")
    (check,) = cap.builds_of("halve")[0].call.checks  # the direct check is recorded
    assert check.line == _line(RUN / "check_then_build.py", "assert_close(halve(16)(x)")
    with pytest.raises(AssertionError):  # outside the capture assert_close raises again
        torch.testing.assert_close(torch.zeros(2), torch.ones(2))


@needs_cc
def test_a_check_the_file_catches_itself_still_fails_and_its_repro_agrees(
        tl: Any, tmp_path: Path) -> None:
    """caught_check.py prints its failing check and exits 0 (TileLang's gdn examples do):
    the cell fails the file's own check, and repro.py (the file run as ``python file.py``)
    reports that failure too instead of "no longer fails"."""
    import os
    import subprocess

    status, signals = _run("caught_check[c,fp32]", tmp_path, [])
    (low,) = [s for s in signals if s["kind"] == "lowering"]
    assert status == "failed" and detail_of(low)["outcome"] == "run-failed"
    assert detail_of(low)["reference"] == "the file's own check"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    plain = subprocess.run([sys.executable, str(RUN / "caught_check.py")],
                           capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert plain.returncode == 0 and "failed Tensor-likes are not close!" in plain.stdout
    proc = subprocess.run([sys.executable, detail_of(low)["repro"]], capture_output=True,
                          text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "Tensor-likes are not close!"


def test_a_file_whose_import_needs_a_gpu_is_skipped_as_needing_one(tl: Any,
                                                                    tmp_path: Path) -> None:
    """imports_need_gpu.py asks CUDA for its device at import: its kernel's arguments are
    plain literals in main(), yet nothing can import the file without a GPU, so the cell
    is skipped with that reason (it was "could not import": no finding either way)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: imports_need_gpu.py imports here")
    status, signals = _run("imports_need_gpu[c,fp32]", tmp_path, [])
    assert status.startswith(
        "skipped: copy_rows's file needs a GPU to be imported, so it is examined on a GPU "
        "host: "), status
    assert "Torch not compiled with CUDA enabled" in status
    assert signals == []


def test_a_run_stopped_by_a_gpu_library_before_the_build_is_skipped_as_needing_a_gpu(
        tl: Any, tmp_path: Path) -> None:
    """main_needs_triton_gpu.py's main() calls a Triton op before it builds its kernel; with
    no GPU, Triton's "0 active drivers" ends the run there: the kernel is skipped as needing
    a GPU, quoting that line (it was "kernel arguments unknown": the tool's failure)."""
    import os

    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has a GPU driver: main_needs_triton_gpu.py runs here")
    status, signals = _run("main_needs_triton_gpu[c,fp32]", tmp_path, [])
    line = _line(RUN / "main_needs_triton_gpu.py", 'raise RuntimeError("0 active')
    assert status == (
        "skipped: scale_rows is built only after the file's run needs a GPU, so it is "
        f"examined on a GPU host: l2norm_fwd() at line {line} calls `raise RuntimeError(\"0 "
        'active drivers ([]). There should only be one.")`, which needs a GPU (0 active '
        "drivers ([]). There should only be one.)"), status
    assert signals == []
