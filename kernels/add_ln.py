"""Residual add + LayerNorm: ``R += X; Y = LayerNorm(R) * gamma (+ beta)``, R updated in place."""


from typing import Any

import tilelang.language as T

from .common import Example, make_spec, row_sum

SEED = 1234


def add_ln_kernel(D: int, *, residual: bool = True, bias: bool = True, eps: float = 1e-5,
                  dtype: str | None = None, cpu: bool = False, block_M: int | None = None,
                  threads: int = 128) -> Any:
    """LayerNorm over rows of width ``D`` (M dynamic), optionally after a residual add.

    Params ``(X, [R,] Gamma, [Beta,] Y)``. With ``residual`` the sum ``R + X`` is stored
    back into ``R`` in the I/O dtype and normalised from that stored value; mean and
    variance are two-pass in fp32.
    """
    S = make_spec(cpu=cpu, dtype=dtype, threads=threads)
    bm = block_M or (4 if S.cpu else 8)
    dt, acc = S.dtype, S.accum
    M = T.dynamic("M")

    @T.macro
    def body(X, R, Gamma, Beta, Y):  # noqa: ANN001, ANN202 - TileLang macro
        with S.kernel(T.ceildiv(M, bm)) as bx:
            x = S.frag((bm, D))
            sq = S.frag((bm, D))
            mean = S.frag((bm,))
            rstd = S.frag((bm,))
            for i, j in S.par(bm, D):
                v = T.if_then_else(bx * bm + i < M, T.cast(X[bx * bm + i, j], acc),
                                   T.float32(0.0))
                if residual:
                    v = v + T.if_then_else(bx * bm + i < M, T.cast(R[bx * bm + i, j], acc),
                                           T.float32(0.0))
                    v = T.cast(T.cast(v, dt), acc)  # normalise what is stored
                x[i, j] = v
            if residual:
                for i, j in S.par(bm, D):
                    if bx * bm + i < M:
                        R[bx * bm + i, j] = T.cast(x[i, j], dt)
            row_sum(S, x, mean)
            for i in S.par(bm):
                mean[i] = mean[i] / T.float32(D)
            for i, j in S.par(bm, D):
                x[i, j] = x[i, j] - mean[i]
            for i, j in S.par(bm, D):
                sq[i, j] = x[i, j] * x[i, j]
            row_sum(S, sq, rstd)
            for i in S.par(bm):
                rstd[i] = T.rsqrt(rstd[i] / T.float32(D) + T.float32(eps))
            for i, j in S.par(bm, D):
                if bx * bm + i < M:
                    y = x[i, j] * rstd[i] * T.cast(Gamma[j], acc)
                    if bias:
                        y = y + T.cast(Beta[j], acc)
                    Y[bx * bm + i, j] = T.cast(y, dt)

    if residual and bias:

        @T.prim_func
        def add_ln(X: T.Tensor((M, D), dt), R: T.Tensor((M, D), dt),
                   Gamma: T.Tensor((D,), dt), Beta: T.Tensor((D,), dt),
                   Y: T.Tensor((M, D), dt)):
            body(X, R, Gamma, Beta, Y)

        return add_ln
    if residual:

        @T.prim_func
        def add_ln_nobias(X: T.Tensor((M, D), dt), R: T.Tensor((M, D), dt),
                          Gamma: T.Tensor((D,), dt), Y: T.Tensor((M, D), dt)):
            body(X, R, Gamma, None, Y)

        return add_ln_nobias
    if bias:

        @T.prim_func
        def ln(X: T.Tensor((M, D), dt), Gamma: T.Tensor((D,), dt),
               Beta: T.Tensor((D,), dt), Y: T.Tensor((M, D), dt)):
            body(X, None, Gamma, Beta, Y)

        return ln

    @T.prim_func
    def ln_nobias(X: T.Tensor((M, D), dt), Gamma: T.Tensor((D,), dt),
                  Y: T.Tensor((M, D), dt)):
        body(X, None, Gamma, None, Y)

    return ln_nobias


def example(*, seed: int = SEED, M: int = 37, D: int = 64, residual: bool = True,
            bias: bool = True, scale: float = 1.0) -> Example:
    """37 rows (a partial last block) of width 64; ``scale`` grows the residual values."""
    import torch

    from .reference import add_ln_ref

    g = torch.Generator().manual_seed(seed)
    inputs = {"X": torch.randn(M, D, generator=g)}
    if residual:
        inputs["R"] = torch.randn(M, D, generator=g) * scale
    inputs["Gamma"] = 1.0 + 0.1 * torch.randn(D, generator=g)
    if bias:
        inputs["Beta"] = 0.1 * torch.randn(D, generator=g)
    inputs["Y"] = torch.zeros(M, D)

    def reference(t: dict[str, Any]) -> dict[str, Any]:
        y, new_res = add_ln_ref(t["X"], t.get("R"), t["Gamma"], t.get("Beta"))
        return {"Y": y, "R": new_res} if residual else {"Y": y}

    outputs: dict[str, Any] = {"Y": lambda t: t["Y"]}
    atol = {"Y": 2e-5}
    if residual:
        outputs["R"] = lambda t: t["R"]
        atol["R"] = 0.0
    return Example(args=(D,), kwargs={"residual": residual, "bias": bias}, inputs=inputs,
                   reference=reference, outputs=outputs, atol=atol,
                   rounded=("R",) if residual else ())
