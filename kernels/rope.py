"""Rotary embedding (rotate-half) applied in place to the Q and K columns of packed QKV."""


from typing import Any

import tilelang.language as T

from .common import Example, make_spec

SEED = 1234


def rope_kernel(H: int, Dh: int, *, dtype: str | None = None, cpu: bool = False,
                block_M: int | None = None, threads: int = 128) -> Any:
    """RoPE on ``QKV[tokens, 3*H*Dh]`` in place; params ``(QKV, Cos, Sin)``.

    ``Cos``/``Sin`` are ``(P, Dh/2)`` tables; token ``t`` uses position ``t % P`` (a packed
    batch of sequences of length P wraps). Only the first ``2*H*Dh`` columns (Q and K) are
    read and written; V columns are never touched.
    """
    if Dh % 2:
        raise ValueError(f"rope_kernel needs an even head dim, got Dh={Dh}")
    S = make_spec(cpu=cpu, dtype=dtype, threads=threads)
    bm = block_M or (8 if S.cpu else 32)
    dt, acc = S.dtype, S.accum
    half = Dh // 2
    ntok = T.dynamic("tokens")
    npos = T.dynamic("positions")

    @T.prim_func
    def rope(QKV: T.Tensor((ntok, 3 * H * Dh), dt), Cos: T.Tensor((npos, half), dt),
             Sin: T.Tensor((npos, half), dt)):
        with S.kernel(T.ceildiv(ntok, bm), 2 * H) as (bx, hh):
            x = S.tile((bm, Dh))
            o = S.frag((bm, Dh))
            for i, d in S.par(bm, Dh):
                x[i, d] = T.if_then_else(bx * bm + i < ntok, QKV[bx * bm + i, hh * Dh + d],
                                         T.cast(0, dt))
            for i, d in S.par(bm, Dh):
                p = (bx * bm + i) % npos
                c = T.cast(Cos[p, d % half], acc)
                s = T.cast(Sin[p, d % half], acc)
                partner = T.cast(x[i, (d + half) % Dh], acc)
                rot = T.if_then_else(d < half, T.float32(0.0) - partner, partner)
                o[i, d] = T.cast(x[i, d], acc) * c + rot * s
            for i, d in S.par(bm, Dh):
                if bx * bm + i < ntok:
                    QKV[bx * bm + i, hh * Dh + d] = T.cast(o[i, d], dt)

    return rope


def example(*, seed: int = SEED, tokens: int = 45, positions: int = 16, H: int = 2,
            Dh: int = 16) -> Example:
    """45 packed tokens over a 16-position table: positions wrap twice, last tile partial."""
    import torch

    from .reference import rope_ref, rope_tables

    g = torch.Generator().manual_seed(seed)
    cos, sin = rope_tables(positions, Dh)
    qkv = torch.randn(tokens, 3 * H * Dh, generator=g)
    inputs = {"QKV": qkv, "Cos": cos, "Sin": sin}
    qk = 2 * H * Dh

    def reference(t: dict[str, Any]) -> dict[str, Any]:
        out = rope_ref(t["QKV"], t["Cos"], t["Sin"], H, Dh)
        return {"QK": out[:, :qk], "V": t["QKV"][:, qk:]}

    return Example(args=(H, Dh), kwargs={}, inputs=inputs, reference=reference,
                   outputs={"QK": lambda t: t["QKV"][:, :qk], "V": lambda t: t["QKV"][:, qk:]},
                   atol={"QK": 2e-6, "V": 0.0})
