"""Kernel files written the way repositories other than TileLang's examples write them
(tests/fixtures/anywhere): a maker returning a maker, ``T.macro`` pieces assembled in a
closure, ``tilelang.compile(program)`` and ``tilelang.JITKernel(prim)`` on a built PrimFunc,
a kernel compiled in a module's ``__init__``, two kernels built one after the other with
``kernel.params`` read in between, ``@tilelang.jit`` applied in a closure, a kernel defined
inside a ``test_*`` function; and files without kernels (one that builds nothing, one
without TileLang, one that does not import). Every file is accounted for, every kernel is
found from what the file's run builds, and every cell agrees with TileLang's own compile."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._signals import detail_of
from tests._tilelang_cells import folder_cells, run_folder_cell

ROOT = Path(__file__).resolve().parents[1]
ANY = ROOT / "tests" / "fixtures" / "anywhere"
PROBES = str(ROOT / "probes" / "tilelang_matrix.py")
#: kernel cell -> (the file's check as laya-tui names it, its line's text)
KERNELS = {
    "maker_of_maker": "torch.testing.assert_close(c, ref_scaled_add",
    "macro_closure": "torch.testing.assert_close(b, a * 3.0)",
    "module_init": "assert torch.allclose(",
    "two_kernels.tl_mul_relu_fwd": "torch.testing.assert_close(fwd(",
    "two_kernels.tl_mul_relu_bwd": "torch.testing.assert_close(bwd(",
    "fragment_nested": None,  # TileLang refuses it for `c`: no run
    "jit_in_closure.build_negate": "torch.testing.assert_close(k(x), -x)",
    "jit_in_closure.test_double": "torch.testing.assert_close(kernel(a), a * 2)",
}


def _line(file: str, needle: str) -> int:
    text = (ANY / f"{file}.py").read_text().splitlines()
    return next(i for i, ln in enumerate(text, 1) if needle in ln)


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


def test_every_file_yields_cells_or_one_saying_why() -> None:
    cells = folder_cells(ANY)
    assert {c.split("[")[0].split(".")[0] for c in cells} == {p.stem for p in ANY.glob("*.py")}
    kernels = {c.split("[")[0] for c in cells if not c.endswith("[file]")}
    assert kernels == set(KERNELS) | {"broken_import"}
    for name in KERNELS:  # one cell per target, nothing else
        assert {c for c in cells if c.startswith(name + "[")} == {
            f"{name}[c,{'fp16' if name == 'fragment_nested' else 'fp32'}]",
            f"{name}[cuda,{'fp16' if name == 'fragment_nested' else 'fp32'}]"}
    files = {c: cells[c]["kwargs"]["note"] for c in cells if c.endswith("[file]")}
    assert files == {"builds_nothing[file]": None,  # imports TileLang: its run tells
                     "plain_helpers[file]": "has no TileLang import: nothing in it to examine"}
    kinds = {c.split("[")[0]: cells[c]["kwargs"]["kind"] for c in cells}
    assert kinds["maker_of_maker"] == kinds["module_init"] == "nested"
    assert kinds["macro_closure"] == kinds["fragment_nested"] == "nested"


def test_the_capture_names_what_the_run_builds_at_any_depth(tl: Any) -> None:
    import tilelang
    from tilelang.jit.kernel import JITKernel

    from laya_tui.families.tilelang.capture import capture_file
    from laya_tui.families.tilelang.plain_resolve import expected_kernels

    init = JITKernel.__init__
    built = {}
    for file in ("maker_of_maker", "macro_closure", "module_init", "two_kernels"):
        path = str(ANY / f"{file}.py")
        cap = capture_file(path, expected_kernels(path, {}))
        assert cap.entries[-1][1] == "ran", cap.entries  # no stop at a JITKernel or .params
        for b in cap.builds:
            built[b.obj] = b
    assert JITKernel.__init__ is init  # restored
    assert set(built) == {"scaled_add", "build_row_scale", "make_bias_relu",
                          "tl_mul_relu_fwd", "tl_mul_relu_bwd"}
    # the arguments of the outermost call, where the file made it
    b = built["scaled_add"]
    assert b.args == {"N": 64, "block": 16}
    assert b.site == f"the __main__ block at line {_line('maker_of_maker', 'program = ')}"
    assert b.func.orig_func.__qualname__ == "scaled_add.<locals>.kernel_func.<locals>.main"
    assert built["make_bias_relu"].site == \
        f"__init__() at line {_line('module_init', 'tilelang.compile(')}"
    assert built["build_row_scale"].out_idx == [1]  # JITKernel(prim, out_idx=[1], ...)
    # each file's own check recorded, at its line
    cells: dict[str | None, str] = {
             "scaled_add": "maker_of_maker", "build_row_scale": "macro_closure",
             "make_bias_relu": "module_init", "tl_mul_relu_fwd": "two_kernels.tl_mul_relu_fwd",
             "tl_mul_relu_bwd": "two_kernels.tl_mul_relu_bwd"}
    for name, b in built.items():
        (check,) = b.call.checks
        cell = cells[name]
        assert check.line == _line(cell.split(".")[0], str(KERNELS[cell])), name
    # after the capture, JITKernel builds real kernels again
    k = JITKernel(built["scaled_add"].func, out_idx=[2], target="c", execution_backend="cython")
    assert type(k) is JITKernel and tilelang is not None


def test_kernel_params_are_tilelangs_own(tl: Any) -> None:
    """``kernel.params`` on a captured kernel answers what TileLang's compiled kernel
    gives, so a file reading it goes on to its next kernel."""
    import tilelang

    from laya_tui.families.tilelang.capture import capture_file
    from laya_tui.families.tilelang.capture_stubs import StubKernel

    cap = capture_file(str(ANY / "two_kernels.py"))
    for b in cap.builds:
        real = tilelang.compile(b.func, out_idx=b.out_idx, target="c", execution_backend="cython")
        stub = StubKernel(b.func, b.out_idx, b.call, {})
        assert [(list(p.shape), str(p.dtype)) for p in stub.params] == \
            [(list(p.shape), str(p.dtype)) for p in real.params]


@pytest.mark.parametrize("target", ["c", "cuda"])
def test_cells_agree_with_tilelangs_own_compile(tl: Any, tmp_path: Path, target: str) -> None:
    """A ``c`` cell fails exactly when ``tilelang.compile(..., target="c")`` does, with its
    first line, and otherwise runs the kernel and compares it under the file's own check; a
    ``cuda`` cell builds (no GPU here: built, not run) when TileLang's CUDA codegen does."""
    import tilelang
    import torch

    from laya_tui.families.tilelang.capture import capture_file

    for name, needle in KERNELS.items():
        dtype = "fp16" if name == "fragment_nested" else "fp32"
        status, signals = run_folder_cell(f"{name}[{target},{dtype}]", tmp_path, ANY)
        (low,) = [s for s in signals if s["kind"] == "lowering"]
        file, _, obj = name.partition(".")
        build = next(b for b in capture_file(str(ANY / f"{file}.py")).builds
                     if b.obj == (obj or b.obj))
        tgt: Any = "c" if target == "c" else {"kind": "cuda", "arch": "sm_90a"}
        try:
            if target == "c":
                tilelang.compile(build.func, out_idx=build.out_idx, target=tgt,
                                 execution_backend="cython")
            else:  # what tilelang.compile does before nvcc, under the target's context
                from tvm.target import Target

                with Target(tgt) as t:
                    tilelang.lower(build.func, target=t, enable_device_compile=False)
        except Exception as exc:  # noqa: BLE001 - TileLang's own refusal
            first = str(exc).strip().splitlines()[0]
            assert (status, detail_of(low)["outcome"]) == ("failed", "lower-failed"), name
            assert low["reason"] is not None
            assert first in low["reason"], (name, low["reason"])
            continue
        assert status == "ok", (name, low.get("reason"))
        if target == "cuda":
            assert detail_of(low)["outcome"] == "built" and detail_of(low)["not_run"], name
            continue
        assert detail_of(low)["outcome"] == "ran", name
        (tol,) = [s for s in signals if s["kind"] == "tolerance"]
        how = "torch.allclose" if "allclose" in str(needle) else "torch.testing.assert_close"
        assert tol["passed"] and detail_of(tol)["check"].startswith(
            f"{how} at line {_line(file, str(needle))}"), (name, tol)
    assert torch is not None


