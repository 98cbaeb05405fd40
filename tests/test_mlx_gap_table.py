"""The MLX encoder's gap table by the torch model's module names (issue 43), real MLX and
torch on the CPU: fp32 agrees everywhere; a weight scaled on purpose in one MLX step makes
that step rank first with a large local error while the steps after it inherit the error
and make none of their own."""

from __future__ import annotations

import pytest

pytest.importorskip("mlx.core", reason="mlx not installed: pip install 'mlx[cpu]'")
pytest.importorskip("transformers")

from laya_tui.families.mlx import gap  # noqa: E402
from laya_tui.families.mlx.encoder import MlxEncoder  # noqa: E402
from laya_tui.families.presets import tiny_modernbert, token_batch  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return tiny_modernbert()


def _table(enc, model, lengths=(40, 17, 3), **kw):
    b = token_batch(list(lengths))
    return gap.encoder_gap_table(enc, model, b["input_ids"], b["attention_mask"], **kw)


def test_every_named_step_is_compared_and_fp32_agrees(model):
    enc = MlxEncoder.from_torch(model, "fp32")
    t = _table(enc, model)
    assert [r.module for r in t.rows] == gap.step_names(enc)  # in execution order
    assert {r.type for r in t.rows} >= {"ModernBertEmbeddings", "ModernBertAttention",
                                        "ModernBertMLP", "ModernBertEncoderLayer", "LayerNorm"}
    assert all(r.error < 1e-5 and r.local is not None and r.local < 1e-5 for r in t.rows)
    assert t.skipped == {}


def test_a_step_wrong_on_purpose_ranks_first_and_the_steps_after_it_inherit(model):
    enc = MlxEncoder.from_torch(model, "fp32")
    enc.w["layers.1.mlp.Wo.weight"] = enc.w["layers.1.mlp.Wo.weight"] * 1.5
    t = _table(enc, model)
    first = t.ranked()[0]
    assert first.module == "layers.1.mlp" and first.local > 10 * first.limit
    final = next(r for r in t.rows if r.module == "final_norm")
    assert final.error > final.limit and final.local < 1e-5  # inherits, makes none
    before = next(r for r in t.rows if r.module == "layers.1.attn")
    assert before.error < before.limit


def test_fp16_steps_have_finite_errors_and_the_budget_spills(model, tmp_path):
    enc = MlxEncoder.from_torch(model, "fp16")
    free = _table(enc, model)
    # a budget of about one step's record (46 KB): the record under comparison counts too
    small = _table(enc, model, budget=65536, folder=str(tmp_path))
    assert small.spilled_files > 0 and small.peak_bytes <= 65536 < small.activation_bytes
    assert [(r.module, r.error, r.local) for r in small.rows] == \
        [(r.module, r.error, r.local) for r in free.rows]
    assert all(r.local is not None and r.local < r.limit for r in free.rows)


def test_after_compare_only_when_failing_or_asked(model, tmp_path):
    from tests.test_gap_table import Ctx

    enc = MlxEncoder.from_torch(model, "fp16")
    inputs = token_batch([8])
    ctx = Ctx(tmp_path)
    assert gap.table_after_compare(ctx, "h", {"passed": True}, enc=enc, model=model,
                                   inputs=inputs) is None
    ctx = Ctx(tmp_path, numerics=True)
    t = gap.table_after_compare(ctx, "h", {"passed": True}, enc=enc, model=model,
                                inputs=inputs, compiled=True)
    assert t is not None
    (sig,) = ctx.sigs
    detail = sig["detail"]["gap_table"]
    assert detail["path"] == "mlx" and "uncompiled" in detail["note"]
    assert detail["modules"] == len(gap.step_names(enc))
