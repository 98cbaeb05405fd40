"""TileLang kernel files written the way TileLang's examples are (tests/fixtures/upstream_kernels):
each @tilelang.jit kernel's arguments, cells and outcomes, the error of a kernel that cannot
be examined, the IR before a failing pass and a failing cell's repro.py."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import SignalDict
from laya_tui.families.tilelang.discover import matrix_cells
from tests._signals import detail_of
from tests._tilelang_cells import run_folder_cell
from tests._util import heavy_imports

ROOT = Path(__file__).resolve().parents[1]
UP = ROOT / "tests" / "fixtures" / "upstream_kernels"
KERNELS = ROOT / "kernels"


def _cells(folder: Path = UP, **opts: Any) -> dict[str, dict[str, Any]]:
    """The cells, each with ``missing``: the static reading's gaps, which are no cell
    parameter (a kernel the file's run builds misses nothing; issue 41)."""
    from laya_tui.families.tilelang.plain_resolve import static_missing

    opts = {"kernels": [str(folder)], "workspace": str(ROOT), **opts}
    cells: dict[str, dict[str, Any]] = {f"{c['name']}[{c['id']}]": dict(c)
                                        for c in matrix_cells(opts)}
    for c in cells.values():
        assert "missing" not in c["kwargs"]
        if c["kwargs"].get("obj"):
            c["missing"] = static_missing(c["kwargs"]["file"], c["kwargs"]["obj"], opts)
    return cells


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


# -- discovery: every kernel, its arguments and where they came from (no TileLang) ------------


def test_every_jit_kernel_and_each_of_two_in_a_file_gets_cells() -> None:
    cells = _cells()
    names = {c["name"] for c in cells.values()}
    assert names == {"elementwise_add", "gemm", "gemm_autotune", "rms_norm.rms_norm_splitk",
                     "rms_norm.rms_norm", "online_softmax", "no_args", "scale_serial",
                     "mha_fwd", "unknown_args"}
    for c in cells.values():
        assert c["kwargs"]["kind"] == "jit" and c["deps"] == [c["kwargs"]["file"]]
    # one cell per target, labelled with the kernel's own dtype, no specialization axis
    assert {k for k in cells if k.startswith("gemm[")} == {"gemm[c,fp16]", "gemm[cuda,fp16]"}
    assert "gemm_autotune[c,bf16]" in cells and "elementwise_add[c,fp32]" in cells
    assert cells["rms_norm.rms_norm[c,fp32]"]["kwargs"]["obj"] == "rms_norm"
    assert cells["gemm[c,fp16]"]["kwargs"]["spec"] is None


def test_arguments_come_from_the_files_own_calls_constants_and_autotune() -> None:
    cells = _cells()

    def args(cid: str) -> tuple[dict[str, Any], dict[str, str]]:
        kw = cells[cid]["kwargs"]
        return kw["args"], kw["arg_sources"]

    # matmul.compile(M=512, ...) in main()
    a, src = args("gemm[c,fp16]")
    call = f"main() at line {_line(UP / 'gemm.py', 'matmul.compile(')}"
    assert {k: a[k] for k in ("M", "N", "K", "block_M", "block_N", "block_K")} == {
        "M": 512, "N": 512, "K": 256, "block_M": 128, "block_N": 128, "block_K": 32}
    assert src["M"] == call and src["dtype"] == "default" and a["dtype"] == "float16"
    # eager style: M, N from the torch.randn(M, N) tensors main() passes, main's defaults
    a, src = args("elementwise_add[c,fp32]")
    assert (a["M"], a["N"], a["block_M"], a["threads"], a["in_dtype"]) == (256, 512, 32, 128,
                                                                            "float32")
    line = _line(UP / "elementwise_add.py", "out = elementwise_add(")
    assert src["M"] == f"tensor B: main() at line {line}"
    # @autotune on @tilelang.jit, main() passes no tiling: TileLang tunes, the first config
    # stands in for its choice
    a, src = args("gemm_autotune[c,bf16]")
    assert (a["M"], a["block_M"], a["block_N"], a["num_stages"]) == (512, 64, 64, 2)
    assert src["block_M"].startswith("first @autotune config") and src["M"].startswith("main()")
    assert cells["gemm_autotune[c,bf16]"]["kwargs"]["tuned"] is True
    # two kernels in one file: LAYA_ARGS for one, the __main__ block's literals for the other
    a, src = args("rms_norm.rms_norm_splitk[c,fp32]")
    assert a == {"M": 256, "N": 1024, "blk_m": 1, "blk_k": 256} and set(src.values()) == {
        "LAYA_ARGS"}
    a, src = args("rms_norm.rms_norm[c,fp32]")
    assert a == {"M": 256, "N": 1024, "blk_m": 1}
    assert src["M"] == "the __main__ block at line " + str(_line(UP / "rms_norm.py",
                                                                 "rms_norm.compile("))
    assert cells["rms_norm.rms_norm[c,fp32]"]["kwargs"]["pass_configs"] == {
        "tl.disable_tma_lower": True}
    # @autotune + @tilelang.jit(out_idx, pass_configs): main() passes the tiling, so
    # TileLang does not tune (the rest keep their defaults)
    a, src = args("mha_fwd[cuda,fp16]")
    assert (a["batch"], a["heads"], a["seq_len"], a["dim"], a["block_M"]) == (1, 2, 256, 64, 64)
    assert src["seq_len"] == "main() at line " + str(_line(UP / "mha_fwd.py", "kernel = flash"))
    assert cells["mha_fwd[cuda,fp16]"]["kwargs"]["tuned"] is False
    assert cells["mha_fwd[cuda,fp16]"]["kwargs"]["pass_configs"] == {
        "tl.enable_fast_math": True}
    # a test function's positional literals
    a, src = args("scale_serial[c,fp32]")
    assert (a["M"], a["N"], a["block_M"]) == (37, 24, 16)
    assert src["M"] == "test_scale_add() at line " + str(_line(UP / "scale_serial.py",
                                                               "kernel = scale_add("))
    # a module-level call outside the __main__ block
    _, src = args("online_softmax[c,fp16]")
    assert src["M"] == "tensor X: the file's top level at line " + str(
        _line(UP / "online_softmax.py", "Y = softmax_kernel(X)"))
    # nobody gives them: never called (no_args) or called with unknowable sizes
    kw = cells["no_args[c,fp32]"]["kwargs"]
    assert cells["no_args[c,fp32]"]["missing"] == ["M", "N", "block_M"]
    assert kw["called"] is False
    kw = cells["unknown_args[c,fp32]"]["kwargs"]
    assert cells["unknown_args[c,fp32]"]["missing"] == ["M", "N"] and kw["called"] is True


def test_pyproject_table_wins_and_sets_dtypes_and_targets() -> None:
    table = {"rms_norm.py::rms_norm_splitk": {"M": 128, "blk_k": 512},
             "tests/fixtures/upstream_kernels/no_args.py::scale_rows": {
                 "M": 64, "N": 32, "block_M": 16, "dtypes": ["float32", "float16"],
                 "targets": ["c"]}}
    cells = _cells(kernel_args=table)
    a = cells["rms_norm.rms_norm_splitk[c,fp32]"]["kwargs"]
    assert (a["args"]["M"], a["args"]["blk_k"], a["args"]["N"]) == (128, 512, 1024)
    assert a["arg_sources"]["M"] == "pyproject rms_norm.py::rms_norm_splitk"
    assert a["arg_sources"]["N"] == "LAYA_ARGS"
    no_args = sorted(k for k in cells if k.startswith("no_args["))
    assert no_args == ["no_args[c,fp16]", "no_args[c,fp32]"]
    kw = cells["no_args[c,fp16]"]["kwargs"]
    assert cells["no_args[c,fp16]"]["missing"] == []
    assert kw["dtype_arg"] == "dtype" and kw["dtype"] == "float16"


def test_the_suggested_toml_lines_are_valid_and_make_the_kernel_examinable(
        tmp_path: Path) -> None:
    """The lines name every missing argument; a value only where the file has one (no
    placeholder that cannot be right); filled in, the kernel is examinable."""
    from laya_tui.cli.config import load_settings
    from laya_tui.families.tilelang.arg_table import file_defaults, missing_message

    ws = tmp_path / "ws"
    (ws / "kernels").mkdir(parents=True)
    shutil.copy(UP / "no_args.py", ws / "kernels" / "no_args.py")
    cell = _cells(ws / "kernels", workspace=str(ws))["no_args[c,fp32]"]
    kw, missing = cell["kwargs"], cell["missing"]
    tree = ast.parse((ws / "kernels" / "no_args.py").read_text())
    msg = missing_message("scale_rows", kw["key"], missing, str(ws),
                          file_defaults(tree, missing), called=False)
    head, *toml_lines = msg.splitlines()
    assert head.startswith("scale_rows is defined but nothing in its file or the files "
                           "importing it builds it")
    assert "(M, N, block_M)" in head and str(ws / "pyproject.toml") in head
    assert toml_lines == ['[tool.laya-tui.kernel-args."kernels/no_args.py::scale_rows"]',
                          "# M = ?  (your value: the file gives none)",
                          "# N = ?  (your value: the file gives none)",
                          "# block_M = ?  (your value: the file gives none)"]
    tomllib.loads("\n".join(toml_lines))  # valid as they are
    filled = [toml_lines[0]] + [ln.lstrip("# ").split("  (")[0].replace("?", "16")
                                for ln in toml_lines[1:]]
    (ws / "pyproject.toml").write_text("\n".join(filled) + "\n")
    settings = load_settings(str(ws))
    cell = _cells(ws / "kernels", workspace=str(ws),
                  kernel_args=settings["kernel_args"])["no_args[c,fp32]"]
    assert cell["missing"] == [] and cell["kwargs"]["args"]["block_M"] == 16


def test_lines_to_add_take_the_files_own_defaults() -> None:
    from laya_tui.families.tilelang.arg_table import file_defaults, lines_to_add

    tree = ast.parse(textwrap.dedent("""
        import argparse
        BLOCK = 64
        def main(seq_len=512):
            p = argparse.ArgumentParser()
            p.add_argument("--topk", type=int, default=6)
            p.add_argument("--dtype", default="float16")
            args = p.parse_args()
    """))
    defaults = file_defaults(tree, ["topk", "seq_len", "BLOCK", "dtype", "batch"])
    assert lines_to_add("k.py::f", ["topk", "seq_len", "BLOCK", "dtype", "batch"],
                        defaults)[1:] == [
        "topk = 6  # the file's argparse default --topk",
        "seq_len = 512  # the default of main(seq_len=...)",
        "BLOCK = 64  # the file's constant BLOCK",
        'dtype = "float16"  # the file\'s argparse default --dtype',
        "# batch = ?  (your value: the file gives none)"]


def test_a_bad_kernel_args_table_is_a_one_line_usage_error(tmp_path: Path) -> None:
    from laya_tui.cli.config import load_settings
    from laya_tui.core.errors import UsageError

    (tmp_path / "pyproject.toml").write_text(
        '[tool.laya-tui.kernel-args."k.py::f"]\ntargets = ["tpu"]\n')
    with pytest.raises(UsageError, match=r"targets: unknown target 'tpu'"):
        load_settings(str(tmp_path))
    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui.kernel-args]\nf = 1\n')
    with pytest.raises(UsageError, match=r"file.py::kernel"):
        load_settings(str(tmp_path))


