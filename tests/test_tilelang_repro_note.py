"""repro.py's verdict on a layout-inference failure naming another fragment: TileLang names
the first fragment without a layout in an order that follows memory addresses (a hash map
keyed by object address), so the name changes between processes while the failure does not.
The benchmark's agreement check and repro.py's own note both treat it as the same failure;
any other difference stays a disagreement."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from laya_tui.families.tilelang.cell_state import CellState, KernelCall
from laya_tui.families.tilelang.diagnostics import same_diagnostic
from laya_tui.families.tilelang.repro import write_repro

CHECK = "Check failed: layout_map.count(buffer) != 0 (0 vs. 0) : The layout for fragment {} " \
        "can not be inferred correctly."


def test_only_the_named_fragment_and_addresses_may_differ() -> None:
    assert same_diagnostic(CHECK.format("dk"), CHECK.format("qkT_cast"))
    assert same_diagnostic("buffer (0x33b36780 vs. 0x1)", "buffer (0x2 vs. 0x3aeb0a0)")
    assert not same_diagnostic(CHECK.format("dk"), CHECK.format("dk").replace("0 vs. 0", "1"))
    assert not same_diagnostic("CPU fill only supports local buffers", CHECK.format("dk"))


@pytest.fixture
def repro(tmp_path: Path) -> object:
    kernel = tmp_path / "k.py"
    kernel.write_text("")
    state = SimpleNamespace(diag=SimpleNamespace(line=CHECK.format("dk"), command=None),
                            target="c", kind="jit", kernel="k", stage="lower", file=str(kernel),
                            name="k.flash[c,fp16]", dtype="float16", spec=None, extra={})
    # a stand-in for the CellState: only the fields write_repro reads
    path = write_repro(str(tmp_path / "cell"), cast(CellState, state),
                       KernelCall(obj="flash", args={"M": 4}), None)
    spec = importlib.util.spec_from_file_location("_repro_under_test", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # defines, does not run (not __main__)
    return mod


def test_repro_says_another_fragment_is_the_same_failure(
        repro: object, capsys: pytest.CaptureFixture[str]) -> None:
    repro.say(CHECK.format("qkT_cast"))  # type: ignore[attr-defined]
    note, line = capsys.readouterr().out.strip().splitlines()
    assert line == CHECK.format("qkT_cast")
    assert "the same failure" in note and "(the cell named dk)" in note


@pytest.mark.parametrize("line", [CHECK.format("dk"), "CPU fill only supports local buffers"])
def test_repro_prints_only_the_line_otherwise(
        repro: object, capsys: pytest.CaptureFixture[str], line: str) -> None:
    repro.say(line)  # type: ignore[attr-defined]
    assert capsys.readouterr().out.strip().splitlines() == [line]