def test_a_file_without_a_tilelang_import_says_so_without_running(tmp_path: Path) -> None:
    assert run_folder_cell("plain_helpers[file]", tmp_path, ANY)[0] == \
        "skipped: plain_helpers.py has no TileLang import: nothing in it to examine"


def test_files_without_kernel_cells_say_why(tl: Any, tmp_path: Path) -> None:
    def status(cid: str) -> str:
        return run_folder_cell(cid, tmp_path, ANY)[0]

    assert status("builds_nothing[file]") == (
        "skipped: builds_nothing.py imports TileLang but defines no kernel laya-tui can find "
        "and builds none when run (the __main__ block ran)")
    # its kernel is found by reading; the import error is the file's own `python file.py`
    assert status("broken_import[c,fp32]").startswith(
        "error: could not import broken_import.py: ModuleNotFoundError: No module named "
        "'not_a_module_anywhere'")


def test_cli_lists_and_reports_every_file(tl: Any, tmp_path: Path) -> None:
    """As an installed user runs it on their own folder: --list names every file, and the
    report has a cell for each with its reason; the import error fails the verdict."""
    kdir = tmp_path / "kernels"
    shutil.copytree(ANY, kdir)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    listed = subprocess.run([sys.executable, "-m", "laya_tui", "--list", "--probes", PROBES,
                             "--kernels", str(kdir)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300, env=env)
    assert listed.returncode == 0, listed.stderr[-2000:]
    ids = [ln.split()[0] for ln in listed.stdout.splitlines() if ln.startswith("tilelang/")]
    assert {i.split("/")[1].split("[")[0].split(".")[0] for i in ids} == \
        {p.stem for p in ANY.glob("*.py")}
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--jobs", "1",
         "--probes", PROBES, "--kernels", str(kdir), "--only", "tilelang/*[file]",
         "--only", "tilelang/broken_import[c,*", "--only", "tilelang/module_init[c,*",
         "--no-cache", "--json", str(out), "--out", str(tmp_path / "o"),
         "--cache-dir", str(tmp_path / "c")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    doc = json.loads(out.read_text())
    got = {p["id"]: p["status"] for p in doc["probes"] if p["family"] == "tilelang"}
    assert got == {"tilelang/builds_nothing[file]": "skipped",
                   "tilelang/plain_helpers[file]": "skipped",
                   "tilelang/broken_import[c,fp32]": "error",
                   "tilelang/module_init[c,fp32]": "ok"}, proc.stderr[-3000:]
    assert proc.returncode == 1 and "verdict: FAIL" in proc.stderr
    assert "plain_helpers.py has no TileLang import" in json.dumps(doc)


def test_the_kernel_args_table_wins_for_a_kernel_made_deeper(tl: Any, tmp_path: Path) -> None:
    """The pyproject table's values reach the run's call of the top-level maker, so the
    kernel TileLang traces has the table's sizes (the file's own check, made with its own
    sizes, is not used)."""
    (tmp_path / "kernels").mkdir()
    shutil.copy(ANY / "maker_of_maker.py", tmp_path / "kernels" / "maker_of_maker.py")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.laya-tui.kernel-args."kernels/maker_of_maker.py::scaled_add"]\nN = 32\n')
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--jobs", "1",
         "--probes", PROBES, "--only", "tilelang/maker_of_maker[c,*", "--no-cache",
         "--json", str(out), "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    (probe,) = [p for p in json.loads(out.read_text())["probes"] if p["family"] == "tilelang"]
    (low,) = [s for s in probe["signals"] if s["kind"] == "lowering"]
    assert low["detail"]["args"] == {"N": 32, "block": 16}
    assert low["detail"]["arg_sources"]["N"] == "pyproject kernels/maker_of_maker.py::scaled_add"
    source = next(s for s in probe["signals"] if s["kind"] == "artifact"
                  and s["subject"].endswith("/source"))
    text = Path(source["detail"]["path"]).read_text()  # TileLang's own C: 32 / 16 blocks
    assert "bx < 2;" in text and "bx < 4;" not in text


