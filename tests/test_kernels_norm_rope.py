"""CPU numerics of the residual-add LayerNorm and RoPE kernels (in-place updates included)."""

from __future__ import annotations

import pytest

from tests._demo_kernels import demo_kernel
from tests._kernel_env import ATOL, torch

add_ln = demo_kernel("add_ln")
rope = demo_kernel("rope")
compile_cpu = demo_kernel("common").compile_cpu
_reference = demo_kernel("reference")
add_ln_ref = _reference.add_ln_ref
rope_ref = _reference.rope_ref
rope_tables = _reference.rope_tables

ROPE_ATOL = 2e-6


@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_add_ln_combinations(residual: bool, bias: bool) -> None:
    ex = add_ln.example(residual=residual, bias=bias)
    kernel = compile_cpu(add_ln.add_ln_kernel, *ex.args, **ex.kwargs)
    tensors, promoted = ex.materialize()
    before = {k: v.clone() for k, v in tensors.items()}
    kernel(*tensors.values())
    out, ref = ex.actual(tensors), ex.expected(promoted)
    diff = (out["Y"] - ref["Y"]).abs().max().item()
    assert diff <= ATOL, f"max |diff| {diff:.3g}"
    if residual:
        assert torch.equal(out["R"], ref["R"])  # the in-place residual is exact
        assert not torch.equal(tensors["R"], before["R"])
    assert torch.equal(tensors["X"], before["X"])  # X is read only


@pytest.mark.parametrize("scale", [1e3, 3e4])
def test_add_ln_large_residual_values(scale: float) -> None:
    D = 100  # not a power of two, and a partial block of rows
    kernel = compile_cpu(add_ln.add_ln_kernel, D)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(13, D, generator=g)
    r = torch.randn(13, D, generator=g) * scale
    gamma, beta = torch.rand(D, generator=g) + 0.5, torch.randn(D, generator=g)
    y = torch.zeros(13, D)
    r_in = r.clone()
    kernel(x, r, gamma, beta, y)
    ref_y, ref_r = add_ln_ref(x, r_in, gamma, beta)
    assert torch.equal(r, ref_r)
    diff = (y - ref_y).abs().max().item()
    assert diff <= ATOL, f"scale={scale:g}: max |diff| {diff:.3g}"
    assert torch.isfinite(y).all()


def test_add_ln_one_row_and_many_rows_share_a_kernel() -> None:
    D = 64
    kernel = compile_cpu(add_ln.add_ln_kernel, D, residual=False, bias=False)
    g = torch.Generator().manual_seed(9)
    gamma = torch.rand(D, generator=g) + 0.5
    for m in (1, 4, 130):
        x = torch.randn(m, D, generator=g)
        y = torch.zeros(m, D)
        kernel(x, gamma, y)
        ref, _ = add_ln_ref(x, None, gamma, None)
        assert (y - ref).abs().max().item() <= ATOL


def test_rope_position_wrap_and_untouched_v() -> None:
    ex = rope.example()  # 45 tokens over 16 positions: wraps twice, partial last tile
    kernel = compile_cpu(rope.rope_kernel, *ex.args, **ex.kwargs)
    tensors, promoted = ex.materialize()
    v_before = ex.outputs["V"](tensors).clone()
    kernel(*tensors.values())
    out, ref = ex.actual(tensors), ex.expected(promoted)
    diff = (out["QK"] - ref["QK"]).abs().max().item()
    assert diff <= ROPE_ATOL, f"max |diff| {diff:.3g}"
    assert torch.equal(ex.outputs["V"](tensors), v_before)  # V bit for bit
    assert not torch.equal(out["QK"], promoted["QKV"][:, : out["QK"].shape[1]])


@pytest.mark.parametrize("tokens,positions", [(7, 32), (64, 5), (33, 33)])
def test_rope_shapes(tokens: int, positions: int) -> None:
    H, Dh = 3, 64
    kernel = compile_cpu(rope.rope_kernel, H, Dh)
    g = torch.Generator().manual_seed(tokens)
    cos, sin = rope_tables(positions, Dh)
    qkv = torch.randn(tokens, 3 * H * Dh, generator=g)
    orig = qkv.clone()
    kernel(qkv, cos, sin)
    ref = rope_ref(orig, cos, sin, H, Dh)
    assert (qkv - ref).abs().max().item() <= ROPE_ATOL
    assert torch.equal(qkv[:, 2 * H * Dh:], orig[:, 2 * H * Dh:])


def test_rope_rejects_odd_head_dim() -> None:
    with pytest.raises(ValueError, match="even head dim"):
        rope.rope_kernel(2, 15, cpu=True)
