"""The detail pane's TileLang sections: arguments, slowest passes, the IR before the failing
pass with its buffers highlighted, the last pass's diff, repro.py; what ``o`` opens."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from laya_tui.core.results import Signal
from laya_tui.tui.model import SignalRow
from laya_tui.tui.widgets.detail import render_signal, tilelang_editor_target

IR = '''# The IR pass tl.LayoutInference received (it raised).
# from tvm.script import tirx as T
@T.prim_func
def main(A: T.handle):
    A_1 = T.match_buffer(A, (64, 64), "bfloat16")
    A_shared = T.sblock_alloc_buffer((64, 32), "bfloat16", scope="shared.dyn")
    C_local = T.sblock_alloc_buffer((64, 64), scope="local.fragment")
    T.fill(T.region(C_local[0, 0], 2, 64, 64), 0)
'''


def _signal(tmp_path: Path) -> dict[str, Any]:  # a signal as JSON (no probe: the row names it)
    ir = tmp_path / "ir_before.py"
    ir.write_text(IR)
    diff = tmp_path / "last_pass.diff"
    diff.write_text("--- before tl.Simplify\n+++ after tl.Simplify\n@@ -1 +1 @@\n-a\n+b\n")
    return {"kind": "lowering", "subject": "gemm[c,bf16,gpu]", "passed": False,
            "reason": "The layout for fragment C_local can not be inferred correctly.",
            "detail": {"kernel": "gemm", "target": "c", "dtype": "bf16", "spec": "gpu",
                       "outcome": "lower-failed", "pass": "tl.LayoutInference",
                       "buffers": [{"name": "C_local", "scope": "local.fragment",
                                    "dtype": "float32"}],
                       "args": {"M": 512, "block_M": 64},
                       "arg_sources": {"M": "the call at line 48",
                                       "block_M": "first @autotune config"},
                       "passes": {"passes": 14, "total_s": 0.02,
                                  "slowest": [["tl.Simplify", 0.01, 3],
                                              ["tl.LayoutInference", 0.005, 1]]},
                       "ir_before": str(ir), "ir_before_pass": "tl.LayoutInference",
                       "last_pass": "tl.Simplify (2 no-op passes after it)",
                       "last_pass_diff": str(diff), "repro": str(tmp_path / "repro.py")}}


def _text(sig: Mapping[str, Any]) -> str:
    row = SignalRow(key="k", probe="tilelang/gemm[c,bf16,gpu]", family="tilelang",
                    sig=Signal.from_dict(sig),
                    seq=0, failing=True)
    console = Console(width=120, record=True, color_system=None, file=io.StringIO())
    console.print(render_signal(row, None, None, full=True))
    return console.export_text()


def test_the_failing_cell_shows_ir_diff_timing_args_and_repro(tmp_path: Path) -> None:
    sig = _signal(tmp_path)
    text = _text(sig)
    assert "kernel arguments" in text and "block_M  64   from first @autotune config" in text
    assert "slowest passes (14 passes, 20.0 ms in all)" in text
    assert "tl.Simplify         10.0 ms  (3 runs)" in text
    assert "IR before tl.LayoutInference" in text and "(o: open in $EDITOR)" in text
    assert 'C_local = T.sblock_alloc_buffer((64, 64), scope="local.fragment")' in text
    assert "diff made by the last pass that changed the IR: tl.Simplify (2 no-op" in text
    assert "+b" in text and f"python {tmp_path / 'repro.py'}" in text
    assert "more detail" not in text  # every TileLang key has its own section


def test_o_opens_the_ir_at_the_implicated_buffer(tmp_path: Path) -> None:
    sig = _signal(tmp_path)
    target = tilelang_editor_target(sig["detail"])
    assert target is not None
    path, line = target
    assert path == sig["detail"]["ir_before"] and line is not None
    assert IR.splitlines()[line - 1].strip().startswith("C_local = T.sblock_alloc_buffer")
    assert tilelang_editor_target({"outcome": "ran"}) is None


def test_how_the_file_builds_the_kernel_has_its_own_section(tmp_path: Path) -> None:
    sig = _signal(tmp_path)
    sig["detail"].update(
        built_by={"entry": "the __main__ block", "site": "main() at line 12", "builds": 1},
        file_run={"entries": ["the __main__ block: stopped (every kernel of the file is "
                              "built)"], "seconds": 0.4},
        execution_backend="tvm_ffi", out_idx=[-1], reference="the file's own check")
    text = " ".join(_text(sig).split())  # columns collapsed to single spaces
    assert "as the file builds it built by entry the __main__ block, site main() at line " \
           "12, builds 1 execution_backend tvm_ffi out_idx [-1] reference the file's own " \
           "check the file's run the __main__ block: stopped (every kernel of the file is " \
           "built)" in text
    assert "more detail" not in text
