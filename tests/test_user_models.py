"""``--model`` factories through the real CLI: input sets, --device, errors, compile vs
recompile in the gates."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from laya_tui.report.document import validate_report
from tests._util import REPO, run_cli

MODELS = textwrap.dedent('''
    import torch


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = torch.nn.Linear(16, 32)
            self.out = torch.nn.Linear(32, 8)

        def forward(self, x):
            h = torch.nn.functional.gelu(self.inp(x))
            scale = h.abs().max().item()
            if h.mean() > 0:
                h = h / (1 + scale)
            return self.out(h)


    def two_sets():
        torch.manual_seed(0)
        sets = [(torch.randn(4, 16).bfloat16(),), (torch.randn(8, 16).bfloat16(),)]
        return Net().to(torch.bfloat16), sets


    def empty():
        return Net(), []


    class Flip(torch.nn.Module):
        def __init__(self):
            super().__init__()
            # h = [x0 + x1, x2]: 256 + 1 is 257 in fp32, 256 in bf16 (spacing 2 there)
            self.fc1 = torch.nn.Linear(3, 2, bias=False)
            with torch.no_grad():
                self.fc1.weight.copy_(torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
            self.up = torch.nn.Linear(2, 2)
            self.down = torch.nn.Linear(2, 2)
            self.fc2 = torch.nn.Linear(2, 2)

        def forward(self, x):
            h = self.fc1(x)
            if h.mean() > 0:
                h = self.up(h)
            else:
                h = self.down(h)
            return self.fc2(h)


    def flip():
        torch.manual_seed(0)
        return Flip().to(torch.bfloat16), torch.tensor([[256.0, 1.0, -256.0]]).bfloat16()


    def boom():
        raise RuntimeError("weights not found")
''')


def _env(tmp_path: Path) -> dict[str, str]:
    return {"PYTHONPATH": f"{tmp_path}:{REPO}", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}


def _run(tmp_path: Path, *args: str, timeout: float = 600):
    (tmp_path / "user_models.py").write_text(MODELS)
    out = tmp_path / "report.json"
    proc = run_cli("--headless", "--json", str(out), "--jobs", "1", "--cache-dir",
                   str(tmp_path / "cache"), "--out", str(tmp_path / "out"), *args,
                   env=_env(tmp_path), timeout=timeout)
    report = json.loads(out.read_text()) if out.exists() else None
    return proc, report


def test_device_flag_and_table_are_checked_before_anything_runs(tmp_path: Path):
    proc = run_cli("--headless", "--device", "npu", "--only", "explain/*")
    assert proc.returncode == 2 and "--device" in proc.stderr and "Traceback" not in proc.stderr
    from laya_tui.cli.config import load_settings

    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui]\ndevice = "cuda:7"\n')
    assert load_settings(str(tmp_path))["device"] == "cuda:7"


def test_unbuildable_models_are_errors_and_an_absent_device_is_a_skip(tmp_path: Path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    proc, report = _run(tmp_path, "--only", "explain/model:*", "--device", "cuda:7",
                        "--only", "aoti/model[nosuch:build]",
                        "--only", "aoti/model[user_models:two_sets]",
                        "--model", "nosuch:build", "--model", "user_models:empty",
                        "--model", "user_models:boom", "--model", "user_models:two_sets")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "verdict: FAIL" in proc.stderr
    validate_report(report)
    st = {p["id"]: (p["status"], p["reason"]) for p in report["probes"]}
    for sc in ("eager", "compile"):
        status, reason = st[f"explain/model:nosuch:build[{sc}]"]
        assert status == "error" and "ModuleNotFoundError" in reason and "nosuch" in reason
        status, reason = st[f"explain/model:user_models:empty[{sc}]"]
        assert status == "error" and "empty list of input sets" in reason
        status, reason = st[f"explain/model:user_models:boom[{sc}]"]
        assert status == "error" and "RuntimeError: weights not found" in reason
        # this host has no 8th CUDA device: skipped with the reason, not failed
        status, reason = st[f"explain/model:user_models:two_sets[{sc}]"]
        assert status == "skipped" and reason.startswith("--device cuda:7:")
    status, reason = st["aoti/model[nosuch:build]"]
    assert status == "error" and "ModuleNotFoundError" in reason
    # aoti/model packages for --device: a device this host lacks is a skip, not a CPU package
    status, reason = st["aoti/model[user_models:two_sets]"]
    assert status == "skipped" and reason.startswith("--device cuda:7:")
    gate = next(g for g in report["gates"] if g["name"] == "no-probe-error")
    assert not gate["passed"] and len(gate["failures"]) == 7


@pytest.mark.slow
def test_a_branch_flip_under_bf16_is_reported_before_the_output_tolerance(tmp_path: Path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    proc, report = _run(tmp_path, "--only", "explain/model:user_models:flip[eager]",
                        "--device", "cpu", "--model", "user_models:flip")
    assert report is not None, proc.stderr[-3000:]
    (probe,) = report["probes"]
    tol = [s for s in probe["signals"] if s["kind"] == "tolerance"]
    assert [s["subject"] for s in tol] == ["bfloat16 vs fp32 cpu control flow",
                                           "bfloat16 vs fp32 cpu output"]
    flow = tol[0]
    assert flow["passed"] is False and flow["reason"] == (
        "bf16 took another branch after `fc1`: it called `down`, fp32 called `up`")
    src = (tmp_path / "user_models.py").read_text().splitlines()
    assert flow["site"]["file"] == str(tmp_path / "user_models.py")
    assert src[flow["site"]["line"] - 1].strip() == "if h.mean() > 0:"
    assert flow["site"]["func"] == "Flip.forward"
    drift = tol[1]["detail"]["drift"]
    assert drift["diverged"]["after"] == "fc1" and drift["first_past_limit"] is None
    assert probe["status"] == "failed"


def test_aoti_user_target_takes_every_input_set_as_a_compared_shape(tmp_path: Path,
                                                                    monkeypatch):
    torch = pytest.importorskip("torch")
    from laya_tui.families.aoti.targets import user_target

    (tmp_path / "user_models.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    target = user_target("user_models:two_sets")
    shapes = target.shapes(None)
    assert [name for name, _, _ in shapes] == ["set1", "set2"]
    firsts = [inputs[0][0] for _, inputs, _ in shapes]
    assert [tuple(x.shape) if isinstance(x, torch.Tensor) else x for x in firsts] == [
        (4, 16), (8, 16)]
    assert target.example is shapes[0][1] and target.dtype == "bf16"
    with pytest.raises(ValueError, match="empty list of input sets"):
        user_target("user_models:empty")


@pytest.mark.slow
def test_input_sets_recompile_with_guard_and_set_and_drift_per_set(tmp_path: Path):
    pytest.importorskip("torch")
    proc, report = _run(tmp_path, "--only", "explain/model:*", "--device", "cpu",
                        "--model", "user_models:two_sets")
    assert proc.returncode == 0, proc.stderr[-3000:]
    probes = {p["id"]: p for p in report["probes"]}
    for sc in ("eager", "compile"):
        sigs = probes[f"explain/model:user_models:two_sets[{sc}]"]["signals"]
        tol = [s for s in sigs if s["kind"] == "tolerance"]
        assert [s["subject"] for s in tol] == [f"set {i}/2 bfloat16 vs fp32 cpu output"
                                               for i in (1, 2)]
        for s in tol:
            drift = s["detail"]["drift"]
            assert [c[0] for c in drift["curve"]] == ["inp", "out", "(model)"]
            assert Path(drift["artifact"]).is_file()
        env = next(s for s in sigs if s["kind"] == "environment"
                   and s["subject"] == "explain.model")
        assert env["value"] == "user_models:two_sets"
        assert env["detail"]["input_sets"] == 2 and env["detail"]["device"] == "cpu"
    sigs = probes["explain/model:user_models:two_sets[compile]"]["signals"]
    compiles = [s for s in sigs if s["kind"] == "compile"]
    assert compiles and all(s["detail"]["phase"] == "cold" for s in compiles)
    assert all(s["detail"]["input_set"].startswith("input set 1 of 2") for s in compiles)
    rec = [s for s in sigs if s["kind"] == "recompile"]
    assert rec and all(s["detail"]["phase"] == "warm" for s in rec)
    # sited in the user's model file (Net.forward), never in laya-tui
    assert all(s["site"]["file"] == str(tmp_path / "user_models.py") for s in rec)
    assert all(s["site"]["func"].startswith("Net.forward") for s in rec)
    assert all("laya_tui" not in str(s.get("site")) for s in sigs)
    # the second set's recompiles are its first compile: one-off, not recurring
    log = next(s for s in sigs if s["kind"] == "log" and s["reason"].startswith("steady"))
    assert not any(x.startswith("recompile ") for x in log["detail"]["recurring"])
    assert any(x.startswith("recompile ") for x in log["detail"]["one_off"])
    assert all(s["detail"]["input_set"] == "input set 2 of 2: arg0(8, 16)" for s in rec)
    assert any("size mismatch at index 0. expected 4, actual 8" in s["reason"] for s in rec)
    breaks = {s["reason"] for s in sigs if s.get("subject") == "graph break"}
    assert any(b.startswith("Unsupported Tensor.item()") for b in breaks)  # .item()
    assert "Data-dependent branching" in breaks  # the data-dependent if, with its GB id
    ids = {s["detail"].get("graph_break_id") for s in sigs if s.get("subject") == "graph break"}
    assert None not in ids and "GB0170" in ids
    summary = report["summary"]["signals"]
    assert summary["compile"] == len(compiles) and summary["recompile"] == len(rec)


@pytest.mark.slow
def test_fail_on_recompile_passes_padded_and_fails_two_lengths(tmp_path: Path):
    pytest.importorskip("transformers")
    padded = "explain/tiny_modernbert[fp32,compile-padded]"
    two = "explain/tiny_modernbert[fp32,compile-two-lengths]"
    proc, report = _run(tmp_path, "--only", two, "--only", padded, "--fail-on", "recompile")
    assert proc.returncode == 1, proc.stderr[-3000:]
    gate = next(g for g in report["gates"] if g["name"] == "fail-on:recompile")
    assert gate["failures"] and {f["probe"] for f in gate["failures"]} == {two}
    assert report["summary"]["signals"]["compile"] >= 2  # both compiled: not recompiles
    # the padded cell alone (served from the cache): the gate holds
    proc, report = _run(tmp_path, "--only", padded, "--fail-on", "recompile",
                        "--max", "recompile=0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert report["probes"][0]["cached"] is True


def test_a_project_kernels_folder_does_not_hide_the_installed_kernels_package(tmp_path: Path):
    """transformers (>= 5) imports the installed Hugging Face ``kernels`` package whenever a
    model loads; a project's own ``kernels/`` package (where TileLang users keep theirs) must
    not stand in for it: the worker keeps the workspace behind the installed packages, and
    ``kernels.sizes`` still finds the project's module."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from importlib import metadata

    try:
        metadata.version("kernels")
    except metadata.PackageNotFoundError:
        pytest.skip("the Hugging Face kernels package is not installed: nothing to hide")
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text('"""My TileLang kernels."""\n')
    (tmp_path / "kernels" / "sizes.py").write_text("HIDDEN = 32\n")
    (tmp_path / "tiny.py").write_text(textwrap.dedent('''
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        from kernels.sizes import HIDDEN  # the project's own kernels package still imports


        def llama():
            torch.manual_seed(0)
            cfg = LlamaConfig(vocab_size=64, hidden_size=HIDDEN, intermediate_size=64,
                              num_hidden_layers=1, num_attention_heads=2,
                              num_key_value_heads=2)
            return LlamaForCausalLM(cfg).eval(), torch.randint(0, 64, (1, 8))
    '''))
    out = tmp_path / "report.json"
    proc = run_cli("--headless", "--json", str(out), "--jobs", "1", "--cache-dir",
                   str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
                   "--only", "explain/model:tiny:llama[eager]", "--model", "tiny:llama",
                   cwd=tmp_path, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    (probe,) = [p for p in report["probes"] if p["id"] == "explain/model:tiny:llama[eager]"]
    assert probe["status"] == "ok", probe["reason"]
    assert transformers.__version__
