"""The TileLang lowering-matrix probe: discovery, per-cell diagnostics, foreign kernel folders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest

from laya_tui.core.report_types import SignalDict
from laya_tui.families.tilelang.discover import classify, matrix_cells
from laya_tui.families.tilelang.records import CellKwargs
from tests._signals import detail_of, site_of
from tests._util import heavy_imports

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"
FIVE = ["add_ln_kernel", "attn_kernel", "gemm_geglu_kernel", "gemm_kernel", "rope_kernel"]
FILES = {"gemm_kernel": "gemm.py", "gemm_geglu_kernel": "geglu.py", "add_ln_kernel": "add_ln.py",
         "rope_kernel": "rope.py", "attn_kernel": "attn.py"}

PLAIN_JIT = '''
import tilelang
import tilelang.language as T


@tilelang.jit
def scale2(N=64, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 32), threads=1) as bx:
            for i in T.serial(32):
                B[bx * 32 + i] = A[bx * 32 + i] * T.cast(2.0, dtype)

    return main


if __name__ == "__main__":
    print(scale2())
'''

PLAIN_FRAGMENT = '''
import tilelang.language as T


def make(N):
    @T.prim_func
    def main(A: T.Tensor((N, N), "bfloat16")):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_fragment((N, N), "float32")
            T.fill(acc, 0)
            T.copy(acc, A)

    return main


kernel = make(64)
'''

BROKEN = '''
import tilelang.language as T

def broken_kernel(N, *, dtype=None, cpu=False):
    x = (
'''

RAISES = '''
def raises_kernel(N, *, dtype=None, cpu=False):
    raise ValueError(f"N must be a multiple of 16, got {N}")


def example():
    class Example:
        args = (10,)
        kwargs = {}
    return Example()
'''


def _foreign(tmp_path: Path) -> Path:
    d = tmp_path / "theirs"
    d.mkdir()
    (d / "scale2.py").write_text(PLAIN_JIT)
    (d / "frag_fill.py").write_text(PLAIN_FRAGMENT)
    (d / "broken.py").write_text(BROKEN)
    (d / "raises.py").write_text(RAISES)
    (d / "helpers.py").write_text("def tile(n):\n    return n * 2\n")
    return d


# -- discovery (standard library only) ---------------------------------------------------


def test_repo_kernels_expand_into_the_full_matrix() -> None:
    every = matrix_cells({"kernels": [str(KERNELS)]})
    # common.py / reference.py: no kernel cells, one cell each saying why
    files = {c["name"]: c["kwargs"]["note"] for c in every if c["id"] == "file"}
    assert files == {"common": None,  # imports TileLang: its run is tried
                     "reference": "has no TileLang import: nothing in it to examine"}
    cells = [c for c in every if c["id"] != "file"]
    ids = {f"{c['name']}[{c['id']}]" for c in cells}
    assert len(cells) == 60 and len(ids) == 60
    assert sorted({c["name"] for c in cells}) == FIVE
    assert "gemm_kernel[c,bf16,gpu]" in ids and "attn_kernel[cuda,fp32,cpu]" in ids
    for c in cells:
        assert c["deps"] == [str(KERNELS / FILES[c["name"]])]
        assert c["kwargs"]["kind"] == "factory"


def test_params_callable_imports_nothing_heavy() -> None:
    code = textwrap.dedent(f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "m", {str(ROOT / "probes" / "tilelang_matrix.py")!r})
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        cells = m.lowering_cells()
        assert len(cells) == 62, len(cells)  # 60 factory cells, common[file], reference[file]
    """)
    env = {**os.environ, "LAYA_TUI_OPTIONS": json.dumps({"kernels": [str(KERNELS)]})}
    assert heavy_imports(code, env=env) == []


