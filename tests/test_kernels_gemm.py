"""CPU numerics of the GEMM and GEGLU kernels against their torch fp32 references."""

from __future__ import annotations

import pytest

from tests._demo_kernels import demo_kernel
from tests._kernel_env import ATOL, torch

geglu = demo_kernel("geglu")
gemm = demo_kernel("gemm")
compile_cpu = demo_kernel("common").compile_cpu
_reference = demo_kernel("reference")
geglu_ref = _reference.geglu_ref
gemm_ref = _reference.gemm_ref


def _run(factory, example) -> tuple[dict, dict]:
    kernel = compile_cpu(factory, *example.args, **example.kwargs)
    tensors, promoted = example.materialize()
    expected = example.expected(promoted)
    kernel(*tensors.values())
    return example.actual(tensors), expected


@pytest.mark.parametrize("act", [None, "gelu", "relu"])
@pytest.mark.parametrize("bias", [False, True])
def test_gemm_epilogues_uneven_tiles(act: str | None, bias: bool) -> None:
    # 37 x 40 x 24 against 16-wide tiles: partial tiles on M, N and K at once.
    out, ref = _run(gemm.gemm_kernel, gemm.example(bias=bias, act=act))
    diff = (out["C"] - ref["C"]).abs().max().item()
    assert diff <= ATOL, f"act={act} bias={bias}: max |diff| {diff:.3g}"
    assert ref["C"].abs().max() > 1.0  # the check compares real numbers, not zeros


@pytest.mark.parametrize("tiles", [(8, 24, 16), (32, 8, 5)])
def test_gemm_odd_tile_shapes_and_dynamic_m(tiles: tuple[int, int, int]) -> None:
    bm, bn, bk = tiles
    N, K = 29, 23
    kernel = compile_cpu(gemm.gemm_kernel, N, K, bias=True, act="relu", block_M=bm,
                         block_N=bn, block_K=bk)
    g = torch.Generator().manual_seed(7)
    w, b = torch.randn(N, K, generator=g), torch.randn(N, generator=g)
    for m in (1, 5, 33, 70):
        a = torch.randn(m, K, generator=g)
        c = torch.full((m, N), float("nan"))
        again = compile_cpu(gemm.gemm_kernel, N, K, bias=True, act="relu", block_M=bm,
                            block_N=bn, block_K=bk)
        assert again is kernel  # one compiled kernel for every M
        kernel(a, w, b, c)
        diff = (c - gemm_ref(a, w, b, "relu")).abs().max().item()
        assert diff <= ATOL, f"M={m} tiles={tiles}: max |diff| {diff:.3g}"


def test_gemm_rejects_unknown_activation() -> None:
    with pytest.raises(ValueError, match="unsupported act"):
        gemm.gemm_kernel(8, 8, act="silu", cpu=True)


def test_cpu_specialization_is_fp32_only() -> None:
    with pytest.raises(ValueError, match="fp32 specialization"):
        gemm.gemm_kernel(8, 8, cpu=True, dtype="float16")


def test_geglu_matches_reference() -> None:
    out, ref = _run(geglu.gemm_geglu_kernel, geglu.example())
    diff = (out["Y"] - ref["Y"]).abs().max().item()
    assert diff <= ATOL, f"max |diff| {diff:.3g}"


def test_geglu_uneven_shapes_reuse_kernel() -> None:
    N, K = 33, 17
    kernel = compile_cpu(geglu.gemm_geglu_kernel, N, K)
    g = torch.Generator().manual_seed(11)
    wg, wu = torch.randn(N, K, generator=g), torch.randn(N, K, generator=g)
    for m in (3, 19):
        a = torch.randn(m, K, generator=g)
        y = torch.zeros(m, N)
        kernel(a, wg, wu, y)
        diff = (y - geglu_ref(a, wg, wu)).abs().max().item()
        assert diff <= ATOL, f"M={m}: max |diff| {diff:.3g}"
