"""Where the drift starts: per-module outputs against the fp32 CPU reference (real models)."""

from __future__ import annotations

import copy
import functools
import json

import pytest

from laya_tui.core.protocol import SignalEvent

pytest.importorskip("torch")
import torch  # noqa: E402

from laya_tui.families.explain.drift import module_drift, summary_detail, write_artifact  # noqa: E402


class Cancel(torch.nn.Module):
    """(x + 1000) - 1000: bf16 keeps 8 mantissa bits, so near 1000 the spacing is 4 and the
    small values are lost; fp32 keeps them. Real catastrophic cancellation."""

    def forward(self, x):
        return (x + 1000.0) - 1000.0


class Pair(torch.nn.Module):
    """Returns a tuple, and a dict holding a tensor and a non-tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.a(x)
        return y, {"twice": 2 * y, "note": "kept"}


class DtypePath(torch.nn.Module):
    """Returns an extra tensor only in half precision: its outputs differ between the runs."""

    def forward(self, x):
        if x.dtype in (torch.bfloat16, torch.float16):
            return x, x.float()
        return x


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pair = Pair()
        self.path = DtypePath()
        self.cancel = Cancel()
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        y, extra = self.pair(x)
        y = self.path(y + extra["twice"])
        if isinstance(y, tuple):
            y = y[0]
        return {"out": self.head(self.cancel(y))}


def _run(dtype):
    torch.manual_seed(0)
    ref = Net().eval()
    model = copy.deepcopy(ref).to(dtype)
    x = torch.randn(3, 8)
    return model, ref, module_drift(model, ref, lambda: model(x.to(dtype)), lambda: ref(x))


def test_bf16_drift_starts_at_the_cancelling_module():
    _, _, res = _run(torch.bfloat16)
    names = [c["module"] for c in res["calls"]]
    # execution order: inner modules return before the module that holds them
    assert names == ["pair.a", "pair", "cancel", "head", "(model)"]
    first = res["first_past_limit"]
    assert first["module"] == "cancel" and first["type"] == "Cancel"
    assert first["max_diff"] > first["limit"] and first["dtype"] == "bfloat16"
    before = res["calls"][0]
    assert before["max_diff"] <= before["limit"]  # the Linear in bf16 is within its limit
    # the half-precision-only extra output: named and skipped, not crashed on
    assert res["skipped"] == [{"module": "path", "reason": "output structure differs: 2 "
                                                           "tensor(s) vs 1 in the reference"}]
    # both calls' outputs come back (a dict output here) for the tolerance comparison
    assert res["model_output"]["out"].dtype == torch.bfloat16
    assert res["reference_output"]["out"].dtype == torch.float32


def test_fp32_copy_has_no_drift_and_the_summary_and_artifact_carry_the_curve(tmp_path):
    _, _, res = _run(torch.float32)
    assert res["first_past_limit"] is None and res["skipped"] == []
    assert all(c["max_diff"] == 0.0 for c in res["calls"])
    path = write_artifact(res, str(tmp_path), "explain/x[y] sub")
    doc = json.loads(open(path).read())
    assert [c["module"] for c in doc["calls"]] == [c["module"] for c in res["calls"]]
    detail = summary_detail(res, path)
    assert detail["compared"] == 6 and detail["curve"][0][0] == "pair.a"
    assert "path" in [c[0] for c in detail["curve"]]  # one tensor in both runs: compared
    assert detail["artifact"] == path and detail["first_past_limit"] is None
    assert detail["worst"] is not None and detail["worst"]["ratio"] == 0.0
    json.dumps(detail, allow_nan=False)  # valid JSON in the report


def test_presets_bf16_curve_along_the_model_with_the_mask():
    pytest.importorskip("transformers")
    from laya_tui.families import presets

    for build in (presets.tiny_llama, presets.tiny_modernbert):
        model, ref = build(torch.bfloat16), build(None)
        batch = presets.token_batch([7, 5])
        res = module_drift(model, ref, functools.partial(model, **batch),
                           functools.partial(ref, **batch), mask=batch["attention_mask"].bool())
        names = [c["module"] for c in res["calls"]]
        assert names[-1] == "(model)" and len(names) > 20 and res["skipped"] == []
        # bf16 rounding is visible at every module, and within the per-dtype limits here
        assert all(c["dtype"] == "bfloat16" for c in res["calls"])
        assert any(c["max_diff"] > 0 for c in res["calls"])
        assert res["first_past_limit"] is None
        d = summary_detail(res)
        json.dumps(d, allow_nan=False)
        worst = d["worst"]
        assert worst is not None and worst["ratio"] is not None
        assert 0 < worst["ratio"] <= 1  # the module closest to its limit


class Flip(torch.nn.Module):
    """``if h.mean() > 0``: fp32 sees +0.001, bf16 rounds both entries to +-1 and sees 0, so
    the two runs take different branches after ``fc1``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(2, 2, bias=False)
        with torch.no_grad():
            self.fc1.weight.copy_(torch.eye(2))
        self.up = torch.nn.Linear(2, 2)
        self.down = torch.nn.Linear(2, 2)
        self.fc2 = torch.nn.Linear(2, 2)

    def forward(self, x):
        h = self.fc1(x)
        if h.mean() > 0:  # marker: branch
            h = self.up(h)
        else:
            h = self.down(h)
        return self.fc2(h)


