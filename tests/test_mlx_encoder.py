"""The MLX encoder against the torch fp32 ModernBERT: parity, padding, retraces, loader."""

from __future__ import annotations

import dataclasses
import re

import pytest

mx = pytest.importorskip("mlx.core", reason="mlx not installed: pip install 'mlx[cpu]' "
                         "on Linux, 'mlx' on macOS")
torch = pytest.importorskip("torch", reason="torch not installed: pip install 'laya-tui[torch]'")
pytest.importorskip("transformers", reason="pip install 'laya-tui[torch]'")

import numpy as np  # noqa: E402

from laya_tui.families.mlx.encoder import (  # noqa: E402
    LIMITS,
    MlxEncoder,
    PhaseTimes,
    WeightMismatch,
    bucket_width,
    load_weights,
    prepare,
    summarize,
    timed_forward,
)
from laya_tui.families.numeric import max_abs_diff  # noqa: E402
from laya_tui.families.presets import tiny_modernbert, token_batch  # noqa: E402

#: Shorter than the half window (8), just past it, padded rows, mixed lengths.
SHAPES = [[8], [17], [40, 17, 3], [93, 60, 31, 5]]


@pytest.fixture(scope="module")
def model():
    return tiny_modernbert()


@pytest.fixture(scope="module")
def perturbed():
    """Every weight moved off its init (LayerNorm weights are all ones at init)."""
    m = tiny_modernbert()
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    return m


def _ref(model, inputs):
    with torch.no_grad():
        return model(**inputs).last_hidden_state


def _delta(model, enc, lengths, *, compiled):
    inputs = token_batch(lengths)
    out, _t, _b = timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                compiled=compiled)
    value, _ = max_abs_diff(out, _ref(model, inputs),
                            mask=inputs["attention_mask"].bool()[..., None])
    return value


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("lengths", SHAPES, ids=lambda v: "x".join(map(str, v)))
def test_fp32_parity(model, lengths, compiled):
    enc = MlxEncoder.from_torch(model, "fp32")
    assert _delta(model, enc, lengths, compiled=compiled) <= 1e-4


@pytest.mark.parametrize("lengths", SHAPES[1:], ids=lambda v: "x".join(map(str, v)))
def test_fp32_parity_all_weights_used(perturbed, lengths):
    enc = MlxEncoder.from_torch(perturbed, "fp32")
    assert _delta(perturbed, enc, lengths, compiled=True) <= 1e-4


@pytest.mark.parametrize("lengths", SHAPES, ids=lambda v: "x".join(map(str, v)))
def test_fp16_parity_within_documented_limit(model, lengths):
    enc = MlxEncoder.from_torch(model, "fp16")
    delta = _delta(model, enc, lengths, compiled=True)
    assert delta <= LIMITS["fp16"]
    assert delta > LIMITS["fp32"]  # it really ran in fp16


def test_parity_check_sees_a_wrong_window(model):
    """The comparison can fail: a wider local window changes rows longer than 8."""
    enc = MlxEncoder.from_torch(model, "fp32")
    enc.spec = dataclasses.replace(enc.spec, window=64)
    assert _delta(model, enc, [8], compiled=False) <= 1e-4  # inside the window either way
    assert _delta(model, enc, [40, 17, 3], compiled=False) > 1e-3


def test_padded_positions_never_leak(model):
    enc = MlxEncoder.from_torch(model, "fp32")
    inputs = token_batch([40, 17, 3])
    valid = inputs["attention_mask"].bool()
    garbage = inputs["input_ids"].clone()
    garbage[~valid] = torch.randint(3, 512, (int((~valid).sum()),),
                                    generator=torch.Generator().manual_seed(3))
    for compiled in (False, True):
        clean, _, _ = timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                    compiled=compiled)
        dirty, _, _ = timed_forward(enc, garbage, inputs["attention_mask"], compiled=compiled)
        assert torch.isfinite(clean).all()  # fully padded local rows stay finite
        assert torch.equal(clean[valid], dirty[valid])
    # a padded row equals the same row run alone, unpadded
    alone = {k: v[2:3, :3] for k, v in inputs.items()}
    single, _, _ = timed_forward(enc, alone["input_ids"], alone["attention_mask"],
                                 compiled=False)
    assert torch.allclose(clean[2, :3], single[0], atol=1e-5)


