"""GEMM with bias/activation epilogue: ``C = act(A @ W^T + b)`` (M dynamic)."""


from typing import Any

import tilelang.language as T

from .common import Example, Spec, activation, fill, gemm_nt, load_tile, make_spec

SEED = 1234


def gemm_tiles(S: Spec, block_M: int | None, block_N: int | None,
               block_K: int | None) -> tuple[int, int, int]:
    """Tile sizes: explicit ones win, else 64x64x32 on the GPU and 16x16x16 on the CPU."""
    dm, dn, dk = (16, 16, 16) if S.cpu else (64, 64, 32)
    return block_M or dm, block_N or dn, block_K or dk


def gemm_kernel(N: int, K: int, *, bias: bool = False, act: str | None = None,
                dtype: str | None = None, cpu: bool = False, block_M: int | None = None,
                block_N: int | None = None, block_K: int | None = None, num_stages: int = 2,
                threads: int = 128) -> Any:
    """``C[M, N] = act(A[M, K] @ W[N, K]^T (+ Bias[N]))``; params ``(A, W, [Bias,] C)``.

    Uneven M/N/K tiles are zero-padded on load and predicated on store.
    """
    S = make_spec(cpu=cpu, dtype=dtype, threads=threads)
    activation(T.float32(0.0), act)  # validate act before tracing
    bm, bn, bk = gemm_tiles(S, block_M, block_N, block_K)
    dt = S.dtype
    M = T.dynamic("M")

    @T.macro
    def body(A, W, Bias, C):  # noqa: ANN001, ANN202 - TileLang macro
        with S.kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            A_t = S.tile((bm, bk))
            W_t = S.tile((bn, bk))
            acc = S.frag((bm, bn))
            S.swizzle(10)
            fill(S, acc, 0.0)
            for ko in S.stages(T.ceildiv(K, bk), num_stages):
                load_tile(S, A_t, A, by * bm, ko * bk, M, K)
                load_tile(S, W_t, W, bx * bn, ko * bk, N, K)
                gemm_nt(S, A_t, W_t, acc)
            for i, j in S.par(bm, bn):
                v = acc[i, j]
                if bias:
                    v = v + T.cast(Bias[T.min(bx * bn + j, N - 1)], S.accum)
                if by * bm + i < M and bx * bn + j < N:
                    C[by * bm + i, bx * bn + j] = T.cast(activation(v, act), dt)

    if bias:

        @T.prim_func
        def gemm_bias(A: T.Tensor((M, K), dt), W: T.Tensor((N, K), dt),
                      Bias: T.Tensor((N,), dt), C: T.Tensor((M, N), dt)):
            body(A, W, Bias, C)

        return gemm_bias

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dt), W: T.Tensor((N, K), dt),
             C: T.Tensor((M, N), dt)):
        body(A, W, None, C)

    return gemm


def example(*, seed: int = SEED, M: int = 37, N: int = 40, K: int = 24, bias: bool = True,
            act: str | None = "gelu") -> Example:
    """Uneven tiles on every axis (37 x 40 x 24 against 16/64-wide tiles)."""
    import torch

    from .reference import gemm_ref

    g = torch.Generator().manual_seed(seed)
    inputs = {
        "A": torch.randn(M, K, generator=g),
        "W": torch.randn(N, K, generator=g) / K**0.5,
    }
    if bias:
        inputs["Bias"] = torch.randn(N, generator=g) * 0.1
    inputs["C"] = torch.zeros(M, N)

    def reference(t: dict[str, Any]) -> dict[str, Any]:
        return {"C": gemm_ref(t["A"], t["W"], t.get("Bias"), act)}

    return Example(args=(N, K), kwargs={"bias": bias, "act": act}, inputs=inputs,
                   reference=reference, outputs={"C": lambda t: t["C"]},
                   atol={"C": 2e-5})