def test_foreign_folder_classification(tmp_path: Path) -> None:
    d = _foreign(tmp_path)
    cells = matrix_cells({"kernels": [str(d)]})
    by_name: dict[str, list[str]] = {}
    for c in cells:
        by_name.setdefault(c["name"], []).append(c["id"])
    assert set(by_name) == {"scale2", "frag_fill", "broken_kernel", "raises_kernel", "helpers"}
    assert by_name["helpers"] == ["file"]  # no kernel in it: one cell saying why
    assert sorted(by_name["frag_fill"]) == ["c,bf16", "cuda,bf16"]  # its own dtype, no spec axis
    assert len(by_name["broken_kernel"]) == 12  # a file that does not parse keeps its cells
    assert classify(str(d / "helpers.py")) == []


def test_cell_ids_survive_a_syntax_error(tmp_path: Path) -> None:
    src = (KERNELS / "gemm.py").read_text()
    f = tmp_path / "gemm.py"
    f.write_text(src)
    before = [(e.name, e.kind) for e in classify(str(f))]
    f.write_text(src.replace("def body(A, W, Bias, C):", "def body(A, W, Bias, C)"))
    after = classify(str(f))
    assert [(e.name, e.kind) for e in after] == before == [("gemm_kernel", "factory")]
    assert after[0].broken


# -- running cells (TileLang + a C++ compiler) ---------------------------------------------

needs_tilelang = pytest.mark.skipif(
    shutil.which("g++") is None and shutil.which("c++") is None,
    reason="no C++ compiler on PATH: target c builds with it")


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


def _cell(name: str, cid: str, kernels: Path = KERNELS) -> CellKwargs:
    for c in matrix_cells({"kernels": [str(kernels)]}):
        if c["name"] == name and c["id"] == cid:
            return c["kwargs"]
    raise LookupError(f"{name}[{cid}]")


def _run(kwargs: CellKwargs, out: Path) -> tuple[str, list[SignalDict]]:
    from laya_tui.api import Context, Skipped, Unexamined
    from laya_tui.families.tilelang.cell import run_cell

    signals: list[SignalDict] = []
    deps: list[str] = []
    ctx = Context("tilelang/x", "tilelang", lambda e: signals.append(e["signal"]),
                  opts={"out": str(out)}, add_dep=deps.append)
    try:
        run_cell(ctx, **kwargs)
    except Skipped as exc:
        return f"skipped: {exc}", signals
    except Unexamined as exc:
        assert str(Path(kwargs["file"]).resolve()) in deps
        return f"error: {exc}", signals
    assert str(Path(kwargs["file"]).resolve()) in deps
    return ("failed" if ctx.failures else "ok"), signals


def _lowering(signals: list[SignalDict]) -> SignalDict:
    low = [s for s in signals if s["kind"] == "lowering"]
    assert len(low) == 1, f"expected exactly one lowering signal, got {len(low)}"
    return low[0]


@needs_tilelang
@pytest.mark.parametrize("name,cid", [
    ("gemm_kernel", "c,fp32,gpu"), ("gemm_kernel", "c,bf16,gpu"),
    ("gemm_geglu_kernel", "c,fp16,gpu"), ("add_ln_kernel", "c,fp32,gpu"),
    ("add_ln_kernel", "c,bf16,gpu"), ("attn_kernel", "c,fp16,gpu"),
    ("rope_kernel", "c,fp16,gpu"), ("rope_kernel", "c,bf16,gpu"),
])
def test_gpu_specialization_fails_on_c_with_a_named_diagnostic(
        tl: Any, tmp_path: Path, name: str, cid: str) -> None:
    kwargs = _cell(name, cid)
    status, signals = _run(kwargs, tmp_path)
    low = _lowering(signals)
    d = detail_of(low)
    assert status == "failed" and low["passed"] is False
    assert d["outcome"] in ("lower-failed", "build-failed")
    assert low["reason"] is not None
    stage, _, first = low["reason"].partition(": ")  # the failed stage, then the diagnostic
    assert stage in ("lower failed", "build failed (g++)", "build failed (c++)"), stage
    assert stage.split()[0] == d["stage"] and first.split("error: ", 1)[-1] in d["diagnostic"]
    names = {b["name"] for b in d.get("buffers", [])}
    text = d["diagnostic"]
    assert names & set(_words(text)) or any(t in text for t in ("bfloat16", "float16",
                                                                  "half")), text
    assert site_of(low)["file"] == kwargs["file"] and (site_of(low)["line"] or 0) > 0
    assert d["kernel_site"] == {"file": site_of(low)["file"], "line": site_of(low)["line"]}
    assert d["source_excerpt"] and f"{site_of(low)['line']} |" in d["source_excerpt"]
    assert (d["target"], d["spec"]) == ("c", "gpu") and d["dtype"] == cid.split(",")[1]
    if d["outcome"] == "lower-failed":
        assert d["pass"], "the failing pass is named"
        assert d["exception"] and d["seconds"]["lower"] > 0
    else:
        assert d["command"].split()[0].endswith(("g++", "c++", "clang++"))
        assert d["generated_source"] and os.path.isfile(d["generated_source"])