def test_factory_cells_are_unchanged() -> None:
    """The repo's own factories keep their ids and their parameters (cache keys)."""
    cells = [c for c in matrix_cells({"kernels": [str(KERNELS)], "workspace": str(ROOT)})
             if c["id"] != "file"]  # common.py and reference.py: a cell each saying why
    assert len(cells) == 60
    for c in cells:
        assert set(c["kwargs"]) == {"kernel", "file", "kind", "factory", "line", "target",
                                    "dtype", "spec"}


def test_discovery_of_upstream_files_imports_nothing_heavy() -> None:
    code = (f"from laya_tui.families.tilelang.discover import matrix_cells\n"
            f"assert len(matrix_cells({{'kernels': [{str(UP)!r}]}})) == 20\n")
    assert heavy_imports(code) == []


# -- running cells ------------------------------------------------------------------------------


def _run(cid: str, out: Path, folder: Path = UP) -> tuple[str, list[SignalDict]]:
    return run_folder_cell(cid, out, folder)


def _lowering(signals: list[SignalDict]) -> SignalDict:
    low = [s for s in signals if s["kind"] == "lowering"]
    assert len(low) == 1, signals
    return low[0]


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


def test_a_kernel_the_file_calls_with_unknown_arguments_could_not_be_examined(
        tl: Any, tmp_path: Path) -> None:
    status, signals = _run("unknown_args[c,fp32]", tmp_path)
    assert status.startswith("error: kernel arguments unknown: shift_rows needs M, N ")
    assert '[tool.laya-tui.kernel-args."tests/fixtures/upstream_kernels/unknown_args.py::' \
           'shift_rows"]\n# M = ?  (your value: the file gives none)\n# N = ?' in status
    line = _line(UP / "unknown_args.py", 'os.environ["MY_M"]')
    assert status.endswith(f"(the file's own run: the __main__ block raised KeyError at line "
                           f"{line}: 'MY_M')")
    assert not [s for s in signals if s["kind"] == "lowering"]  # nothing was lowered


