"""The steady state's overhead timing: instrumented/plain pairs until a wall budget, never
fewer than the minimum, never more than ``overhead_repeats`` (issue 45: a slow forward
no longer costs 30 more forwards per cell)."""

from __future__ import annotations

import time

import pytest

from laya_tui.core.protocol import SignalEvent

torch = pytest.importorskip("torch")

from laya_tui.api import Context  # noqa: E402
from laya_tui.families.explain import explain_steady  # noqa: E402
from laya_tui.families.explain.steady import MIN_OVERHEAD_PAIRS  # noqa: E402


def _overhead(pause_s: float, *, repeats: int = 15,
              budget_s: float) -> tuple[dict[str, object], int]:
    """The overhead signal's detail and how many times the forward ran."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    x = torch.randn(2, 8)
    calls = 0

    def forward() -> object:
        nonlocal calls
        calls += 1
        time.sleep(pause_s)  # a forward that takes this long
        return model(x)

    events: list[SignalEvent] = []
    ctx = Context("explain/test", "explain", events.append, opts={})
    with torch.no_grad():
        explain_steady(ctx, "forward", forward, warmup=1, model=model,
                       overhead_repeats=repeats, overhead_budget_s=budget_s)
    sigs = [e["signal"] for e in events if e["type"] == "signal"]
    (over,) = [s for s in sigs if s["subject"] == "forward: instrumentation overhead"]
    (plain,) = [s for s in sigs if s["subject"] == "forward: forward uninstrumented"]
    detail = dict(over["detail"] or {})
    detail["median_of"] = (plain["detail"] or {})["median_of"]
    return detail, calls


def test_a_slow_forward_stops_at_the_minimum_pairs() -> None:
    detail, calls = _overhead(0.03, budget_s=0.05)
    assert detail["median_of"] == MIN_OVERHEAD_PAIRS
    assert f"median of {MIN_OVERHEAD_PAIRS} warm regions" in str(detail["instrumented"])
    # cold, 1 warm-up, warm, again, the extra later call, then the pairs
    assert calls == 5 + 2 * MIN_OVERHEAD_PAIRS
    assert float(str(detail["uninstrumented_s"])) >= 0.03


def test_a_quick_forward_runs_every_repeat_within_the_budget() -> None:
    detail, calls = _overhead(0.0, repeats=12, budget_s=30.0)
    assert detail["median_of"] == 12
    assert calls == 5 + 2 * 12
