"""A kernel file written for another TileLang fails at its import, as ``python file.py`` does
here: every cell of it says so (not "kernel arguments unknown", which blamed the file's
sizes), and names where the installed TileLang keeps what the file imports, checked against
TileLang itself."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from laya_tui.families.tilelang.moved_names import moved_hint
from tests._tilelang_cells import folder_cells, own_run, run_folder_cell

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "fixtures" / "other_tilelang"


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


@pytest.mark.parametrize(("name", "error", "where"), [
    ("moved_intrinsics.py", "ModuleNotFoundError: No module named 'tilelang.intrinsics'",
     ("make_mma_swizzle_layout", "tilelang.cuda.intrinsics")),
    ("old_autotuner.py", "ImportError: cannot import name 'jit' from 'tilelang.autotuner'",
     ("jit", "tilelang"))])
def test_every_cell_says_the_import_fails_and_where_the_name_is_now(
        tl: Any, tmp_path: Path, name: str, error: str, where: tuple[str, str]) -> None:
    own = own_run(FOLDER, name)
    assert own.startswith(error), own
    attr, module = where
    assert hasattr(importlib.import_module(module), attr)  # TileLang's own answer
    hint = f"(written for another TileLang: {tl.__version__} has {attr} in {module})"
    assert moved_hint(own, str(FOLDER / name)) == hint[1:-1]
    cells = [c for c in folder_cells(FOLDER) if c.startswith(name[:-3] + "[")]
    assert cells
    for cid in cells:
        status, _ = run_folder_cell(cid, tmp_path, FOLDER)
        assert status.startswith(f"error: could not import {name}: {error}"), status
        assert status.endswith(hint), status
        assert "arguments unknown" not in status


def test_other_errors_get_no_hint(tl: Any) -> None:
    assert moved_hint("ModuleNotFoundError: No module named 'e3nn'", __file__) is None
    assert moved_hint("ImportError: cannot import name 'x' from 'torch'", __file__) is None