def test_a_kernel_built_only_with_a_missing_package_is_skipped_with_the_hint(
        tl: Any, tmp_path: Path) -> None:
    """The file's own test needs a package this machine lacks: the kernel it would build
    is skipped, naming the package and how to install it (not "could not be examined"),
    while the file's other kernel is examined as usual."""
    folder = ROOT / "tests" / "fixtures" / "needs_package"
    import importlib.util

    assert importlib.util.find_spec("not_installed_anywhere") is None
    status, _ = run_folder_cell("needs_pkg.transformed[c,fp32]", tmp_path, folder)
    assert status.startswith("skipped: transformed was not built: the file's own "
                             "test_transformed() needs `not_installed_anywhere`"), status
    assert "(pip install not_installed_anywhere)" in status
    # (the file's one other kernel keeps the file's name)
    status, _ = run_folder_cell("needs_pkg[c,fp32]", tmp_path, folder)
    assert status == "ok", status


def test_profiler_run_once_gives_outputs_so_the_files_check_is_reached(
        tl: Any, tmp_path: Path) -> None:
    """``profiler.run_once()`` returns outputs during the capture, as TileLang's does, so a
    file asserting on them goes on to its ``assert_allclose``, which becomes the cell's
    comparison."""
    folder = ROOT / "tests" / "fixtures" / "profiler_run"
    status, signals = run_folder_cell("run_once[c,fp32]", tmp_path, folder)
    assert status == "ok", status
    (tol,) = [s for s in signals if s["kind"] == "tolerance"]
    assert tol["passed"] and detail_of(tol)["check"].startswith("profiler.assert_allclose")
    assert tol["limit"] is not None and tol["limit"] < 1e-5  # the file's own atol/rtol (1e-6)


