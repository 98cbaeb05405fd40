"""Issue 41's explain gaps on small models, each checked against what torch itself says.

One CLI run (session-scoped: compile and AOTI are the slow part) examines four models from
``tests/fixtures/explain_gaps/gap_models.py``: a custom op without a fake, string/bool
keyword inputs that change between input sets, a custom op that Inductor's generated code
calls, and ``torch.cond`` with modules in its branches.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest

from tests._util import REPO, run_cli

torch = pytest.importorskip("torch")

FIXTURES = REPO / "tests" / "fixtures" / "explain_gaps"
MODELS = FIXTURES / "gap_models.py"
SPECS = ("no_fake", "flags", "clip", "branches")
CELLS = ("explain/model:gap_models:no_fake[compile]", "aoti/model[gap_models:no_fake]",
         "explain/model:gap_models:flags[eager]", "aoti/model[gap_models:flags]",
         "explain/model:gap_models:clip[compile]",
         "explain/model:gap_models:branches[eager]",
         "explain/model:gap_models:branches[compile]")


def _gap_models() -> Any:
    sys.path.insert(0, str(FIXTURES))
    try:
        import gap_models
    finally:
        sys.path.remove(str(FIXTURES))
    return gap_models


def _line(marker: str) -> int:
    lines = MODELS.read_text().splitlines()
    return next(i + 1 for i, text in enumerate(lines) if marker in text)


@pytest.fixture(scope="session")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("gaps")
    out = tmp / "report.json"
    args = ["--headless", "--json", str(out), "--jobs", "1", "--device", "cpu",
            "--cache-dir", str(tmp / "cache"), "--out", str(tmp / "out")]
    for cell in CELLS:
        args += ["--only", cell]
    for spec in SPECS:
        args += ["--model", f"gap_models:{spec}"]
    proc = run_cli(*args, timeout=900, env={
        "PYTHONPATH": f"{FIXTURES}:{REPO}", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert out.exists(), proc.stderr[-3000:]
    return json.loads(out.read_text())


def _probe(report: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(p for p in report["probes"] if p["id"] == cid)


def _logs(probe: dict[str, Any]) -> list[str]:
    return [str(s.get("reason")) for s in probe["signals"] if s["kind"] == "log"]


@pytest.mark.slow
def test_a_custom_op_without_a_fake_names_op_gb_id_and_line(report):
    m = _gap_models()
    with pytest.raises(Exception) as got:  # noqa: PT011 - torch's own error, read below
        torch.compile(m.Ranks())(torch.randn(2, 6))
    text = str(got.value)
    gb = re.search(r"/gb/gb(\d+)\.html", text)
    assert "no fake impl registered" in text and "ltgaps::np_rank" in text and gb
    line = _line("NO_FAKE_CALL")
    assert f'gap_models.py", line {line}, in forward' in text
    want = (f"custom op ltgaps::np_rank has no fake (meta) impl at gap_models.py:{line} "
            f"(GB{gb.group(1)})")
    probe = _probe(report, "explain/model:gap_models:no_fake[compile]")
    assert probe["status"] == "failed" and probe["reason"].startswith(want), probe["reason"]
    assert "np_rank.register_fake" in probe["reason"]
    (sig,) = [s for s in probe["signals"] if s["kind"] == "log"
              and (s.get("detail") or {}).get("missing_fake")]
    assert sig["site"]["line"] == line
    assert sig["detail"]["missing_fake"]["gb"] == f"GB{gb.group(1)}"
    aoti = _probe(report, "aoti/model[gap_models:no_fake]")
    assert any(r.startswith("custom op ltgaps::np_rank has no fake (meta) impl at "
                            f"gap_models.py:{line}") for r in _logs(aoti)), _logs(aoti)


@pytest.mark.slow
def test_keyword_flags_are_in_the_label_and_a_specialised_package_says_so(report):
    m = _gap_models()
    model, sets = m.flags()
    ep = torch.export.export(model, (), kwargs=sets[0])
    with pytest.raises(Exception, match=r"mode == 'sum'"):  # noqa: PT011 - torch's guard
        ep.module()(**sets[1])
    assert not torch.allclose(ep.module()(**sets[0]), model(**sets[1]))
    eager = _probe(report, "explain/model:gap_models:flags[eager]")
    env = next(s for s in eager["signals"] if s["kind"] == "environment"
               and s["subject"] == "explain.model")
    assert env["detail"]["shapes"] == ["x(2, 5, 16), mode='sum', normalize=False",
                                       "x(2, 5, 16), mode='mean', normalize=True"]
    aoti = _probe(report, "aoti/model[gap_models:flags]")
    logs = _logs(aoti)
    assert not any("unreadable" in r for r in logs), logs
    assert "the package is specialised to mode='sum'; input set 2 passes 'mean'" in logs
    assert "the package is specialised to normalize=False; input set 2 passes True" in logs
    failed = [s for s in aoti["signals"] if s["kind"] == "tolerance" and not s["passed"]]
    assert failed and all("[set2]" in s["subject"] and "mode='sum'" in s["reason"]
                          for s in failed)


@pytest.mark.slow
def test_a_custom_op_called_by_compiled_code_is_counted(report):
    from torch._inductor.utils import run_and_get_code

    m = _gap_models()
    model, x = m.clip()
    torch._dynamo.reset()
    with torch.no_grad():
        _, codes = run_and_get_code(torch.compile(model), x)
    torch._dynamo.reset()
    assert any("torch.ops.ltgaps.soft_clip.default(" in c for c in codes)
    probe = _probe(report, "explain/model:gap_models:clip[compile]")
    counted = [(s.get("detail") or {}).get("compiled_code_kernels") for s in probe["signals"]]
    counted = [c for c in counted if c]
    assert counted and all(c is not None and c.get("custom", {}).get("ltgaps::soft_clip", 0)
                           >= 1 for c in counted), counted
    assert not any(s["kind"] == "fallback" and "soft_clip" in s["subject"]
                   for s in probe["signals"])


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["eager", "compile"])
def test_drift_is_attributed_inside_torch_cond_branches(report, scenario):
    m = _gap_models()
    model, x = m.branches()
    with torch.no_grad():
        ran_true = bool(model.inp(x).sum() > 0)  # torch.cond's own predicate
    assert ran_true
    probe = _probe(report, f"explain/model:gap_models:branches[{scenario}]")
    assert not any("drift attribution failed" in r for r in _logs(probe)), _logs(probe)
    (tol,) = [s for s in probe["signals"] if s["kind"] == "tolerance"
              and (s.get("detail") or {}).get("drift")]
    drift = tol["detail"]["drift"]
    modules = [c[0] for c in drift["curve"]]
    assert modules[:3] == ["inp", "up", "out"], modules
    skipped = {s["module"]: s["reason"] for s in drift["skipped"]}
    assert set(skipped) == {"down", "down.0", "down.1"}
    assert all(r.startswith("not run: the false branch of torch.cond at ")
               and f":{_line('# COND')}(" in r for r in skipped.values())
    assert [c["ran"] for c in drift["cond"]] == ["true"]
