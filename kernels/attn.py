"""Attention over packed QKV with per-row lengths, padding masks, sliding window, online softmax."""


import math
from typing import Any

import tilelang.language as T

from .common import NEG_BIG, Example, fill, gemm_nn, gemm_nt, make_spec, row_max, row_sum

SEED = 1234


def attn_kernel(B: int, Dh: int, H: int, *, window: int | None = None,
                seq_len: int | None = None, dtype: str | None = None, cpu: bool = False,
                block_M: int | None = None, block_N: int | None = None, num_stages: int = 2,
                threads: int = 128) -> Any:
    """``O[b, s, h*Dh:(h+1)*Dh] = softmax(q k^T / sqrt(Dh)) v`` per batch row and head.

    Params ``(QKV[B, S, 3*H*Dh], Lengths[B] int32, Out[B, S, H*Dh])``; ``S`` is dynamic
    unless ``seq_len`` is given. Keys at or past ``Lengths[b]`` are masked, and with
    ``window`` so is ``|q - k| > window`` (both ends inclusive). Query rows at or past the
    length (padding), and rows with no valid key (empty sequences), are written as 0.
    """
    if window is not None and window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    S = make_spec(cpu=cpu, dtype=dtype, threads=threads)
    bm = block_M or (16 if S.cpu else 64)
    bn = block_N or (16 if S.cpu else 64)
    dt = S.dtype
    seq = seq_len if seq_len is not None else T.dynamic("S")
    scale = 1.0 / math.sqrt(Dh)

    def live(m: Any) -> Any:
        """The running max to subtract: 0 while a row has seen no valid key (all masked)."""
        return T.if_then_else(m > T.float32(NEG_BIG * 0.5), m, T.float32(0.0))

    @T.prim_func
    def attn(QKV: T.Tensor((B, seq, 3 * H * Dh), dt), Lengths: T.Tensor((B,), "int32"),
             Out: T.Tensor((B, seq, H * Dh), dt)):
        with S.kernel(T.ceildiv(seq, bm), H, B) as (bx, h, b):
            Q_t = S.tile((bm, Dh))
            K_t = S.tile((bn, Dh))
            V_t = S.tile((bn, Dh))
            s = S.frag((bm, bn))
            # P feeds the second GEMM: registers for 16-bit types, shared memory for fp32
            # (an fp32 fragment cannot take both the accumulator and the operand layout)
            p = S.frag((bm, bn), dt) if dt != "float32" else S.tile((bm, bn), dt)
            acc_o = S.frag((bm, Dh))
            m_prev = S.frag((bm,))
            m_cur = S.frag((bm,))
            alpha = S.frag((bm,))
            l_sum = S.frag((bm,))
            p_sum = S.frag((bm,))
            S.swizzle_layout(Q_t, K_t, V_t)

            L = T.min(Lengths[b], seq)
            q0 = bx * bm
            for i, d in S.par(bm, Dh):
                Q_t[i, d] = T.if_then_else(q0 + i < L, QKV[b, q0 + i, h * Dh + d], T.cast(0, dt))
            fill(S, acc_o, 0.0)
            fill(S, l_sum, 0.0)
            fill(S, m_prev, NEG_BIG)
            if window is None:
                kb_lo = 0
                kb_hi = T.ceildiv(L, bn)
            else:
                kb_lo = T.max(q0 - window, 0) // bn
                kb_hi = T.ceildiv(T.min(L, q0 + bm + window), bn)
            for t in S.stages(T.max(kb_hi - kb_lo, 0), num_stages):
                k0 = (kb_lo + t) * bn
                for j, d in S.par(bn, Dh):
                    K_t[j, d] = T.if_then_else(k0 + j < L, QKV[b, k0 + j, (H + h) * Dh + d],
                                               T.cast(0, dt))
                    V_t[j, d] = T.if_then_else(k0 + j < L, QKV[b, k0 + j, (2 * H + h) * Dh + d],
                                               T.cast(0, dt))
                fill(S, s, 0.0)
                gemm_nt(S, Q_t, K_t, s)
                for i, j in S.par(bm, bn):
                    ok = q0 + i < L and k0 + j < L
                    if window is not None:
                        ok = ok and q0 + i - (k0 + j) <= window and k0 + j - (q0 + i) <= window
                    s[i, j] = T.if_then_else(ok, s[i, j] * T.float32(scale), T.float32(NEG_BIG))
                row_max(S, s, m_cur)
                for i in S.par(bm):
                    m_cur[i] = T.max(m_cur[i], m_prev[i])
                    alpha[i] = T.exp(m_prev[i] - live(m_cur[i]))
                for i, j in S.par(bm, bn):
                    s[i, j] = T.exp(s[i, j] - live(m_cur[i]))
                row_sum(S, s, p_sum)
                for i in S.par(bm):
                    l_sum[i] = l_sum[i] * alpha[i] + p_sum[i]
                    m_prev[i] = m_cur[i]
                for i, d in S.par(bm, Dh):
                    acc_o[i, d] = acc_o[i, d] * alpha[i]
                for i, j in S.par(bm, bn):
                    p[i, j] = T.cast(s[i, j], dt)
                gemm_nn(S, p, V_t, acc_o)
            for i, d in S.par(bm, Dh):
                if q0 + i < seq:
                    Out[b, q0 + i, h * Dh + d] = T.cast(
                        T.if_then_else(l_sum[i] > T.float32(0.0), acc_o[i, d] / l_sum[i],
                                       T.float32(0.0)), dt)

    return attn


def example(*, seed: int = SEED, lengths: tuple[int, ...] = (37, 0, 20), seq: int = 37,
            H: int = 2, Dh: int = 32, window: int | None = 8,
            static: bool = False) -> Example:
    """Three rows of a 37-token batch: full, empty and padded; sliding window of 8."""
    import torch

    from .reference import attn_ref

    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    lens = torch.tensor(lengths, dtype=torch.int32)
    inputs = {
        "QKV": torch.randn(B, seq, 3 * H * Dh, generator=g),
        "Lengths": lens,
        "Out": torch.zeros(B, seq, H * Dh),
    }

    def reference(t: dict[str, Any]) -> dict[str, Any]:
        return {"O": attn_ref(t["QKV"], t["Lengths"], H, Dh, window)}

    kwargs: dict[str, Any] = {"window": window}
    if static:
        kwargs["seq_len"] = seq
    return Example(args=(B, Dh, H), kwargs=kwargs, inputs=inputs, reference=reference,
                   outputs={"O": lambda t: t["Out"]}, atol={"O": 2e-5},
                   atol_lowp={"O": 0.02})
