"""Precision bisection to a verified plan, on small models with known answers (CPU, real torch).

The unstable module is catastrophic cancellation made on purpose: ``fc(x + 512)`` with
zero-sum weight rows equals ``fc(x)``, but near 512 bf16's spacing is 4, so ``x + 512``
loses ``x`` and the rounded weights no longer sum to zero. The cancellation happens in the
module's own forward (the add), so keeping only its ``fc`` in fp32 does not help: the plan
must name the module itself.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import cast

import pytest

pytest.importorskip("torch")
import torch  # noqa: E402

from laya_tui.families.explain import precision_plan as pp  # noqa: E402
from laya_tui.families.explain.records import DriftSummary, Verdict  # noqa: E402
from laya_tui.families.probe_context import ProbeContext  # noqa: E402

LIMIT = 0.05
D = 16


class Stable(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(D, D)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Cancel(torch.nn.Module):
    """``fc(x + offset)`` with zero-sum rows: exact in fp32, lost in bf16."""

    def __init__(self, offset: float = 512.0) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(D, D, bias=False)
        with torch.no_grad():
            w = torch.randn(D, D, dtype=torch.float64) / D ** 0.5
            self.fc.weight.copy_((w - w.mean(dim=1, keepdim=True)).float())
        self.offset = offset

    def forward(self, x):
        return self.fc(x + self.offset)


class Shift(torch.nn.Module):
    """Adds a constant: +512 then -512 are exact in fp32 only if the value between them stays
    fp32 (a hand-off between two kept modules)."""

    def __init__(self, by: float) -> None:
        super().__init__()
        self.by = by
        self.scale = torch.nn.Parameter(torch.ones(D))

    def forward(self, x):
        return x * self.scale + self.by


class Net(torch.nn.Module):
    def __init__(self, kinds: str) -> None:
        super().__init__()
        make: dict[str, Callable[[], torch.nn.Module]] = {
            "s": Stable, "c": Cancel, "u": lambda: Shift(512.0), "d": lambda: Shift(-512.0)}
        self.blocks = torch.nn.ModuleList([make[k]() for k in kinds])
        self.head = torch.nn.Linear(D, 4)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def build(kinds: str, seed: int = 0):
    """(bf16 model, fp32 reference, input): the reference is the model's fp32 original; the
    input is representable in bf16, so both runs see the same values (as in the probe)."""
    torch.manual_seed(seed)
    ref = Net(kinds).eval()
    x = torch.randn(8, D).to(torch.bfloat16).float()
    return copy.deepcopy(ref).to(torch.bfloat16), ref, x


def search(model, ref, x, limit=LIMIT, **kw):
    want = ref(x).detach()

    def check(out):
        err = float((out.float() - want).abs().max())
        return err, err <= limit

    return pp.search_plan(model, lambda m: m(x.to(torch.bfloat16)), check, limit,
                          reference=ref, forward_reference=lambda m: m(x), **kw)


def snippet_error(plan, ref, x) -> float:
    """The pasted snippet applied to a fresh fp32 model, run, compared: the user's proof."""
    space: dict = {}
    exec(pp.snippet(plan), space)  # noqa: S102 - the snippet is what the user pastes
    model = space["cast_keeping_fp32"](copy.deepcopy(ref))
    with torch.no_grad():
        return float((model(x.to(torch.bfloat16)).float() - ref(x)).abs().max())


def test_one_unstable_module_is_the_plan_and_its_error_is_verified():
    model, ref, x = build("scss")
    plan = search(model, ref, x)
    assert plan.status == pp.FOUND, plan.reason
    assert plan.fp32_modules == ["blocks.1"]  # not blocks.1.fc: the add is the module's own
    assert plan.baseline_error > LIMIT
    assert plan.verified_error <= LIMIT
    mine = snippet_error(plan, ref, x)
    assert mine == pytest.approx(plan.verified_error, rel=1e-6, abs=1e-7)
    assert plan.forwards <= pp.MAX_FORWARDS
    # baseline, whole fp32, reference, blocks.1.fc (the drift-free first pick), blocks.1, verify
    assert plan.forwards <= 7
    assert model.blocks[1].fc.weight.dtype == torch.bfloat16  # the model is left as it was


def test_two_independent_unstable_modules_are_both_needed():
    model, ref, x = build("cscs")
    plan = search(model, ref, x)
    assert plan.status == pp.FOUND, plan.reason
    assert sorted(plan.fp32_modules) == ["blocks.0", "blocks.2"]
    for one in plan.fp32_modules:  # neither alone is enough
        with pp.Applier(model, ref).applied([one]) as m, torch.no_grad():
            assert float((m(x.to(torch.bfloat16)).float() - ref(x)).abs().max()) > LIMIT
    assert snippet_error(plan, ref, x) == pytest.approx(plan.verified_error, rel=1e-6,
                                                        abs=1e-7)