def test_a_kernel_nothing_calls_is_skipped_with_the_lines_to_add(tl: Any,
                                                                 tmp_path: Path) -> None:
    status, signals = _run("no_args[c,fp32]", tmp_path)
    assert status.startswith("skipped: scale_rows is defined but nothing in its file or the "
                             "files importing it builds it: nothing to examine until it gets "
                             "its arguments (M, N, block_M)")
    assert '"tests/fixtures/upstream_kernels/no_args.py::scale_rows"]\n# M = ?' in status
    assert signals == []


def test_a_file_building_cuda_tensors_at_import_is_captured_on_the_cpu(
        tl: Any, tmp_path: Path) -> None:
    """online_softmax.py builds its input with device="cuda" and calls the kernel at import:
    the capture builds those tensors on the CPU here, so the cell reaches TileLang."""
    status, signals = _run("online_softmax[c,fp16]", tmp_path)
    low = _lowering(signals)
    assert status == "failed" and detail_of(low)["outcome"] == "lower-failed"
    d = detail_of(low)
    assert d["built_by"]["entry"] == "the import"
    line = _line(UP / "online_softmax.py", "Y = softmax_kernel(X)")
    assert d["built_by"]["site"] == f"the file's top level at line {line}"
    assert d["args"]["X"] == {"tensor": [128, 1024], "dtype": "float16"}
    assert d["arg_sources"]["BLOCK_N"] == "default"


