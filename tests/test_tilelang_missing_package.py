"""A kernel file whose own run needs a package this machine lacks could not be examined here,
and says which package and how to install it (``python file.py`` fails the same way, checked
here); a module of the project's own that is not found is not mistaken for a package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from laya_tui.families.tilelang.missing_package import missing_module, missing_package
from tests._tilelang_cells import folder_cells, own_run, run_folder_cell

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "fixtures" / "missing_package"


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


def test_a_missing_package_is_named_with_the_install_hint(tl: Any, tmp_path: Path) -> None:
    own = own_run(FOLDER, "needs_pkg.py")
    assert own == "ModuleNotFoundError: No module named 'laya_no_such_package'"
    cells = [c for c in folder_cells(FOLDER) if c.startswith("needs_pkg")]
    assert cells
    for cid in cells:
        status, _ = run_folder_cell(cid, tmp_path, FOLDER)
        assert status.startswith("error: could not import needs_pkg.py: "
                                 "ModuleNotFoundError: No module named "
                                 "'laya_no_such_package'"), status
        assert status.endswith("(a package not installed here: pip install "
                               "laya_no_such_package)"), status


def test_a_missing_module_of_the_project_is_not_a_package_to_install(tl: Any,
                                                                     tmp_path: Path) -> None:
    own = own_run(FOLDER, "needs_sibling.py")
    assert "No module named 'helpers_here.refs'" in own
    assert missing_package(own, str(FOLDER / "needs_sibling.py")) is None
    for cid in [c for c in folder_cells(FOLDER) if c.startswith("needs_sibling")]:
        status, _ = run_folder_cell(cid, tmp_path, FOLDER)
        assert status.startswith("error: could not import needs_sibling.py"), status
        assert "pip install" not in status


def test_one_reader_two_judgements() -> None:
    """``missing_module`` reads any ``No module named``; ``missing_package`` keeps only what
    pip could install (not TileLang, not the project's own module beside the file)."""
    file = str(FOLDER / "needs_sibling.py")
    own = "ModuleNotFoundError: No module named 'helpers_here.refs'"
    assert missing_module(own) == "helpers_here" and missing_package(own, file) is None
    drift = "No module named 'tilelang.contrib.x'"
    assert missing_module(drift) == "tilelang" and missing_package(drift, file) is None
    pkg = "raised ModuleNotFoundError: No module named 'fla.ops'"
    assert missing_module(pkg) == missing_package(pkg, file) == "fla"
    assert missing_module("ValueError: bad size") is None
