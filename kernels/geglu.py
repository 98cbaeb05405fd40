"""Gated GELU: ``Y = gelu(A @ Wg^T) * (A @ Wu^T)`` (M dynamic), two projections, one pass."""


from typing import Any

import tilelang.language as T

from .common import Example, fill, gelu, gemm_nt, load_tile, make_spec
from .gemm import gemm_tiles

SEED = 1234


def gemm_geglu_kernel(N: int, K: int, *, dtype: str | None = None, cpu: bool = False,
                      block_M: int | None = None, block_N: int | None = None,
                      block_K: int | None = None, num_stages: int = 2,
                      threads: int = 128) -> Any:
    """``Y[M, N] = gelu(A[M, K] @ Wg[N, K]^T) * (A @ Wu[N, K]^T)``; params ``(A, Wg, Wu, Y)``.

    The GEMM tile loop of :func:`kernels.gemm.gemm_kernel` with two accumulators sharing
    the A tile; uneven tiles are zero-padded on load and predicated on store.
    """
    S = make_spec(cpu=cpu, dtype=dtype, threads=threads)
    bm, bn, bk = gemm_tiles(S, block_M, block_N, block_K)
    dt = S.dtype
    M = T.dynamic("M")

    @T.prim_func
    def geglu(A: T.Tensor((M, K), dt), Wg: T.Tensor((N, K), dt),
              Wu: T.Tensor((N, K), dt), Y: T.Tensor((M, N), dt)):
        with S.kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            A_t = S.tile((bm, bk))
            G_t = S.tile((bn, bk))
            U_t = S.tile((bn, bk))
            acc_g = S.frag((bm, bn))
            acc_u = S.frag((bm, bn))
            S.swizzle(10)
            fill(S, acc_g, 0.0)
            fill(S, acc_u, 0.0)
            for ko in S.stages(T.ceildiv(K, bk), num_stages):
                load_tile(S, A_t, A, by * bm, ko * bk, M, K)
                for j, k in S.par(bn, bk):  # both weight tiles in one loop (one predicate)
                    G_t[j, k] = T.if_then_else(
                        bx * bn + j < N and ko * bk + k < K,
                        Wg[bx * bn + j, ko * bk + k], T.cast(0, dt))
                    U_t[j, k] = T.if_then_else(
                        bx * bn + j < N and ko * bk + k < K,
                        Wu[bx * bn + j, ko * bk + k], T.cast(0, dt))
                gemm_nt(S, A_t, G_t, acc_g)
                gemm_nt(S, A_t, U_t, acc_u)
            for i, j in S.par(bm, bn):
                if by * bm + i < M and bx * bn + j < N:
                    Y[by * bm + i, bx * bn + j] = T.cast(gelu(acc_g[i, j]) * acc_u[i, j], dt)

    return geglu


def example(*, seed: int = SEED, M: int = 37, N: int = 48, K: int = 40) -> Example:
    """Uneven tiles on every axis; shapes of a small ModernBERT MLP input projection."""
    import torch

    from .reference import geglu_ref

    g = torch.Generator().manual_seed(seed)
    inputs = {
        "A": torch.randn(M, K, generator=g),
        "Wg": torch.randn(N, K, generator=g) / K**0.5,
        "Wu": torch.randn(N, K, generator=g) / K**0.5,
        "Y": torch.zeros(M, N),
    }

    def reference(t: dict[str, Any]) -> dict[str, Any]:
        return {"Y": geglu_ref(t["A"], t["Wg"], t["Wu"])}

    return Example(args=(N, K), kwargs={}, inputs=inputs, reference=reference,
                   outputs={"Y": lambda t: t["Y"]}, atol={"Y": 2e-5})