def test_drift_ranking_is_tried_first():
    model, ref, x = build("cscs")
    plan = search(model, ref, x, ranking=["blocks.2", "blocks.0"])
    assert sorted(plan.fp32_modules) == ["blocks.0", "blocks.2"]
    assert plan.trials[1]["fp32_modules"] == [""]  # whole model in fp32, then the ranking
    assert plan.trials[2]["fp32_modules"] == ["blocks.2"]


def test_fp32_hand_off_between_kept_modules():
    """+512 then -512: cast back to bf16 between them would lose x; the hand-off keeps it."""
    model, ref, x = build("sud")
    applier = pp.Applier(model, ref)
    with applier.applied(["blocks.1", "blocks.2"]) as m, torch.no_grad():
        err = float((m(x.to(torch.bfloat16)).float() - ref(x)).abs().max())
    assert err <= LIMIT
    with applier.applied(["blocks.1"]) as m, torch.no_grad():
        alone = float((m(x.to(torch.bfloat16)).float() - ref(x)).abs().max())
    assert alone > LIMIT
    plan = search(model, ref, x)
    assert plan.status == pp.FOUND and sorted(plan.fp32_modules) == ["blocks.1", "blocks.2"]
    assert snippet_error(plan, ref, x) == pytest.approx(plan.verified_error, rel=1e-6,
                                                        abs=1e-7)


