"""True labels (issue 41): a TileLang cell id's dtype is its kernel's data dtype (the type it
reads, and the one it writes when they differ: ``fp32-int8``), never an index argument's
int32, checked against the buffers and outputs TileLang itself reports; a failing cell's
reason names the stage that failed (``build failed (g++): ...``), checked against TileLang's
own compile; a kernel the file's run builds carries no ``missing``; and a baseline or
``--durations`` report written before the ids changed (tests/fixtures/label_reports:
laya-tui's own report of tests/fixtures/labels, as the previous labels named its cells) is
read under the new ids."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any, cast

import pytest

from laya_tui.core.cellid import matches_any
from laya_tui.core.renamed import renamed_ids, renamed_subject, with_renamed
from laya_tui.core.report_types import CellSpec
from laya_tui.families.tilelang.data_dtype import combine, label
from laya_tui.families.tilelang.discover import matrix_cells
from laya_tui.families.tilelang.plain_resolve import static_missing
from laya_tui.families.tilelang.records import CellKwargs
from tests._util import run_cli

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "tests" / "fixtures" / "labels"
BEFORE = ROOT / "tests" / "fixtures" / "label_reports" / "before_data_dtype_ids.json"
#: each fixture kernel at its file's own sizes: (file, kernel, arguments)
TRACED = [("grouped_quant", "grouped_quant", (16, 8, 2, 4)),
          ("serial_topk", "serial_topk", None),  # eager: traced with its tensors
          ("widen_half", "widen_half", (64,))]
RENAMED = {"tilelang/grouped_quant[c,int8]": "tilelang/grouped_quant[c,fp32-int8]",
           "tilelang/grouped_quant[cuda,int8]": "tilelang/grouped_quant[cuda,fp32-int8]",
           "tilelang/widen_half[c,fp16]": "tilelang/widen_half[c,fp16-fp32]",
           "tilelang/widen_half[cuda,fp16]": "tilelang/widen_half[cuda,fp16-fp32]"}


def _cells() -> dict[str, CellKwargs]:
    return {f"tilelang/{c['name']}[{c['id']}]": c["kwargs"]
            for c in matrix_cells({"kernels": [str(LABELS)], "workspace": str(ROOT)})}


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                               "'laya-tui[tilelang]'")


def _traced(name: str, kernel: str, args: Any) -> Any:
    import torch

    spec = importlib.util.spec_from_file_location(f"labels_{name}", LABELS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    jit = getattr(mod, kernel)
    if args is None:
        return jit, jit.get_tir(torch.randn(8, 16), 3)
    return jit, jit.get_tir(*args)


def test_ids_name_the_data_dtype_as_tilelang_traces_the_kernel(tl: Any) -> None:
    """grouped_quant reads fp32 rows and an int32 ``batch_sizes`` and writes int8 and fp32
    scales: ``fp32-int8`` (the old id said ``int8``); serial_topk writes fp32 gates and int32
    indices from fp32: ``fp32``; widen_half reads fp16 and writes fp32: ``fp16-fp32``. The
    expectation is made from TileLang's own PrimFunc: its buffers' dtypes, and which of
    them are outputs by the ``out_idx`` TileLang keeps for the kernel."""
    from laya_tui.families.tilelang.capture_model import kernel_data_dtype

    cells = _cells()
    assert set(cells) == {f"tilelang/{n}[{t},{d}]" for n, d in (
        ("grouped_quant", "fp32-int8"), ("serial_topk", "fp32"), ("widen_half", "fp16-fp32"))
        for t in ("c", "cuda")}
    for name, kernel, args in TRACED:
        jit, func = _traced(name, kernel, args)
        dtypes = [str(func.buffer_map[p].dtype) for p in func.params]
        attrs = func.attrs
        own = list(attrs["tilelang_out_idx"]) if attrs is not None and \
            "tilelang_out_idx" in attrs else list(jit.out_idx)
        outs = {int(i) % len(dtypes) for i in own}
        want = combine([d for i, d in enumerate(dtypes) if i not in outs],
                       [d for i, d in enumerate(dtypes) if i in outs])
        assert want is not None
        (kw,) = [k for cid, k in cells.items() if cid.startswith(f"tilelang/{name}[c,")]
        assert kw["dtype"] == want, (name, dtypes, own)  # the static reading agrees
        assert kernel_data_dtype(func) == want  # and so does the worker's reading of the IR
        if name == "grouped_quant":
            assert "int32" in dtypes and "int32" not in label(want)


def test_ids_stay_ascii_and_work_as_only_patterns() -> None:
    """The two sides are joined by ``-``: ids are typed in shells and printed to streams
    that need not be UTF-8."""
    for cid in _cells():
        assert cid.isascii() and matches_any(cid, [cid])
    assert matches_any("tilelang/grouped_quant[c,fp32-int8]", ["tilelang/grouped_quant[c,*"])


def test_a_renamed_cell_is_mapped_only_when_it_is_the_one_candidate() -> None:
    old = ["tilelang/k[c,int32]", "tilelang/k[cuda,int32]", "tilelang/same[c,fp32]",
           "tilelang/two[c,fp16]", "tilelang/two[c,bf16]", "tilelang/k[c,int32]@old"]
    new = ["tilelang/k[c,bf16-fp8e4m3]", "tilelang/k[cuda,bf16-fp8e4m3]",
           "tilelang/same[c,fp32]", "tilelang/two[c,fp16-fp32]",
           "tilelang/k[c,bf16-fp8e4m3]@old"]
    assert renamed_ids(old, new) == {
        "tilelang/k[c,int32]": "tilelang/k[c,bf16-fp8e4m3]",
        "tilelang/k[cuda,int32]": "tilelang/k[cuda,bf16-fp8e4m3]",
        "tilelang/k[c,int32]@old": "tilelang/k[c,bf16-fp8e4m3]@old"}  # two: ambiguous
    assert renamed_ids(["explain/m[a,b]"], ["explain/m[a,c]"]) == {}  # only TileLang's
    assert renamed_subject("k[c,int32]/out0", "tilelang/k[c,int32]",
                           "tilelang/k[c,bf16-fp8e4m3]") == "k[c,bf16-fp8e4m3]/out0"
    assert renamed_subject("other", "tilelang/k[c,int32]", "tilelang/k[c,fp32]") == "other"


def test_an_old_durations_report_balances_the_renamed_cells() -> None:
    """The durations of a report written under the old ids reach the shard plan under the
    new ones."""
    from laya_tui.core.envs import worker_key
    from laya_tui.core.shard import make_plan, select_shard
    from laya_tui.report.saved import durations_from_report

    old = durations_from_report(str(BEFORE))
    assert set(RENAMED) <= set(old)
    ids = sorted(_cells())
    mapped = with_renamed(old, ids)
    assert set(mapped) == set(ids)
    assert mapped["tilelang/grouped_quant[c,fp32-int8]"] == old["tilelang/grouped_quant[c,int8]"]
    # partial cells: the shard split and worker key read only their id and family
    probes = [cast(CellSpec, {"id": i, "family": "tilelang"}) for i in ids]
    cells = [(p["id"], worker_key(p)) for p in probes]
    info = select_shard(probes, (1, 2), old, "report")[1]
    assert info["balance"] == "report"
    assert info["estimated_seconds"] == make_plan(cells, 2, mapped, "report").estimates
    # read without the mapping, four of six cells would have lost their seconds
    assert make_plan(cells, 2, old, "report").estimates != info["estimated_seconds"]


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="no C++ compiler")
def test_a_run_names_the_failed_stage_has_no_missing_and_reads_an_old_baseline(
        tl: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """widen_half lowers for c and g++ refuses what TileLang generates: the reason says
    ``build failed (g++)`` (it read like a lowering error before), with TileLang's own
    compile failing on the same error. The baseline written under the old ids compares
    every cell (none "new", none "not run"), and the unchanged diagnostic is no note."""
    import tilelang

    report = tmp_path / "r.json"
    proc = run_cli("--headless", "--no-cache", "--no-demo", "--only", "tilelang/*",
                   "--kernels", str(LABELS), "--out", str(tmp_path / "out"),
                   "--json", str(report), "--baseline", str(BEFORE), cwd=ROOT, timeout=600)
    doc = json.loads(report.read_text())
    by_id = {p["id"]: p for p in doc["probes"]}
    assert set(by_id) == set(_cells())
    failed = by_id["tilelang/widen_half[c,fp16-fp32]"]
    (low,) = [s for s in failed["signals"] if s["kind"] == "lowering"]
    d = low["detail"]
    assert failed["status"] == "failed" and d["outcome"] == "build-failed" and d["stage"] == \
        "build"
    compiler = Path(d["command"].split()[0]).name
    assert compiler in ("g++", "c++", "clang++")
    assert low["reason"].startswith(f"build failed ({compiler}): widen_half.py:")
    assert failed["reason"] == f"lowering widen_half[c,fp16-fp32]: {low['reason']}"
    error = low["reason"].split(" error: ", 1)[1]
    _, func = _traced("widen_half", "widen_half", (64,))
    with pytest.raises(Exception) as own:  # noqa: PT011 - TileLang raises its own type
        tilelang.compile(func, out_idx=[-1], target="c")
    assert error in str(own.value) + capfd.readouterr().err  # g++ says it on stderr
    old_reason = next(s["reason"] for p in json.loads(BEFORE.read_text())["probes"]
                      if p["id"] == "tilelang/widen_half[c,fp16]"
                      for s in p["signals"] if s["kind"] == "lowering")
    assert old_reason == low["reason"].split(": ", 1)[1]  # same diagnostic, stage unnamed
    base = doc["baseline"]
    assert base["probes"] == {"before": 6, "after": 6, "compared": 6}, base
    assert base["regressions"] == [], base["regressions"]
    assert not [n for n in base["notes"] if n["kind"] in ("probe", "lowering")], base["notes"]
    assert base["occurrences"]["lowering"] == {"before": 1, "after": 1}
    # serial_topk's topk is nothing its syntax tree can read, and its run builds it: the
    # cell ran and carries no "missing" (the static reading's gaps are no cell parameter)
    topk = by_id["tilelang/serial_topk[c,fp32]"]
    assert static_missing(str(LABELS / "serial_topk.py"), "serial_topk",
                          {"workspace": str(ROOT)}) == ["topk"]
    (low,) = [s for s in topk["signals"] if s["kind"] == "lowering"]
    assert topk["status"] == "ok" and low["detail"]["outcome"] == "ran"
    assert low["detail"]["args"]["topk"] == 3
    assert low["detail"]["built_by"]["entry"] == "the __main__ block"
    assert not [p["id"] for p in doc["probes"] if "missing" in p["params"]]
    assert proc.returncode == 0, proc.stderr[-3000:]


NESTED = ROOT / "tests" / "fixtures" / "labels_nested"


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="no C++ compiler")
def test_a_kernel_made_deeper_is_labelled_by_its_factory_and_its_run_says_what_it_built(
        tl: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A factory inside a cached compile helper, its dtype mapped from the caller's
    tensors: reading the file labels it with the factory's own ``dtype_name="float32"``
    default (the dtype table's first entry, fp16, labelled it before); where the file's
    run builds another dtype (fp16 tensors), the cell says what TileLang built, read from
    the kernel TileLang traced for the same call."""
    import torch

    cells = {f"tilelang/{c['name']}[{c['id']}]" for c in matrix_cells(
        {"kernels": [str(NESTED)], "workspace": str(ROOT)})}
    assert cells == {f"tilelang/{n}[{t},fp32]" for n in ("mapped_add", "mapped_half_add")
                     for t in ("c", "cuda")}
    report = tmp_path / "r.json"
    proc = run_cli("--headless", "--no-cache", "--no-demo", "--only", "tilelang/*[c,*",
                   "--kernels", str(NESTED), "--out", str(tmp_path / "out"),
                   "--json", str(report), cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    by_id = {p["id"]: p for p in json.loads(report.read_text())["probes"]}
    for name, tensor_dtype in (("mapped_add", torch.float32),
                               ("mapped_half_add", torch.float16)):
        spec = importlib.util.spec_from_file_location(f"nested_{name}", NESTED / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "c")  # the file's own @tilelang.jit
        kernel = mod._compile_add(256, 64, mod._dtype_name(tensor_dtype))
        func = kernel.prim_func
        built = {str(func.buffer_map[p].dtype) for p in func.params}
        cell = by_id[f"tilelang/{name}[c,fp32]"]
        (low,) = [s for s in cell["signals"] if s["kind"] == "lowering"]
        assert cell["status"] == "ok" and low["detail"]["outcome"] == "ran", cell
        note = low["detail"]["built_by"].get("data dtype")
        if built == {"float32"}:
            assert note is None
        else:
            assert built == {"float16"}
            assert note is not None and note.startswith("fp16: the file's run built it so")
            (tol,) = [s for s in cell["signals"] if s["kind"] == "tolerance"]
            assert tol["detail"]["rtol"] == pytest.approx(1e-3)  # the check's fp16 limits