def _line(source: str, needle: str) -> int:
    return next(i for i, ln in enumerate(source.splitlines(), 1) if needle in ln)


def _words(text: str) -> list[str]:
    import re

    return re.findall(r"\w+", text)


@needs_tilelang
@pytest.mark.parametrize("name", FIVE)
def test_cpu_specialization_lowers_builds_and_matches(tl: Any, tmp_path: Path,
                                                      name: str) -> None:
    status, signals = _run(_cell(name, "c,fp32,cpu"), tmp_path)
    low = _lowering(signals)
    assert status == "ok" and low["passed"] and detail_of(low)["outcome"] == "ran"
    tol = [s for s in signals if s["kind"] == "tolerance"]
    assert tol and all(s["passed"] for s in tol), tol
    assert all(detail_of(s)["dtype"] == "fp32" for s in tol)
    limits = {str(s["subject"]).split("/")[-1]: s["limit"] for s in tol}
    expected = {"rope_kernel": {"QK": 2e-6, "V": 0.0}, "add_ln_kernel": {"Y": 2e-5, "R": 0.0}}
    assert limits == expected.get(name, {next(iter(limits)): 2e-5})
    stages = {str(s["subject"]).rsplit("/", 1)[-1] for s in signals if s["kind"] == "timing"}
    assert stages == {"lower", "build", "run"}
    art = [s for s in signals if s["kind"] == "artifact"]
    assert len(art) == 1 and detail_of(art[0])["path"].startswith(str(tmp_path))
    assert set(detail_of(low)["seconds"]) >= {"lower", "build", "run"}


@needs_tilelang
def test_inapplicable_cell_is_skipped_with_a_reason(tl: Any, tmp_path: Path) -> None:
    status, signals = _run(_cell("gemm_kernel", "c,fp16,cpu"), tmp_path)
    assert status.startswith("skipped: cpu=True is the fp32 specialization")
    assert signals == []


@needs_tilelang
@pytest.mark.skipif(shutil.which("nvcc") is None and not os.path.isfile(
    "/usr/local/cuda/bin/nvcc"), reason="nvcc not found: cuda cells build with it")
def test_cuda_cell_lowers_and_builds_with_nvcc(tl: Any, tmp_path: Path) -> None:
    import torch

    status, signals = _run(_cell("rope_kernel", "cuda,fp16,gpu"), tmp_path)
    low = _lowering(signals)
    assert status == "ok" and low["passed"]
    # built as tilelang.compile would: TileLang's default backend for cuda (tvm_ffi)
    assert detail_of(low)["execution_backend"] == "tvm_ffi"
    assert "sm_90a" in detail_of(low)["built_with"] or torch.cuda.is_available()
    if torch.cuda.is_available():
        assert detail_of(low)["outcome"] == "ran"
    else:
        assert detail_of(low)["outcome"] == "built"
        assert "torch.cuda.is_available() is False" in detail_of(low)["run_skipped"]
        assert "lowered and built with nvcc" in detail_of(low)["run_skipped"]
        assert detail_of(low)["not_run"] == "no GPU"  # the summary counts it apart
        assert any(s["kind"] == "log" and "run skipped" in (s["reason"] or "") for s in signals)