class InPlace(torch.nn.Module):
    """Adds 1 in place to what the first block returns before the second sees it: the
    hand-off must not give the second block the stale fp32 value."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = Shift(512.0), Shift(-512.0)

    def forward(self, x):
        y = self.a(x)
        y += 1.0
        return self.b(y)


def test_hand_off_skips_a_value_changed_in_place():
    torch.manual_seed(0)
    ref = InPlace().eval()
    x = torch.randn(4, D).to(torch.bfloat16).float()
    model = copy.deepcopy(ref).to(torch.bfloat16)
    with pp.Applier(model, ref).applied(["a", "b"]) as m, torch.no_grad():
        out = m(x.to(torch.bfloat16)).float()
    assert not torch.allclose(out, x, atol=1e-3)  # the stale fp32 value would give x exactly
    assert float((out - (x + 1)).abs().max()) <= 4.0  # x + 1 through bf16 near 512 (spacing 4)
    space: dict = {}
    exec(pp.snippet(pp.Plan(status=pp.FOUND, limit=LIMIT, fp32_modules=["a", "b"],  # noqa: S102
                            dtype="bfloat16")), space)
    with torch.no_grad():
        mine = space["cast_keeping_fp32"](copy.deepcopy(ref))(x.to(torch.bfloat16)).float()
    assert torch.equal(mine, out)


def test_fine_in_bf16_no_plan_no_false_alarm():
    model, ref, x = build("ssss")
    plan = search(model, ref, x)
    assert plan.status == pp.NOT_NEEDED
    assert plan.fp32_modules == [] and plan.forwards == 1
    assert plan.baseline_error <= LIMIT


def fails_in_fp32():
    """The port computes something else than the reference (its last block another module
    with another constant): no dtype fixes that."""
    model, ref, x = build("scss")
    model.blocks[3] = Cancel(offset=3.0).to(torch.bfloat16)
    with torch.no_grad():
        model.blocks[3].fc.weight.mul_(-1)
    return model, ref, x


def test_fails_in_fp32_too_is_not_a_precision_problem():
    model, ref, x = fails_in_fp32()
    plan = search(model, ref, x)
    assert plan.status == pp.NOT_PRECISION, plan.reason
    assert plan.fp32_modules == [] and plan.forwards == 2
    assert plan.fp32_error > LIMIT
    assert "not a precision problem" in plan.reason


def test_a_limit_below_the_outputs_own_rounding_has_no_plan():
    model, ref, x = build("ssss")
    plan = search(model, ref, x, limit=1e-4)  # bf16 rounds outputs near 1 by ~4e-3
    assert plan.status == pp.NO_PLAN and plan.forwards == 2
    assert plan.fp32_error <= 1e-4 and "tighter than a bfloat16 output holds" in plan.reason


def test_forward_bound_is_kept_and_said():
    model, ref, x = build("cscs")
    plan = search(model, ref, x, max_forwards=4)
    assert plan.status == pp.BUDGET
    assert plan.forwards <= 4
    assert "no plan within the bound" in plan.reason and plan.fp32_modules == []


def test_seconds_bound_is_kept():
    model, ref, x = build("cscs")
    plan = search(model, ref, x, max_seconds=0.0)
    assert plan.status == pp.BUDGET and plan.forwards <= 2


def test_the_whole_model_is_never_a_plan():
    model, ref, x = build("scss")
    with pytest.raises(ValueError, match="never a plan"), pp.Applier(model, ref).applied(
            ["blocks.1", ""]):
        pass


def test_fp32_model_is_skipped():
    _, ref, x = build("scss")
    plan = pp.search_plan(ref, lambda m: m(x), lambda out: (1.0, False), LIMIT)
    assert plan.status == pp.SKIPPED and plan.forwards == 0


def test_ranking_from_drift_curve_and_normalize():
    drift = {"first_past_limit": {"module": "b.1.fc"},
             "curve": [["b.0", 0.01, 0.05], ["b.1.fc", 2.0, 0.05], ["b.1", 2.0, 0.05],
                       ["(model)", 3.0, 0.05]]}
    assert pp.ranking_from_drift(cast(DriftSummary, drift)) == ["b.1.fc", "b.1"]
    assert pp.normalize(["b.1.fc", "b.1", "b.10"]) == ["b.1", "b.10"]


def test_plan_after_verdict_emits_a_log_with_the_plan_and_snippet():
    model, ref, x = build("scss")
    want = ref(x).detach()
    sigs: list[dict] = []

    class Ctx:
        options: dict = {}

        def step(self, _name):
            pass

        def log(self, text, **fields):
            sigs.append(dict(fields, reason=text))

    def check(out):
        err = float((out.float() - want).abs().max())
        return err, err <= LIMIT

    verdict: Verdict = {"passed": False, "limit": LIMIT}
    # a stand-in with the members the plan uses (options, step, log), not a whole context
    ctx = cast(ProbeContext, Ctx())
    plan = pp.plan_after_verdict(ctx, "out", verdict, model=model, reference=ref,
                                 forward=lambda m: m(x.to(torch.bfloat16)),
                                 forward_reference=lambda m: m(x), check=check)
    assert plan is not None and plan.status == pp.FOUND
    (sig,) = sigs
    detail = sig["detail"]["precision_plan"]
    assert detail["fp32_modules"] == ["blocks.1"] and detail["limit"] == LIMIT
    assert detail["verified_error"] <= LIMIT and detail["forwards"] == sig["count"]
    assert "cast_keeping_fp32" in sig["fix"] and "blocks.1" in sig["fix"]
    assert sig["site"]["file"] == __file__ and sig["site"]["func"] == "Cancel.forward"
    assert detail["sites"]["blocks.1"].endswith(f":{sig['site']['line']}(Cancel.forward)")
    Ctx.options = {"precision_plan": False}
    assert pp.plan_after_verdict(ctx, "out", verdict, model=model, reference=ref,
                                 forward=lambda m: m(x), forward_reference=lambda m: m(x),
                                 check=check) is None
    assert pp.plan_after_verdict(ctx, "out", {"passed": True, "limit": LIMIT},
                                 model=model, reference=ref, forward=lambda m: m(x),
                                 forward_reference=lambda m: m(x), check=check) is None


CLI_MODEL = '''
import torch

D = 16


class Cancel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(D, D, bias=False)
        with torch.no_grad():
            w = torch.randn(D, D, dtype=torch.float64) / D ** 0.5
            self.fc.weight.copy_((w - w.mean(dim=1, keepdim=True)).float())

    def forward(self, x):
        return self.fc(x + 512.0)


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(D, D), Cancel(), torch.nn.Tanh(),
                                torch.nn.Linear(D, 4))
    return model.eval().to(torch.bfloat16), torch.randn(8, D).to(torch.bfloat16)
'''


@pytest.mark.parametrize("flag", [None, "--no-precision-plan"])
def test_cli_eager_cell_carries_the_plan_and_the_flag_turns_it_off(tmp_path, flag):
    import json

    from laya_tui.report.document import validate_report
    from tests._util import run_cli

    (tmp_path / "pp_cli_model.py").write_text(CLI_MODEL)
    out = tmp_path / "r.json"
    proc = run_cli("--headless", "--json", str(out), "--no-cache", "--device", "cpu",
                   "--only", "explain/model:*[eager]", "--model", "pp_cli_model:build",
                   *([flag] if flag else []), env={"PYTHONPATH": str(tmp_path)})
    report = json.loads(out.read_text())
    validate_report(report)
    (probe,) = report["probes"]
    assert probe["status"] == "failed", (proc.stderr[-2000:], probe.get("reason"))
    plans = [s for s in probe["signals"] if "precision_plan" in (s.get("detail") or {})]
    if flag:
        assert plans == []
        return
    (sig,) = plans
    plan = sig["detail"]["precision_plan"]
    assert sig["kind"] == "log" and plan["status"] == "found"
    assert plan["fp32_modules"] == ["1"] and plan["verified_error"] <= plan["limit"] == 0.05
    assert plan["forwards"] <= plan["max_forwards"] and "KEEP_FP32 = ['1']" in sig["fix"]
    assert "precision plan: keep 1 module(s) in fp32: 1; verified" in proc.stderr


def test_fp16_model_gets_its_plan_and_an_fp16_snippet():
    torch.manual_seed(0)
    ref = Net("scss").eval()
    x = torch.randn(8, D).to(torch.float16).float()
    model = copy.deepcopy(ref).to(torch.float16)
    want = ref(x).detach()

    def check(out):
        err = float((out.float() - want).abs().max())
        return err, err <= LIMIT

    plan = pp.search_plan(model, lambda m: m(x.to(torch.float16)), check, LIMIT,
                          reference=ref, forward_reference=lambda m: m(x))
    assert plan.status == pp.FOUND and plan.fp32_modules == ["blocks.1"]
    assert plan.dtype == "float16" and "dtype=torch.float16" in pp.snippet(plan)
