"""A kernel file's own checks are the cell's reference, in each way files write them
(tests/fixtures/own_checks): a reference under another name compared with a view of the
output, a check inside a helper, two outputs (one through an expression of both), TileLang's
``torch_assert_close`` with a mismatch allowance, plain ``assert`` statements (on a tensor
and on ``.item()``), ``torch.allclose`` under ``if not ...: raise``, an in-place kernel's
argument under ``if ...: raise``. Each file is run as ``python file.py`` too, correct and
with a wrong kernel (a copy with ``BUG``/``OFF`` changed): the cell's verdict is the
file's own, under the check's real name and line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import SignalDict
from tests._signals import detail_of
from tests._tilelang_cells import run_folder_cell

ROOT = Path(__file__).resolve().parents[1]
OWN = ROOT / "tests" / "fixtures" / "own_checks"

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                       reason="no C++ compiler on PATH: target c builds with it"),
]


@pytest.fixture(scope="module")
def tl() -> Any:
    return pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                                  "'laya-tui[tilelang]'")


def _copy(name: str, folder: Path, wrong: bool) -> Path:
    """The fixture, or a copy whose kernel is wrong (``BUG = 0.5``; 11 elements off)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (OWN / name).read_text()
    if wrong:
        text = re.sub(r"^BUG = 0\.0 ", "BUG = 0.5 ", text, flags=re.M)
        text = re.sub(r"^OFF = 1 ", "OFF = 11 ", text, flags=re.M)
    path = folder / name
    path.write_text(text)
    return path


def _own_verdict(path: Path) -> tuple[bool, str]:
    """``python file.py``: (passed, the last line of what it printed)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=path.parent)
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return proc.returncode == 0, lines[-1] if lines else ""


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


def _cell(path: Path, tmp: Path) -> tuple[str, SignalDict, dict[str, SignalDict]]:
    """(status, the lowering signal, the tolerance signals by output) of ``path``'s c cell."""
    cid = f"{path.stem}[c,fp32]"
    status, signals = run_folder_cell(cid, tmp / "out", path.parent)
    (low,) = [s for s in signals if s["kind"] == "lowering"]
    tol = {str(s["subject"]).rsplit("/", 1)[1]: s for s in signals if s["kind"] == "tolerance"}
    return status, low, tol


#: fixture -> (the check's label for each output it checks, the needle of its line)
#: file: {output: (check, needle, where, [caller needle])}
STYLES: dict[str, dict[str, tuple[str, ...]]] = {
    "renamed_ref.py": {"out0": ("torch.testing.assert_close", "torch.testing.assert_close(",
                                "")},
    "helper_check.py": {"out0": ("torch.allclose", "assert torch.allclose(",
                                 " (in check_close(), called at line {})", "check_close(\"")},
    "two_outputs.py": {"out1": ("torch.testing.assert_close", "assert_close(s, s_ref", ""),
                       "out0": ("torch.testing.assert_close", "* s[:, None], x", "")},
    "mismatch_ratio.py": {"out0": ("tilelang.testing.torch_assert_close",
                                   "torch_assert_close(y, x * 2", "")},
    "plain_assert.py": {"out0": ("assert", "assert (y - ref_halve(x))", ""),
                        "out0@1": ("assert", "assert err <= 1e-4", "")},
    "allclose_if.py": {"out0": ("torch.allclose", "if not torch.allclose(", "")},
    "inplace_if_raise.py": {"out1": ("if ...: raise", "if ((z - ref)", "")},
}


@pytest.mark.parametrize("wrong", [False, True], ids=["correct", "wrong"])
@pytest.mark.parametrize("name", sorted(STYLES))
def test_the_cell_gives_the_files_own_verdict_under_its_checks_name(
        tl: Any, tmp_path: Path, name: str, wrong: bool) -> None:
    path = _copy(name, tmp_path / "kernels", wrong)
    own_passed, own_last = _own_verdict(path)
    assert own_passed is not wrong, own_last  # the fixture is what it says
    status, low, tol = _cell(path, tmp_path)
    assert status == ("failed" if wrong else "ok"), low.get("reason")
    d = detail_of(low)
    assert d["reference"] == "the file's own check", d.get("run_skipped")
    assert "run_skipped" not in d
    # every output the file checks, under the check's real name and line
    want = {}
    for out, (how, needle, where, *caller) in STYLES[name].items():
        suffix = where.format(_line(path, caller[0])) if caller else where
        want[out] = f"{how} at line {_line(path, needle)}{suffix}"
    assert {k: detail_of(s)["check"] for k, s in tol.items()} == want
    failed = [k for k, s in tol.items() if not s["passed"]]
    if not wrong:
        assert failed == []
        assert d["outcome"] == "ran"
        return
    assert failed and d["outcome"] == "run-failed"
    assert low["reason"] is not None
    assert f"{failed[0]}: " in low["reason"]
    assert low["reason"] is not None
    assert low["reason"].endswith(f"(the file's check: {want[failed[0]]})")
    if name == "two_outputs.py":  # the scale is right, the values are the finding
        assert failed == ["out0"] and tol["out1"]["passed"]