needs_cc = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                              reason="no C++ compiler on PATH: target c builds with it")


@needs_cc
def test_a_cpu_friendly_kernel_runs_against_its_ref_program(tl: Any, tmp_path: Path) -> None:
    """scale_serial.py's test function checks the kernel with torch.testing.assert_close:
    the cell runs the built kernel on the file's own inputs against its expected tensor."""
    status, signals = _run("scale_serial[c,fp32]", tmp_path)
    low = _lowering(signals)
    assert status == "ok" and detail_of(low)["outcome"] == "ran"
    assert detail_of(low)["reference"] == "the file's own check"
    tol = [s for s in signals if s["kind"] == "tolerance"]
    assert [s["subject"] for s in tol] == ["scale_serial[c,fp32]/out0"] and tol[0]["passed"]
    line = _line(UP / "scale_serial.py", "torch.testing.assert_close(")
    assert detail_of(tol[0])["check"] == f"torch.testing.assert_close at line {line}"
    passes = detail_of(low)["passes"]
    assert passes["passes"] > 20 and passes["total_s"] > 0 and len(passes["slowest"]) == 6
    assert all(isinstance(n, str) and s >= 0 and runs >= 1 for n, s, runs in passes["slowest"])
    assert "repro" not in detail_of(low) and "ir_before" not in detail_of(low)


@pytest.fixture(scope="module")
def failing_gemm(tl: Any, tmp_path_factory: pytest.TempPathFactory) -> SignalDict:
    out = tmp_path_factory.mktemp("gemm")
    status, signals = _run("gemm_autotune[c,bf16]", out)
    assert status == "failed"
    return _lowering(signals)


def test_ir_before_the_failing_pass_names_its_input_buffers(failing_gemm: dict[str, Any]
                                                            ) -> None:
    d = failing_gemm["detail"]
    assert d["pass"] == "tl.LayoutInference" and d["ir_before_pass"] == "tl.LayoutInference"
    assert d["args"]["block_M"] == 64  # built with the first autotune config
    ir = Path(d["ir_before"]).read_text()
    assert ir.startswith("# The IR pass tl.LayoutInference received (it raised).")
    implicated = [b["name"] for b in d["buffers"]]
    assert "C_local" in implicated
    for name in implicated:
        assert f"{name} = T.sblock_alloc_buffer(" in ir or f"{name} = T.match_buffer(" in ir
    for name in ("A_shared", "B_shared"):  # the other buffers the pass received
        assert f"{name} = T.sblock_alloc_buffer((64, 32), \"bfloat16\", scope=\"shared" in ir
    diff = Path(d["last_pass_diff"]).read_text()
    last = d["last_pass"].split(" (")[0]
    assert diff.startswith(f"--- before {last}\n+++ after {last}\n@@")
    assert Path(d["pass_timing_report"]).read_text().startswith("=")
    assert os.path.dirname(d["repro"]) == os.path.dirname(d["ir_before"])


