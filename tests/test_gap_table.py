"""The gap table on small models with known answers (CPU, real torch).

``Cancel`` is unstable in bf16 on purpose: ``fc(x + 512)`` with zero-sum weight rows equals
``fc(x)``, but near 512 bf16's spacing is 4, so ``x + 512`` loses ``x``. It makes its own
error (large local error); the blocks after it only pass that error on (large output error,
small local error).
"""

from __future__ import annotations

import copy
import os

import pytest

pytest.importorskip("torch")
import torch  # noqa: E402

from laya_tui.families.explain import gap_table as g  # noqa: E402

D = 16


class Stable(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(D, D)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Cancel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(D, D, bias=False)
        with torch.no_grad():
            w = torch.randn(D, D, dtype=torch.float64) / D ** 0.5
            self.fc.weight.copy_((w - w.mean(dim=1, keepdim=True)).float())

    def forward(self, x):
        return self.fc(x + 512.0)


class Net(torch.nn.Module):
    def __init__(self, kinds: str) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Cancel() if k == "c" else Stable() for k in kinds])
        self.head = torch.nn.Linear(D, 4)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def build(kinds: str, seed: int = 0):
    torch.manual_seed(seed)
    ref = Net(kinds).eval()
    x = torch.randn(8, D).to(torch.bfloat16).float()  # representable in bf16: same inputs
    return copy.deepcopy(ref).to(torch.bfloat16), ref, x


def table(kinds: str, **kw):
    model, ref, x = build(kinds)
    return g.gap_table(model, ref, lambda: model(x.to(torch.bfloat16)), lambda: ref(x), **kw)


def row(t: g.GapTable, name: str) -> g.Row:
    return next(r for r in t.rows if r.module == name)


def test_the_unstable_module_ranks_first_and_makes_its_own_error():
    t = table("scss")
    first = t.ranked()[0]
    assert first.module == "blocks.1" and first.type == "Cancel"
    assert first.local is not None
    assert first.local > 10 * first.limit and first.share == pytest.approx(1.0)
    down = row(t, "blocks.2")  # after it: inherits the error, makes almost none
    assert down.local is not None and down.share is not None
    assert down.error > down.limit and down.local < 0.1 * down.limit
    assert down.share < 0.01
    up = row(t, "blocks.0")  # before it: fine either way
    assert up.local is not None
    assert up.error < up.limit and up.local < up.limit
    assert g.ranking(t)[:2] == ["blocks.1", "blocks.1.fc"]
    assert set(g.ranking(t)) == {"blocks.1", "blocks.1.fc"}
    root = row(t, g.ROOT)
    assert root.local is None and "whole model" in root.note
    assert all(r.module != g.ROOT for r in t.ranked())


def test_two_unstable_modules_both_rank_above_the_stable_ones():
    t = table("cscs")
    assert set(g.ranking(t)) == {"blocks.0", "blocks.0.fc", "blocks.2", "blocks.2.fc"}
    top4 = {r.module for r in t.ranked()[:4]}
    assert top4 == set(g.ranking(t))


def test_a_model_fine_in_bf16_has_no_module_past_its_limit():
    t = table("ssss")
    assert g.ranking(t) == []
    assert all(r.error <= r.limit for r in t.rows)


def test_activation_bytes_are_every_recorded_input_and_output():
    # batch 8 x D=16 fp32 = 512 B per activation; the head's output 8 x 4 x 4 = 128 B.
    # (model): in 512 + out 128; 4 blocks and 4 fc: in 512 + out 512 each; head: 512 + 128
    t = table("scss")
    assert t.activation_bytes == 640 + 8 * 1024 + 640
    assert t.peak_bytes == t.activation_bytes and t.spilled_files == 0  # no budget


def test_a_budget_spills_to_disk_and_gives_the_same_table(tmp_path):
    free = table("scss")
    spilled = table("scss", budget=2048, folder=str(tmp_path))
    assert spilled.peak_bytes <= 2048 < spilled.activation_bytes
    assert spilled.spilled_files > 0
    assert spilled.spilled_bytes + 2048 >= spilled.activation_bytes - 1024
    assert [(r.module, r.error, r.local) for r in spilled.ranked()] == \
        [(r.module, r.error, r.local) for r in free.ranked()]
    assert os.listdir(tmp_path) == []  # the spill folder is gone