def _marker_line(needle: str) -> int:
    lines = open(__file__).read().splitlines()
    (hit,) = [i + 1 for i, t in enumerate(lines) if t.rstrip().endswith(f"# marker: {needle}")]
    return hit


def _calls_by_hooks(model, run) -> list[str]:
    """The order of module calls, from forward pre-hooks of our own."""
    names = {id(m): n or "(model)" for n, m in model.named_modules()}
    order: list[str] = []
    handles = [m.register_forward_pre_hook(lambda m, a: order.append(names[id(m)]))
               for m in model.modules()]
    try:
        with torch.no_grad():
            run()
    finally:
        for h in handles:
            h.remove()
    return order


def test_a_branch_that_flips_under_bf16_is_a_finding_of_its_own():
    from laya_tui.api import Context
    from laya_tui.families.explain.drift import emit_divergence

    torch.manual_seed(0)
    ref = Flip().eval()
    model = copy.deepcopy(ref).to(torch.bfloat16)
    x = torch.tensor([[1.003, -1.001]])
    # what torch computes: the condition differs, and forward hooks see other modules
    with torch.no_grad():
        assert float(ref.fc1(x).mean()) > 0 >= float(model.fc1(x.bfloat16()).mean())
    ours = _calls_by_hooks(model, lambda: model(x.bfloat16()))
    theirs = _calls_by_hooks(ref, lambda: ref(x))
    assert ours == ["(model)", "fc1", "down", "fc2"] and theirs == ["(model)", "fc1", "up", "fc2"]

    res = module_drift(model, ref, lambda: model(x.bfloat16()), lambda: ref(x))
    d = res["diverged"]
    assert d is not None
    assert d["text"] == "bf16 took another branch after `fc1`: it called `down`, fp32 called `up`"
    assert (d["after"], d["model_called"], d["reference_called"]) == ("fc1", "down", "up")
    assert d["site"] == {"file": __file__, "line": _marker_line("branch"),
                         "func": "Flip.forward"}
    # the module past its limit after the paths parted is not named as where drift starts
    assert res["first_past_limit"] is None
    assert any(c["module"] == "fc2" and c["past"] for c in res["calls"])
    detail = summary_detail(res)
    assert detail["diverged"] is not None and detail["worst"] is not None
    assert detail["diverged"]["branch"].endswith(f":{_marker_line('branch')}(Flip.forward)")
    assert detail["worst"]["module"] == "fc1"  # closest to its limit before the branch
    json.dumps(detail, allow_nan=False)
    events: list[SignalEvent] = []
    ctx = Context("explain/flip", "explain", events.append, opts={})
    sig = emit_divergence(ctx, "out", res)
    assert sig is not None
    assert sig["kind"] == "tolerance" and sig["passed"] is False
    assert sig["reason"] == d["text"] and sig["site"] == d["site"] and sig["value"] == 2.0


def test_the_same_path_in_both_runs_is_no_divergence():
    torch.manual_seed(0)
    ref = Flip().eval()
    model = copy.deepcopy(ref).to(torch.bfloat16)
    x = torch.tensor([[2.0, -1.0]])  # mean 0.5 in both dtypes
    res = module_drift(model, ref, lambda: model(x.bfloat16()), lambda: ref(x))
    assert res["diverged"] is None and summary_detail(res)["diverged"] is None