def test_a_mismatch_allowance_is_the_files_own_and_reported_as_such(
        tl: Any, tmp_path: Path) -> None:
    """One element of 10,000 off: TileLang's torch_assert_close (0.1% allowed) passes the
    file's run, and the cell passes and says so; eleven off fail both."""
    import torch
    from tilelang.testing import torch_assert_close

    path = _copy("mismatch_ratio.py", tmp_path / "kernels", wrong=False)
    status, low, tol = _cell(path, tmp_path)
    assert status == "ok", low.get("reason")
    sig = tol["out0"]
    assert sig["passed"] and sig["reason"] == (
        "1 of 10,000 elements over the limit, allowed 0.1%")
    assert sig["value"] == pytest.approx(50.0, abs=0.01) and sig["value"] > sig["limit"]
    assert (detail_of(sig)["mismatched"], detail_of(sig)["elements"],
            detail_of(sig)["max_mismatched_ratio"]) == (1, 10_000, 0.001)
    # what TileLang's own function says on such numbers
    x = torch.randn(100, 100)
    y = x * 2
    y.view(-1)[0] += 50
    torch_assert_close(y, x * 2, rtol=1e-5, atol=1e-5, max_mismatched_ratio=0.001)
    y.view(-1)[:11] += 50
    with pytest.raises(AssertionError, match="Too many mismatched elements: 11 > 10"):
        torch_assert_close(y, x * 2, rtol=1e-5, atol=1e-5, max_mismatched_ratio=0.001)
    wrong = _copy("mismatch_ratio.py", tmp_path / "wrong", wrong=True)
    status, low, tol = _cell(wrong, tmp_path)
    assert status == "failed"
    assert tol["out0"]["reason"] == "11 of 10,000 elements over the limit, allowed 0.1%"
    assert low["reason"] is not None
    assert "Too many mismatched elements: 11 > 10" in low["reason"]


def test_the_capture_records_each_check_with_its_expression_and_options(tl: Any) -> None:
    """What the capture keeps of each check: the compared expression over the kernel's
    outputs (not only a bare output), the file's options, the call it checks."""
    from laya_tui.families.tilelang import own_checks as oc
    from laya_tui.families.tilelang.capture import capture_file

    cap = capture_file(str(OWN / "two_outputs.py"), {"row_quant"})
    (b,) = cap.builds
    scale, values = b.call.checks
    assert (scale.output, scale.how, scale.options) == (
        1, "torch.testing.assert_close", {"rtol": 1e-5, "atol": 1e-5})
    assert isinstance(scale.actual, oc.Leaf) and scale.actual.index == 1
    assert isinstance(values.actual, oc.Op)  # q.to(float32) * s[:, None]
    assert sorted(leaf.index for leaf in oc.leaves(values.actual)) == [0, 1]
    assert cap.unchecked == 0
    cap = capture_file(str(OWN / "mismatch_ratio.py"), {"spiky"})
    (check,) = cap.builds[0].call.checks
    assert check.how == "tilelang.testing.torch_assert_close"
    assert check.options == {"rtol": 1e-5, "atol": 1e-5, "max_mismatched_ratio": 0.001}
    cap = capture_file(str(OWN / "plain_assert.py"), {"halve"})
    tensor_assert, item_assert = cap.builds[0].call.checks
    assert (tensor_assert.how, tensor_assert.want, item_assert.how) == ("assert", True,
                                                                        "assert")


def test_a_file_that_checks_nothing_is_built_not_compared_and_says_why(
        tl: Any, tmp_path: Path) -> None:
    path = _copy("no_check.py", tmp_path / "kernels", wrong=False)
    # the file's own run with every comparison made to raise still passes: it checks nothing
    boom = ("import runpy, sys, torch\n"
            "def boom(*a, **k):\n    raise SystemExit('compared')\n"
            "torch.testing.assert_close = torch.allclose = boom\n"
            f"runpy.run_path({str(path)!r}, run_name='__main__')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    proc = subprocess.run([sys.executable, "-c", boom], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    status, low, tol = _cell(path, tmp_path)
    assert status == "ok" and tol == {}
    assert detail_of(low)["outcome"] == "built"
    assert detail_of(low)["run_skipped"] == (
        "the file's run compares nothing with this kernel's outputs, and the file defines "
        "no ref_program() to compare with: lowered and built only")


def test_a_check_on_a_faked_reference_is_not_made_on_the_cpu_and_says_why(
        tl: Any, tmp_path: Path) -> None:
    """gpu_checks.py's reference goes through a GPU-sized op the CPU capture answers with
    zeros: its check is recorded but not made here, and the cell says so (not "another
    device")."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU computes the reference: the check is made")
    folder = tmp_path / "kernels"
    folder.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "run_kernels" / "gpu_checks.py", folder)
    status, low, tol = _cell(folder / "gpu_checks.py", tmp_path)
    assert status == "ok" and tol == {}
    assert detail_of(low)["run_skipped"].startswith(
        "the file's check compares with values its run made while the capture answered 1 "
        "GPU-sized torch op(s) with zeros")
    assert detail_of(low)["file_run"]["faked_ops"] == 1
