"""Logit tolerance: max |diff| vs limit, argmax agreement, near-tie vs clear-gap verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from laya_tui.api import Context
from laya_tui.core.protocol import SignalEvent
from laya_tui.families.tolerance import compare_logits, logits_verdict
from tests._signals import detail_of


def _rows(*rows):
    return np.array(rows, dtype=np.float64)


def test_exact_match_passes_with_zero_diff():
    ref = _rows([1.0, 0.5, -1.0], [0.0, 2.0, 1.0])
    v = logits_verdict(ref.copy(), ref, atol=1e-6)
    assert v["passed"] and v["value"] == 0.0
    d = v["detail"]
    assert (d["argmax_match"], d["rows"], d["verdict"]) == (2, 2, "match")
    assert d["top2_gap"] == pytest.approx(0.5)


def test_near_tie_flip_is_legitimate():
    # reference top-2 gap 0.01 <= max|diff| 0.02: either token may win
    ref = _rows([0.50, 0.49, 0.0], [3.0, 0.0, 0.0])
    out = _rows([0.48, 0.51, 0.0], [3.0, 0.0, 0.0])
    v = logits_verdict(out, ref, atol=0.05)
    d = v["detail"]
    assert v["passed"] is True
    assert d["verdict"] == "near-tie" and d["near_ties"] == 1 and d["clear_gap"] == 0
    assert d["argmax_match"] == 1 and d["rows"] == 2
    assert d["mismatches"] == [{"row": 0, "ref_token": 0, "out_token": 1,
                                "top2_gap": pytest.approx(0.01), "case": "near-tie"}]
    assert "near-tie" in v["reason"] and "legitimate" in v["reason"]


def test_clear_gap_mismatch_is_a_failure_even_within_the_limit():
    # gap 1.0 > max|diff| 0.55: the output changed the winner against a clear margin
    ref = _rows([1.0, 0.0, -1.0])
    out = _rows([0.45, 0.55, -1.0])
    v = logits_verdict(out, ref, atol=1.0)
    assert v["value"] == pytest.approx(0.55) and v["value"] <= v["limit"]
    assert v["passed"] is False
    assert v["detail"]["verdict"] == "clear-gap" and v["detail"]["clear_gap"] == 1
    assert "defect" in v["reason"]


def test_limit_exceeded_fails_without_any_flip():
    ref = _rows([2.0, 0.0])
    out = _rows([2.5, 0.0])
    v = logits_verdict(out, ref, atol=0.1)
    assert v["passed"] is False and v["detail"]["verdict"] == "match"
    assert "> limit" in v["reason"]


def test_mask_drops_padded_rows():
    ref = np.array([[[1.0, 0.0], [1.0, 0.0]]])
    out = np.array([[[1.0, 0.0], [0.0, 1.0]]])  # row 1 flips, but it is padding
    v = logits_verdict(out, ref, atol=1e-6, mask=np.array([[1, 0]]))
    assert v["passed"] and v["detail"]["rows"] == 1 and v["detail"]["verdict"] == "match"
    assert not logits_verdict(out, ref, atol=1e-6)["passed"]


def test_non_finite_output_fails():
    v = logits_verdict(_rows([float("nan"), 0.0]), _rows([1.0, 0.0]), atol=1.0)
    assert v["passed"] is False and math.isnan(v["value"])


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="shape mismatch"):
        logits_verdict(_rows([1.0, 0.0]), _rows([1.0, 0.0, 0.0]), atol=1.0)


def test_compare_logits_emits_a_tolerance_signal_with_the_detail():
    events: list[SignalEvent] = []
    ctx = Context("explain/t", "explain", events.append, opts={})
    torch = pytest.importorskip("torch")
    ref = torch.tensor([[[1.0, 0.0, -1.0]]])
    sig = compare_logits(ctx, "logits", torch.tensor([[[0.45, 0.55, -1.0]]]), ref, atol=1.0)
    assert sig["kind"] == "tolerance" and sig["passed"] is False
    assert {"argmax_match", "rows", "top2_gap", "verdict"} <= set(detail_of(sig))
    assert ctx.failures and "clear-gap" in ctx.failures[0]
