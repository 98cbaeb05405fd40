"""The explain probe family through the real CLI: cells, --model, --rbln-log, the report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from laya_tui.report.document import validate_report
from tests._util import FIXTURES, run_cli

USER_MODEL = textwrap.dedent('''
    import torch

    def build():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                    torch.nn.Linear(32, 8)).to(torch.bfloat16).eval()
        return model, torch.randn(4, 16).to(torch.bfloat16)
''')


def test_cells_are_listed_without_importing_torch():
    proc = run_cli("--list", "--only", "explain/*")
    assert proc.returncode == 0, proc.stderr
    ids = proc.stdout.split()
    for preset in ("tiny_llama", "tiny_modernbert"):
        for dt in ("fp32", "bf16"):
            for sc in ("eager", "compile-two-lengths", "compile-padded"):
                assert f"explain/{preset}[{dt},{sc}]" in ids
            # the host-side decode loop needs a causal LM: tiny Llama only
            assert (f"explain/{preset}[{dt},host-decode]" in ids) == (preset == "tiny_llama")
    assert len(ids) == 2 * 2 * 3 + 2  # presets x dtypes x scenarios + Llama's host-decode
    assert not [i for i in ids if i.startswith("explain/rbln_log")]  # only with --rbln-log


def test_bad_rbln_log_path_is_a_usage_error(tmp_path: Path):
    proc = run_cli("--headless", "--only", "explain/*", "--rbln-log", str(tmp_path / "nope.log"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_family_cells_user_model_and_rbln_log(tmp_path: Path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    (tmp_path / "my_models.py").write_text(USER_MODEL)
    out = tmp_path / "report.json"
    proc = run_cli("--headless", "--json", str(out), "--no-cache",
                   "--only", "explain/tiny_llama[bf16,eager]", "--only", "explain/rbln_log*",
                   "--only", "explain/model:*", "--model", "my_models:build",
                   "--rbln-log", str(FIXTURES / "rbln" / "fallback.log"),
                   env={"PYTHONPATH": str(tmp_path)}, timeout=600)
    report = json.loads(out.read_text())
    validate_report(report)
    probes = {p["id"]: p for p in report["probes"]}
    assert proc.returncode == 0, (proc.stderr[-3000:], {k: (p["status"], p["reason"])
                                                       for k, p in probes.items()})
    assert set(probes) == {"explain/tiny_llama[bf16,eager]", "explain/rbln_log[log]",
                           "explain/model:my_models:build[eager]",
                           "explain/model:my_models:build[compile]"}
    assert all(p["status"] == "ok" for p in probes.values())

    llama = probes["explain/tiny_llama[bf16,eager]"]["signals"]
    casts = [s for s in llama if s["kind"] == "cast" and s["reason"].startswith("upcast bfloat16")
             and s["site"]["file"].endswith("modeling_llama.py")]
    assert {s["detail"]["phase"] for s in casts} == {"cold", "warm"}
    tol = [s for s in llama if s["kind"] == "tolerance"]
    assert tol and all(s["passed"] for s in tol)
    assert {"argmax_match", "rows", "top2_gap", "verdict"} <= set(tol[0]["detail"])
    env = [s for s in llama if s["kind"] == "environment" and s["subject"] == "explain.rbln_region"]
    assert env and env[0]["value"] in ("unavailable",)
    overhead = [s for s in llama if s.get("subject") == "forward: instrumentation overhead"]
    assert overhead and overhead[0]["value"] > 0

    log = probes["explain/rbln_log[log]"]["signals"]
    fb = {s["subject"]: s for s in log if s["kind"] == "fallback"}
    assert fb["aten::pow"]["count"] == 2
    assert fb["sdpa_overrideable"]["reason"] == "query sequence length 7 not aligned to 32"

    for sc in ("eager", "compile"):
        sigs = probes[f"explain/model:my_models:build[{sc}]"]["signals"]
        tol = [s for s in sigs if s["kind"] == "tolerance"]
        assert len(tol) == 1 and tol[0]["passed"], tol
    compiled = probes["explain/model:my_models:build[compile]"]["signals"]
    assert [s for s in compiled if s["kind"] == "compile"
            and s["detail"]["phase"] == "cold"]
    assert not [s for s in compiled if s["kind"] == "recompile"]
    assert not [s for s in compiled if s["kind"] == "recompile"
                and s["detail"]["phase"] == "warm"]