@needs_tilelang
def test_foreign_kernels_each_report_their_own_diagnostic(tl: Any, tmp_path: Path) -> None:
    d = _foreign(tmp_path)
    out = tmp_path / "out"
    # a plain @tilelang.jit file: lowered and built with its own shapes, no ref_program
    status, sig = _run(_cell("scale2", "c,fp32", d), out)
    low = _lowering(sig)
    assert status == "ok" and detail_of(low)["outcome"] == "built"
    assert "defines no ref_program() to compare with" in detail_of(low)["run_skipped"]
    assert detail_of(low)["not_run"] == "no reference to compare with"
    # a plain PrimFunc file with a GPU fragment: TileLang's own layout diagnostic
    status, sig = _run(_cell("frag_fill", "c,bf16", d), out)
    low = _lowering(sig)
    assert low["reason"] is not None
    assert status == "failed" and "fragment acc" in low["reason"]
    assert low["site"] == {"file": str(d / "frag_fill.py"),
                           "line": _line(PLAIN_FRAGMENT, "acc = T.alloc_fragment")}
    assert detail_of(low)["pass"] == "tl.LayoutInference"
    # a file that does not import: could not be examined (status error), diagnostic kept
    status, sig = _run(_cell("broken_kernel", "c,fp32,cpu", d), out)
    low = _lowering(sig)
    assert status.startswith("error: could not import broken.py: SyntaxError")
    assert detail_of(low)["outcome"] == "not-examined"
    assert (detail_of(low)["stage"], detail_of(low)["exception"]) == ("import", "SyntaxError")
    assert low["reason"] is not None
    assert site_of(low)["line"] == _line(BROKEN, "x = (") and "never closed" in low["reason"]
    # a factory that raises: could not be examined either
    status, sig = _run(_cell("raises_kernel", "c,fp32,cpu", d), out)
    low = _lowering(sig)
    assert status == "error: could not build the kernel object of raises.py: ValueError: " \
        "N must be a multiple of 16, got 10"
    assert (detail_of(low)["stage"], detail_of(low)["exception"]) == ("factory", "ValueError")
    assert low["reason"] == "trace failed: N must be a multiple of 16, got 10"
    assert low["site"] == {"file": str(d / "raises.py"), "line": _line(RAISES, "raise "),
                           "func": "raises_kernel"}


@needs_tilelang
def test_an_edit_is_seen_by_the_same_process(tl: Any, tmp_path: Path) -> None:
    k = tmp_path / "mine"
    k.mkdir()
    for f in ("__init__.py", "common.py", "reference.py", "rope.py"):
        src = (KERNELS / f).read_text()
        if f == "__init__.py":
            src = '"""A copy of the shipped RoPE kernel."""\n'
        (k / f).write_text(src)
    status, sig = _run(_cell("rope_kernel", "c,fp32,cpu", k), tmp_path / "o")
    assert status == "ok" and detail_of(_lowering(sig))["outcome"] == "ran"
    rope = k / "rope.py"
    rope.write_text(rope.read_text().replace("o[i, d] = T.cast(x[i, d], acc) * c + rot * s",
                                             "o[i, d] = T.cast(x[i, d], acc) * c - rot * s"))
    os.utime(rope, ns=(rope.stat().st_atime_ns, rope.stat().st_mtime_ns + 10**9))
    status, sig = _run(_cell("rope_kernel", "c,fp32,cpu", k), tmp_path / "o")
    low = _lowering(sig)
    assert status == "failed" and detail_of(low)["outcome"] == "run-failed"
    assert low["reason"] is not None
    assert low["reason"].startswith("compare failed: QK: max |diff|")