def test_retrace_count_on_new_shapes_only(model):
    enc = MlxEncoder.from_torch(model, "fp32")

    def call(lengths):
        inputs = token_batch(lengths)
        timed_forward(enc, inputs["input_ids"], inputs["attention_mask"], compiled=True)
        return len(enc.traces)

    assert call([40, 25]) == 1
    assert call([40, 25]) == 1  # repeated shape: cached
    assert call([30, 40]) == 1  # same (B, L), other values: cached
    assert call([40, 25, 12]) == 2  # new batch size
    assert call([56, 25]) == 3  # new length
    assert call([56, 25]) == 3
    assert enc.traces == [(2, 40), (3, 40), (2, 56)]
    timed_forward(enc, *token_batch([70]).values(), compiled=False)
    assert len(enc.traces) == 3  # the uncompiled callable never traces


def test_buckets_bound_retraces_and_report_waste(model):
    enc = MlxEncoder.from_torch(model, "fp32")
    for lengths in ([33, 20], [37, 12], [40, 40], [45, 3]):
        inputs = token_batch(lengths)
        out, _t, batch = timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                       compiled=True, bucket=16)
        assert batch.shape == (2, 48)
        assert out.shape[1] == max(lengths)  # cut back to the caller's width
        assert max_abs_diff(out, _ref(model, inputs),
                            mask=inputs["attention_mask"].bool()[..., None])[0] <= 1e-4
    assert enc.traces == [(2, 48)]


def test_padding_waste_figures():
    assert bucket_width(93, 32) == 96 and bucket_width(93, 128) == 128
    assert bucket_width(93, None) == 93 and bucket_width(96, 32) == 96
    b = prepare(*token_batch([93]).values(), bucket=32)
    assert (b.padded_tokens, b.total_tokens) == (3, 96)
    assert b.padding_waste == pytest.approx(3 / 96)
    b = prepare(*token_batch([93]).values(), bucket=128)
    assert b.padding_waste == pytest.approx(35 / 128)
    inputs = token_batch([5, 5])
    inputs["input_ids"][1] = inputs["input_ids"][0]
    assert prepare(*inputs.values()).unique_inputs == 1


def test_loader_names_the_first_bad_key(model):
    enc = MlxEncoder.from_torch(model, "fp32")
    sd = dict(model.state_dict())
    missing = {k: v for k, v in sd.items()
               if k not in ("layers.1.attn.Wqkv.weight", "final_norm.weight")}
    with pytest.raises(WeightMismatch, match=re.escape("missing key 'layers.1.attn.Wqkv.weight'")):
        load_weights(missing, enc.spec)
    bad = dict(sd)
    bad["layers.2.mlp.Wi.weight"] = torch.zeros(128, 64)
    with pytest.raises(WeightMismatch, match=r"shape mismatch for 'layers.2.mlp.Wi.weight': "
                       r"got \(128, 64\), expected \(256, 64\)"):
        load_weights(bad, enc.spec)
    extra = dict(sd)
    extra["head.dense.weight"] = torch.zeros(1)
    with pytest.raises(WeightMismatch, match=re.escape("unexpected key 'head.dense.weight'")):
        load_weights(extra, enc.spec)
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        load_weights(sd, enc.spec, "int8")


def test_phase_times_and_medians(model):
    enc = MlxEncoder.from_torch(model, "fp32")
    inputs = token_batch([20, 7])
    _out, t, _b = timed_forward(enc, *inputs.values(), compiled=True)
    assert min(t.prepare, t.graph, t.forward, t.convert) >= 0
    assert t.total == pytest.approx(t.prepare + t.graph + t.forward + t.convert)
    runs = [PhaseTimes(1, 0, 0, 0), PhaseTimes(0, 1, 0, 0), PhaseTimes(0, 0, 5, 0)]
    stats = summarize(runs)
    assert sum(stats.medians.values()) == 0  # medians of phases do not add up to a run
    assert stats.total == 1
    assert np.isfinite(stats.total)
