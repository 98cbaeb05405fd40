"""A compiled output that differs from eager is narrowed down by torch's own compiler
bisector (issue 43 item 4): here through a configuration torch documents, Inductor's own
random numbers (``torch._inductor.config.fallback_random``: eager's RNG when True). The
bisector names it; torch itself, in the same test, shows the compiled output wrong without
it and right with it."""

from __future__ import annotations

from typing import Any

import pytest

from laya_tui.api import Context
from laya_tui.families.explain.compile_bisect import RUNS, bisect_after_verdict

pytest.importorskip("torch")
import torch  # noqa: E402

from laya_tui.core.report_types import SignalDict
from tests._signals import detail_of


class Noisy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x: Any) -> Any:
        return self.lin(x) + torch.rand_like(x)


@pytest.fixture(scope="module")
def setup() -> dict[str, Any]:
    torch.manual_seed(0)
    model, x = Noisy().eval(), torch.randn(4, 16)
    torch.manual_seed(123)
    with torch.no_grad():
        eager = model(x)

    def run() -> Any:
        torch.manual_seed(123)
        return torch.compile(model)(x)

    return {"model": model, "x": x, "eager": eager, "run": run,
            "good": lambda o: float((o - eager).abs().max()) <= 1e-4}


def _ctx(**opts: Any) -> tuple[Context, list[SignalDict]]:
    signals: list[SignalDict] = []
    return Context("explain/noisy[fp32,compile]", "explain",
                   lambda e: signals.append(e["signal"]), opts=opts), signals


def test_the_bisector_names_the_config_that_makes_compile_match_eager(
        setup: dict[str, Any]) -> None:
    ctx, signals = _ctx()
    found = bisect_after_verdict(ctx, "x logits", {"passed": False},
                                 run_compiled=setup["run"], good=setup["good"])
    assert found is not None and found.status == "found"
    assert (found.backend, found.subsystem) == ("inductor", "inductor_fallback_random")
    assert found.config == {"fallback_random": True}
    assert 0 < found.runs <= RUNS
    assert "fallback_random to True fixed the issue" in found.output  # the bisector's words
    (log,) = [s for s in signals if s["kind"] == "log"]
    assert detail_of(log)["compiler_bisect"]["config"] == {"fallback_random": True}
    assert log["fix"] is not None
    assert log["fix"].endswith("torch._inductor.config.fallback_random = True")
    # torch itself: wrong as compiled by default, right with the option named
    torch._dynamo.reset()
    with torch.no_grad():
        assert not setup["good"](setup["run"]())
        torch._dynamo.reset()
        with torch._inductor.config.patch(fallback_random=True):
            assert setup["good"](setup["run"]())
    torch._dynamo.reset()


def test_no_search_after_a_passing_verdict_or_when_switched_off(
        setup: dict[str, Any]) -> None:
    ctx, signals = _ctx()
    assert bisect_after_verdict(ctx, "x", {"passed": True}, run_compiled=setup["run"],
                                good=setup["good"]) is None
    ctx, signals = _ctx(precision_plan=False)
    assert bisect_after_verdict(ctx, "x", {"passed": False}, run_compiled=setup["run"],
                                good=setup["good"]) is None
    assert signals == []