@needs_tilelang
def test_headless_run_on_a_foreign_folder(tl: Any, tmp_path: Path) -> None:
    from laya_tui.report.document import validate_report

    d = _foreign(tmp_path)
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--quiet", "--json", str(report),
         "--kernels", str(d), "--only", "tilelang/*[c,*", "--no-cache",
         "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.exists(), proc.stderr[-2000:]
    doc = json.loads(report.read_text())
    validate_report(doc)
    probes = {p["id"]: p for p in doc["probes"] if p["family"] == "tilelang"}
    assert probes["tilelang/scale2[c,fp32]"]["status"] == "ok"
    assert probes["tilelang/frag_fill[c,bf16]"]["status"] == "failed"
    assert probes["tilelang/broken_kernel[c,fp32,cpu]"]["status"] == "error"  # not examined
    assert probes["tilelang/broken_kernel[c,fp16,cpu]"]["status"] == "skipped"
    assert proc.returncode == 1 and "could not be examined" in proc.stderr  # no-probe-error
    for pid, p in probes.items():
        if p["status"] in ("ok", "failed", "error"):
            assert sum(s["kind"] == "lowering" for s in p["signals"]) == 1, pid
    arts = [s["detail"]["path"] for p in probes.values() for s in p["signals"]
            if s["kind"] == "artifact"]
    assert arts and all(a.startswith(str(tmp_path / "out")) for a in arts)  # never the repo


# -- cpu-vs-gpu specialization agreement ------------------------------------------------------


def _agree(name: str, dtype: str, out: Path) -> tuple[str, list[SignalDict]]:
    from laya_tui.api import Context, Skipped
    from laya_tui.families.tilelang.agree import agreement_cells, run_agreement

    cell = next(c for c in agreement_cells({"kernels": [str(KERNELS)]})
                if c["name"] == name and c["kwargs"]["dtype"] == dtype)
    signals: list[SignalDict] = []
    ctx = Context("tilelang/x", "tilelang", lambda e: signals.append(e["signal"]),
                  opts={"out": str(out)}, add_dep=lambda p: None)
    try:
        # CellKwargs is run_cell's wider set; an agreement cell carries run_agreement's
        run_agreement(ctx, **cast(dict[str, Any], cell["kwargs"]))
    except Skipped as exc:
        return f"skipped: {exc}", signals
    return ("failed" if ctx.failures else "ok"), signals


def test_agreement_cells_cover_every_factory_kernel_in_both_half_types() -> None:
    from laya_tui.families.tilelang.agree import agreement_cells

    cells = agreement_cells({"kernels": [str(KERNELS)]})
    assert sorted({c["name"] for c in cells}) == FIVE
    assert {c["id"] for c in cells} == {"cpu-vs-gpu,fp16", "cpu-vs-gpu,bf16"}


@pytest.mark.parametrize("module,rounded", [("gemm", False), ("add_ln", True)])
def test_compare_specs_flags_a_disagreement(module: str, rounded: bool) -> None:
    """The comparison on the shipped examples: equal outputs pass, one bad element fails."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("tilelang")
    import importlib

    from laya_tui.api import Context
    from laya_tui.families.tilelang.agree import compare_specs

    ex = importlib.import_module(f"kernels.{module}").example()
    assert bool(ex.rounded) is rounded
    _, promoted = ex.materialize("bfloat16")
    cpu_out = ex.expected(promoted)  # fp32 numbers, as the cpu specialization gives
    gpu_out = {k: v.to(torch.bfloat16).float() if k in ex.rounded else v.clone()
               for k, v in cpu_out.items()}
    sink: list[SignalDict] = []
    ctx = Context("tilelang/x", "tilelang", lambda e: sink.append(e["signal"]))
    assert compare_specs(ctx, ex, module, "bfloat16", cpu_out, gpu_out) == []
    name = next(iter(ex.outputs))
    gpu_out[name].view(-1)[0] += 1.0
    failures = compare_specs(ctx, ex, module, "bfloat16", cpu_out, gpu_out)
    assert len(failures) == 1 and failures[0].startswith(f"{name}: gpu-spec bf16 vs cpu-spec")
    tol = [s for s in sink if s["kind"] == "tolerance"]
    assert tol and all("cpu-vs-gpu,bf16" in str(s["subject"]) for s in tol)


def test_agreement_skips_without_a_gpu_or_agrees_with_one(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("tilelang")
    status, signals = _agree("gemm_kernel", "bfloat16", tmp_path)
    if not torch.cuda.is_available():
        assert status.startswith("skipped: no CUDA device here")
        return
    assert status == "ok", status
    tol = [s for s in signals if s["kind"] == "tolerance"]
    assert tol and all(s["passed"] for s in tol)
