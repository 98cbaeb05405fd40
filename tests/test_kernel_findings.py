"""A kernel whose output differs from its reference is one finding under its own rule, at
the file's failing check (the kernel's definition as the related location), in SARIF and
in the annotations alike; its value is the difference torch's own assert_close reports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
WRONG = ROOT / "tests" / "fixtures" / "wrong_output" / "wrong.py"


def _line(needle: str) -> int:
    return next(i for i, ln in enumerate(WRONG.read_text().splitlines(), 1) if needle in ln)


@pytest.fixture(scope="module")
def run(tmp_path_factory: Any) -> dict[str, Any]:
    pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                           "'laya-tui[tilelang]'")
    tmp = tmp_path_factory.mktemp("wrong")
    (tmp / "kernels").mkdir()
    shutil.copy(WRONG, tmp / "kernels" / "wrong.py")
    proc = subprocess.run(
        [sys.executable, "-m", "laya_tui", "--headless", "--jobs", "1", "--probes",
         str(ROOT / "probes" / "tilelang_matrix.py"), "--kernels", "kernels",
         "--only", "tilelang/wrong[c,*", "--no-cache", "--json", "r.json", "--sarif",
         "r.sarif", "--annotations", "--out", "o", "--cache-dir", "c"],
        cwd=tmp, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (tmp / "r.sarif").exists(), proc.stderr[-2000:]
    return {"proc": proc, "sarif": json.loads((tmp / "r.sarif").read_text()),
            "report": json.loads((tmp / "r.json").read_text())}


def test_one_result_at_the_check_with_the_definition_related(run: dict[str, Any]) -> None:
    import torch

    results = [r for r in run["sarif"]["runs"][0]["results"]
               if r["properties"]["probe"] == "tilelang/wrong[c,fp32]"]
    assert [r["ruleId"] for r in results] == ["laya/kernel-output"]  # not also "lowering"
    (r,) = results
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "kernels/wrong.py"
    assert loc["region"]["startLine"] == _line("torch.testing.assert_close(")
    related = [x["physicalLocation"]["region"]["startLine"] for x in r["relatedLocations"]]
    assert _line("def double(") in related
    assert "output differs from reference: max error 0.5 > limit" in r["message"]["text"]
    # torch's own assert_close on the same numbers: the greatest absolute difference is 0.5
    a = torch.randn(64)
    with pytest.raises(AssertionError) as err:
        torch.testing.assert_close(a * 2.0 + 0.5, a * 2.0)
    torch_says = float(re.search(r"Greatest absolute difference: ([0-9.e-]+)",
                                 str(err.value)).group(1))  # type: ignore[union-attr]
    assert r["properties"]["value"] == pytest.approx(torch_says, abs=1e-5)


def test_the_annotation_says_the_same_at_the_same_line(run: dict[str, Any]) -> None:
    lines = [ln for ln in run["proc"].stdout.splitlines() if "tilelang/wrong[c,fp32]" in ln]
    assert len(lines) == 1
    assert lines[0].startswith(f"::error file=kernels/wrong.py,line="
                               f"{_line('torch.testing.assert_close(')},")
    assert "Kernel output differs from its reference" in lines[0]