def test_assert_torch_equal_on_an_in_place_kernels_masks_is_the_files_check(
        tl: Any, tmp_path: Path) -> None:
    """``assert torch.equal(isneginf(got), isneginf(ref))`` on an in-place kernel's output
    is recorded as the file's check (during the capture it would fail on the stand-in and end
    the run), made again on the real output, and so is the ``assert_close`` after it.
    TileLang 0.1.14 has no C for ``T.infinity`` (its own ``tilelang.lower(..., target="c")``
    raises the same): there the cell fails to lower and no check is reached."""
    from importlib.metadata import version

    folder = ROOT / "tests" / "fixtures" / "own_checks_equal"
    status, signals = run_folder_cell("mask_fill[c,fp32]", tmp_path, folder)
    if version("tilelang") == "0.1.14":  # the version matrix: noxfile.py tilelang(0.1.14)
        (low,) = [s for s in signals if s["kind"] == "lowering"]
        assert low["reason"] is not None
        assert status == "failed" and low["reason"].startswith("lower failed: Unresolved call")
        assert low["reason"] is not None
        assert 'name="tl.infinity"' in low["reason"], low["reason"]
        assert not [s for s in signals if s["kind"] == "tolerance"]
        return
    assert status == "ok", status
    checks = sorted(detail_of(s)["check"].split(" at ")[0] for s in signals
                    if s["kind"] == "tolerance")
    assert checks == ["torch.equal", "torch.testing.assert_close"], checks
    assert all(s["passed"] for s in signals if s["kind"] == "tolerance")


