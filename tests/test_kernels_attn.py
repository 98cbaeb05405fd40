"""CPU numerics of the attention kernel: masks, window, partial tiles, empty sequences."""

from __future__ import annotations

import pytest

from tests._demo_kernels import demo_kernel
from tests._kernel_env import ATOL, torch

attn = demo_kernel("attn")
compile_cpu = demo_kernel("common").compile_cpu
_reference = demo_kernel("reference")
attn_ref = _reference.attn_ref


def _check(B: int, S: int, H: int, Dh: int, lengths: list[int], window: int | None,
           *, static: bool = False, seed: int = 0) -> torch.Tensor:
    kw = {"window": window, **({"seq_len": S} if static else {})}
    kernel = compile_cpu(attn.attn_kernel, B, Dh, H, **kw)
    g = torch.Generator().manual_seed(seed)
    qkv = torch.randn(B, S, 3 * H * Dh, generator=g)
    lens = torch.tensor(lengths, dtype=torch.int32)
    out = torch.full((B, S, H * Dh), float("nan"))
    qkv_in = qkv.clone()
    kernel(qkv, lens, out)
    assert torch.equal(qkv, qkv_in)
    ref = attn_ref(qkv_in, lens, H, Dh, window)
    assert torch.isfinite(out).all(), "non-finite output (padded rows must be written as 0)"
    diff = (out - ref).abs().max().item()
    assert diff <= ATOL, f"lengths={lengths} window={window}: max |diff| {diff:.3g}"
    for b, n in enumerate(lengths):
        assert torch.all(out[b, n:] == 0), f"padded rows of batch row {b} are not 0"
    return out


@pytest.mark.parametrize("static", [False, True])
def test_full_attention_static_and_dynamic(static: bool) -> None:
    _check(2, 32, 2, 16, [32, 32], None, static=static)


@pytest.mark.parametrize("window", [0, 3, 8, 40])
def test_sliding_window_both_ends_inclusive(window: int) -> None:
    _check(2, 37, 2, 16, [37, 29], window, seed=window)


def test_partial_tiles_and_uneven_lengths() -> None:
    # 37 tokens against 16-wide tiles, lengths that end mid-tile and on a tile edge
    _check(4, 37, 3, 32, [37, 16, 1, 23], None, seed=3)


def test_empty_sequences_are_zero_and_finite() -> None:
    out = _check(3, 20, 2, 16, [0, 20, 0], 4, seed=4)
    assert torch.all(out[0] == 0) and torch.all(out[2] == 0)


def test_dynamic_seq_reuses_one_kernel() -> None:
    k1 = compile_cpu(attn.attn_kernel, 2, 16, 2, window=None)
    for S in (5, 17, 48):
        _check(2, S, 2, 16, [S, max(S - 3, 0)], None, seed=S)
    assert compile_cpu(attn.attn_kernel, 2, 16, 2, window=None) is k1


def test_probe_example_matches() -> None:
    ex = attn.example()
    kernel = compile_cpu(attn.attn_kernel, *ex.args, **ex.kwargs)
    tensors, promoted = ex.materialize()
    kernel(*tensors.values())
    out, ref = ex.actual(tensors), ex.expected(promoted)
    assert (out["O"] - ref["O"]).abs().max().item() <= ATOL


def test_negative_window_is_rejected() -> None:
    with pytest.raises(ValueError, match="window"):
        attn.attn_kernel(1, 16, 1, window=-1, cpu=True)
