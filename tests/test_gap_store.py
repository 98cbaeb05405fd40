"""The gap table's memory (issue 43 item 2): the fp32 inputs of the module calls still
running, one per nesting level, are records like the rest, counted in the stated peak and
spilled under the budget (CPU, real torch).

The model nests three calls (``(model)`` > ``child`` > ``child.child``), each fed and
returning an activation of S = 40 MB in fp32: above glibc's largest mmap threshold (32 MB),
so a copy the table drops goes back to the system at once and the process's RSS at the
innermost call of the reference run is what the table really holds then: the three calls'
inputs, all still running.
"""

from __future__ import annotations

import copy
import os

import pytest

pytest.importorskip("torch")
import torch  # noqa: E402

from laya_tui.families.explain import gap_table as g  # noqa: E402
from laya_tui.families.explain.gap_store import Store  # noqa: E402

SHAPE = (2560, 4096)
S = SHAPE[0] * SHAPE[1] * 4  # one fp32 activation: 40 MB


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Leaf(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rss: list[int] = []  # the process's RSS when it runs (reference run only)

    def forward(self, x):
        if x.dtype == torch.float32 and not self.rss:
            self.rss.append(_rss())
        return x + 1.0


class Level(torch.nn.Module):
    def __init__(self, child: torch.nn.Module) -> None:
        super().__init__()
        self.child = child

    def forward(self, x):
        return self.child(x) * 1.5


def run(budget: int | None, folder: str) -> tuple[g.GapTable, int]:
    """The table under ``budget``, and the RSS growth at the innermost reference call."""
    leaf = Leaf()
    ref = Level(Level(leaf)).eval()
    model = copy.deepcopy(ref).to(torch.bfloat16)
    x = torch.randn(*SHAPE, generator=torch.Generator().manual_seed(0))
    xb = x.to(torch.bfloat16)
    before = _rss()
    table = g.gap_table(model, ref, lambda: model(xb), lambda: ref(x), budget=budget,
                        folder=folder)
    return table, leaf.rss[0] - before  # the reference's innermost Leaf


def rows(t: g.GapTable) -> list[tuple[str, float, float | None]]:
    return [(r.module, r.error, r.local) for r in t.rows]


@pytest.mark.slow  # 40 MB activations, a few hundred MB written to disk
def test_the_peak_counts_the_inputs_of_the_calls_still_running(tmp_path):
    free, _ = run(None, str(tmp_path))
    assert free.activation_bytes == 6 * S and free.peak_bytes == 6 * S
    # a budget of three activations: the three inputs, held while the calls run, fill it;
    # every output is spilled (they used to be counted alone: peak 2 S, held 3 S)
    t, held = run(3 * S, str(tmp_path))
    assert t.peak_bytes == 3 * S
    assert t.spilled_bytes >= 3 * S
    assert held <= t.peak_bytes + S // 2  # what the process really holds is what is said
    assert held >= 3 * S - S // 2
    assert rows(t) == rows(free)
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_a_budget_of_one_call_holds_with_nested_calls(tmp_path):
    free, _ = run(None, str(tmp_path))
    t, held = run(2 * S, str(tmp_path))
    assert t.peak_bytes <= 2 * S < t.activation_bytes
    assert held <= 2 * S + S // 2  # the third input is spilled, not held aside
    assert rows(t) == rows(free)


def test_a_record_read_back_spills_later_ones_to_fit():
    store: Store[str, torch.Tensor] = Store(budget=300, folder=None)
    try:
        store.put("a", torch.zeros(25), 100)
        store.put("b", torch.zeros(25), 100)
        store.put("c", torch.zeros(50), 200)  # does not fit: spilled
        assert (store.resident, store.spilled, store.peak) == (200, 200, 200)
        (c,) = store.take_all(["c"])  # read back: 'b' goes to disk to make room
        assert c is not None
        assert c.numel() == 50 and store.resident == 100 and store.loaned == 200
        assert store.peak == 300 and store.spilled == 300
        b, a = store.take_all(["b", "a"])  # the previous take is released
        assert a is not None and b is not None
        assert b.numel() == a.numel() == 25 and store.loaned == 200 and store.peak == 300
    finally:
        store.close()