def test_a_kernel_reading_a_view_another_in_place_kernel_wrote_is_not_compared(
        tl: Any, tmp_path: Path) -> None:
    """The first kernel writes ``buf.squeeze(0)`` in place, the second reads ``buf``: the
    second's captured input is the first's stand-in output (never written), so its check is
    not made again on it (that gave a false tolerance failure on TileLang's example_mhc_pre
    on an H200, whose own run passes); it says where its input comes from instead."""
    folder = ROOT / "tests" / "fixtures" / "chained_views"
    status, signals = run_folder_cell("two_in_place.add_one_into[c,fp32]", tmp_path, folder)
    assert status == "ok", status
    assert not [s for s in signals if s["kind"] == "tolerance"]
    (low,) = [s for s in signals if s["kind"] == "lowering"]
    assert detail_of(low)["not_run"] == "inputs made by another kernel"
    assert "another TileLang kernel (square_into)" in detail_of(low)["run_skipped"]


def test_a_single_file_run_and_a_folder_run_give_the_same_cells(tl: Any, tmp_path: Path) -> None:
    """``--kernels FILE.py`` takes one kernel file; its cells, statuses and comparisons are
    those of the same file in a folder run."""
    def run(kernels: str, *only: str) -> dict[str, Any]:
        out = tmp_path / f"r{len(list(tmp_path.glob('r*.json')))}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--jobs", "1",
             "--probes", PROBES, "--kernels", kernels, *only, "--no-cache", "--json", str(out),
             "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")],
            cwd=tmp_path, capture_output=True, text=True, timeout=600,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert out.exists(), proc.stderr[-2000:]
        return {p["id"]: (p["status"], sorted((s["subject"], s["value"], s["passed"])
                                              for s in p["signals"] if s["kind"] == "tolerance"))
                for p in json.loads(out.read_text())["probes"] if p["family"] == "tilelang"}

    alone = run(str(ANY / "two_kernels.py"))
    in_folder = run(str(ANY), "--only", "tilelang/two_kernels*")
    assert alone == in_folder and len(alone) == 4
    assert all(status == "ok" for status, _ in alone.values())
    assert sum(len(tol) for _, tol in alone.values()) == 2  # each c cell: the file's check


def test_the_table_builds_a_maker_nothing_in_its_file_calls(tl: Any, tmp_path: Path) -> None:
    """A maker returning ``tilelang.compile(main)`` that the file never calls: without sizes
    the file's one cell says it builds nothing; with the pyproject table's sizes laya-tui finds
    the maker and calls it itself; the kernel lowered is TileLang's at those sizes."""
    (tmp_path / "kernels").mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "table_maker" / "maker_compiled.py",
                tmp_path / "kernels" / "maker_compiled.py")

    def run() -> dict[str, Any]:
        out = tmp_path / "r.json"
        subprocess.run(
            [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--jobs", "1",
             "--probes", PROBES, "--only", "tilelang/maker_compiled[*", "--no-cache",
             "--json", str(out), "--out", str(tmp_path / "o"), "--cache-dir",
             str(tmp_path / "c")], cwd=tmp_path, capture_output=True, text=True, timeout=600,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        (probe,) = [p for p in json.loads(out.read_text())["probes"]
                    if p["family"] == "tilelang" and "[cuda" not in p["id"]]
        return probe

    without = run()  # the file's one line: nothing in it builds a kernel
    assert without["id"] == "tilelang/maker_compiled[file]" and without["status"] == "skipped"
    assert "builds none when run" in without["reason"]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.laya-tui.kernel-args."kernels/maker_compiled.py::_build"]\nM = 8\nN = 32\n')
    probe = run()
    assert probe["status"] == "ok", probe["reason"]
    (low,) = [s for s in probe["signals"] if s["kind"] == "lowering"]
    assert low["detail"]["args"] == {"M": 8, "N": 32, "block": 16}
    import tilelang

    sys.path.insert(0, str(tmp_path / "kernels"))
    try:
        import maker_compiled
    finally:
        sys.path.remove(str(tmp_path / "kernels"))
    theirs = maker_compiled._build(8, 32).get_kernel_source()  # TileLang's own build
    source = next(s for s in probe["signals"] if s["kind"] == "artifact"
                  and s["subject"].endswith("/source"))
    assert "bx < 2;" in Path(source["detail"]["path"]).read_text() and "bx < 2;" in theirs
    assert tilelang is not None