class Appends(torch.nn.Module):
    """Appends to a cache object it is given (a KV cache's way): a re-run must not."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(D, D)

    def forward(self, x, cache):
        cache.items.append(x.shape[0])
        return self.fc(x)


class Cache:
    def __init__(self) -> None:
        self.items: list[int] = []


class WithCache(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = Appends(), Appends()

    def forward(self, x):
        cache = Cache()
        y = self.b(self.a(x, cache), cache)
        return y, torch.tensor(float(len(cache.items)))


def test_re_runs_leave_the_models_state_alone():
    torch.manual_seed(0)
    ref = WithCache().eval()
    model = copy.deepcopy(ref).to(torch.bfloat16)
    x = torch.randn(4, D)
    got: list = []
    t = g.gap_table(model, ref, lambda: got.append(model(x.to(torch.bfloat16))),
                    lambda: ref(x))
    assert float(got[0][1]) == 2.0  # two appends, not four
    assert row(t, "a").local is not None and row(t, "b").local is not None


class Ctx:
    def __init__(self, tmp_path, **options) -> None:
        self.options = dict(options, out=str(tmp_path))
        self.id = "explain/model:x[eager]"
        self.sigs: list[dict] = []

    def step(self, _name):
        pass

    def log(self, text, **fields):
        self.sigs.append(dict(fields, reason=text))


def test_after_a_verdict_only_when_it_fails_or_numerics_asks(tmp_path):
    model, ref, x = build("scss")
    kw = dict(model=model, reference=ref, forward=lambda m: m(x.to(torch.bfloat16)),
              forward_reference=lambda m: m(x))
    ctx = Ctx(tmp_path)
    assert g.table_after_verdict(ctx, "out", {"passed": True}, **kw) is None
    assert g.table_after_verdict(Ctx(tmp_path, precision_plan=False), "out",
                                 {"passed": False}, **kw) is None
    assert g.table_after_verdict(ctx, "out", {"passed": False}, **kw) is not None
    ctx2 = Ctx(tmp_path, numerics=True)
    assert g.table_after_verdict(ctx2, "out", {"passed": True}, **kw) is not None
    (sig,) = ctx.sigs
    detail = sig["detail"]["gap_table"]
    assert sig["subject"] == "out gap table" and detail["path"] == "eager"
    assert detail["rows"][0]["module"] == "blocks.1" and detail["rows"][0]["share"] == 1.0
    assert detail["output"]["module"] == g.ROOT and detail["modules"] == 10
    assert detail["budget_bytes"] == 256 * 1024 * 1024 and detail["peak_bytes"] == 9472
    assert os.path.isfile(detail["artifact"])
    assert "most own error: blocks.1 (Cancel)" in sig["reason"]
    assert sig["value"] == detail["rows"][0]["local"]


def test_budget_from_env(monkeypatch):
    monkeypatch.delenv("LAYA_TUI_NUMERICS_MB", raising=False)
    assert g.budget_bytes() == 256 * 1024 * 1024
    monkeypatch.setenv("LAYA_TUI_NUMERICS_MB", "1.5")
    assert g.budget_bytes() == int(1.5 * 1024 * 1024)
    monkeypatch.setenv("LAYA_TUI_NUMERICS_MB", "0")
    assert g.budget_bytes() is None
    monkeypatch.setenv("LAYA_TUI_NUMERICS_MB", "lots")
    with pytest.raises(ValueError, match="not a number of MB"):
        g.budget_bytes()


def test_class_sites_point_at_the_kept_modules_class_line():
    import inspect

    from laya_tui.families.explain.precision_plan import class_sites

    model, _, _ = build("scss")
    sites = class_sites(model, ["blocks.1", "nope"])
    assert list(sites) == ["blocks.1"]
    lines, start = inspect.getsourcelines(Cancel)
    assert sites["blocks.1"] == {"file": __file__, "line": start, "func": "Cancel"}
    assert lines[0].startswith("class Cancel(")


class TokenNet(torch.nn.Module):
    """A transformers-like shape: the inner model is fed token ids, not floats."""

    def __init__(self) -> None:
        super().__init__()
        self.model = torch.nn.Sequential(torch.nn.Embedding(32, D), Stable(), Cancel(),
                                         Stable())
        self.head = torch.nn.Linear(D, 4)

    def forward(self, ids):
        return self.head(self.model(ids))


def test_a_container_fed_token_ids_ranks_after_the_modules_inside_it():
    torch.manual_seed(0)
    ref = TokenNet().eval()
    model = copy.deepcopy(ref).to(torch.bfloat16)
    ids = torch.randint(0, 32, (4, 5))
    t = g.gap_table(model, ref, lambda: model(ids), lambda: ref(ids))
    inner = row(t, "model")
    assert inner.local is not None
    assert inner.whole and inner.note == g.WHOLE and inner.local > inner.limit
    ranked = [r.module for r in t.ranked()]
    assert ranked[0] == "model.2" and ranked[-1] == "model"
    assert not row(t, "model.0").whole  # the embedding is fed ids too, but has no submodule


def test_compile_path_compiles_each_leaf_and_says_so(tmp_path):
    model, ref, x = build("scss")
    ctx = Ctx(tmp_path, numerics=True)
    calls: list = []

    def forward(m):
        calls.append(type(m.head.forward).__name__)  # compiled while the table runs
        return m(x.to(torch.bfloat16))

    t = g.table_after_verdict(ctx, "out", {"passed": True}, model=model, reference=ref,
                              forward=forward, forward_reference=lambda m: m(x),
                              path=g.COMPILED)
    assert t is not None and calls and calls[0] != "method"
    assert "forward" not in model.head.__dict__  # restored: the model's own forward again
    (sig,) = ctx.sigs
    detail = sig["detail"]["gap_table"]
    assert detail["path"] == "compile" and "module by module" in detail["note"]
    assert detail["rows"][0]["module"] == "blocks.1"
    eager = table("scss")
    assert row(t, "blocks.2").local == pytest.approx(row(eager, "blocks.2").local, abs=0.01)


class NaiveSoftmax(torch.nn.Module):
    """``exp(x) / sum(exp(x))`` without subtracting the max: exp(12) overflows fp16."""

    def forward(self, x):
        e = torch.exp(x)
        return e / e.sum(dim=-1, keepdim=True)


class LoopSum(torch.nn.Module):
    """A long reduction written as a loop: every partial sum rounds to the model's dtype,
    so in bf16 (spacing 4 near 512) adding values near 1 loses most of them."""

    def forward(self, x):
        acc = torch.zeros_like(x[:, :1])
        for i in range(x.shape[1]):
            acc = acc + x[:, i:i + 1]
        return acc.expand(-1, D) / x.shape[1]


class Scale(torch.nn.Module):
    def __init__(self, by: float) -> None:
        super().__init__()
        self.by = by

    def forward(self, x):
        return x * self.by


@pytest.mark.parametrize("kind", ["softmax-fp16", "loop-sum-bf16"])
def test_other_unstable_modules_rank_first(kind):
    torch.manual_seed(0)
    if kind == "softmax-fp16":
        low = torch.float16
        ref = torch.nn.Sequential(Stable(), Scale(14.0), NaiveSoftmax(), Stable()).eval()
        x = torch.randn(8, D).to(low).float()
        culprit = "2"
    else:
        low = torch.bfloat16
        ref = torch.nn.Sequential(Scale(1.0), LoopSum(), Stable()).eval()
        x = (1.0 + 0.3 * torch.rand(8, 512)).to(low).float()
        culprit = "1"
    model = copy.deepcopy(ref).to(low)
    t = g.gap_table(model, ref, lambda: model(x.to(low)), lambda: ref(x))
    first = t.ranked()[0]
    assert first.local is not None
    assert first.module == culprit and first.local > 2 * first.limit, t.ranked()[:3]
    down = row(t, str(len(ref) - 1))  # the last Stable: inherits, makes almost nothing
    assert down.local is not None
    assert down.error > down.limit and down.local < down.limit