def test_repro_prints_the_cells_diagnostic_without_laya_tui(failing_gemm: dict[str, Any],
                                                            tmp_path: Path) -> None:
    poison = tmp_path / "poison" / "laya_tui"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text("raise ImportError('repro.py must not need laya-tui')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(poison.parent)
    proc = subprocess.run([sys.executable, failing_gemm["detail"]["repro"]],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == failing_gemm["reason"].split(": ", 1)[1]


def test_cli_unknown_kernel_arguments_fail_the_run(tmp_path: Path) -> None:
    """Exit 1, verdict FAIL; summary, JUnit and markdown say "could not be examined"."""
    kdir = tmp_path / "k"
    kdir.mkdir()
    shutil.copy(UP / "unknown_args.py", kdir / "unknown_args.py")
    out = {n: tmp_path / n for n in ("r.json", "j.xml", "m.md")}
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--jobs", "1",
         "--probes", str(ROOT / "probes" / "tilelang_matrix.py"), "--kernels", str(kdir),
         "--only", "tilelang/unknown_args[c,*", "--no-cache", "--json", str(out["r.json"]),
         "--junit", str(out["j.xml"]), "--markdown", str(out["m.md"]),
         "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1, proc.stderr[-2000:]
    doc = json.loads(out["r.json"].read_text())
    (p,) = [p for p in doc["probes"] if p["family"] == "tilelang"]
    assert p["id"] == "tilelang/unknown_args[c,fp32]" and p["status"] == "error"
    assert doc["summary"]["passed"] is False
    assert "verdict: FAIL" in proc.stderr and "1 could not be examined" in proc.stderr
    assert "  ⚠ could not be examined: tilelang/unknown_args[c,fp32]: kernel arguments unknown" \
        in proc.stderr
    assert '      [tool.laya-tui.kernel-args."k/unknown_args.py::shift_rows"]' in proc.stderr
    junit = out["j.xml"].read_text()
    assert '<error type="not-examined" message="⚠ could not be examined: kernel arguments' in junit
    assert "<failure" not in junit and 'errors="1"' in junit
    try:
        import xmlschema
    except ImportError:
        pass  # the dev extra validates it against junit-10.xsd
    else:
        xmlschema.XMLSchema(str(ROOT / "tests" / "fixtures" / "junit-10.xsd")).validate(
            str(out["j.xml"]))
    md = out["m.md"].read_text()
    assert "## laya-tui: ❌ FAIL" in md and "1 could not be examined" in md
    assert "**⚠ could not be examined** (1)" in md


@needs_cc
def test_repro_of_a_factory_cells_build_failure(tl: Any, tmp_path: Path) -> None:
    """A factory kernel of a package folder (relative imports) failing in the C++ build."""
    status, signals = _run("rope_kernel[c,fp16,gpu]", tmp_path, folder=KERNELS)
    low = _lowering(signals)
    assert status == "failed" and detail_of(low)["outcome"] == "build-failed"
    repro = detail_of(low)["repro"]
    assert "ir_before" not in detail_of(low)  # lowering passed: no failing pass
    proc = subprocess.run([sys.executable, repro], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert low["reason"] is not None
    assert proc.stdout.strip().splitlines()[-1] == low["reason"].split(": ", 1)[1]


def test_cli_reads_the_kernel_args_table_of_the_workspace(tmp_path: Path) -> None:
    """pyproject's table reaches discovery: its targets and dtypes shape the cells."""
    (tmp_path / "kernels").mkdir()
    shutil.copy(UP / "no_args.py", tmp_path / "kernels" / "no_args.py")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.laya-tui.kernel-args."kernels/no_args.py::scale_rows"]\n'
        'M = 64\nN = 32\nblock_M = 16\ndtypes = ["float32", "bfloat16"]\ntargets = ["c"]\n')
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--list", "--probes",
         str(ROOT / "probes" / "tilelang_matrix.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    ids = [ln for ln in proc.stdout.splitlines() if ln.startswith("tilelang/")]
    assert ids == ["tilelang/no_args[c,fp32]", "tilelang/no_args[c,bf16]"]
