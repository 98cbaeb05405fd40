"""Torch fp32 references for the five kernels (the numbers the kernels must reproduce).

Every function takes and returns fp32 tensors and never mutates its inputs: the in-place
kernels (residual add, RoPE) have references that return the updated tensor.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def gemm_ref(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None,
             act: str | None = None) -> torch.Tensor:
    """``act(a @ w.T + bias)`` with act None, "gelu" (exact erf) or "relu"."""
    out = a.float() @ w.float().T
    if bias is not None:
        out = out + bias.float()
    if act == "gelu":
        out = F.gelu(out)
    elif act == "relu":
        out = torch.relu(out)
    elif act is not None:
        raise ValueError(f"unsupported act {act!r}")
    return out


def geglu_ref(a: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor) -> torch.Tensor:
    """``gelu(a @ wg.T) * (a @ wu.T)`` (ModernBERT's gated MLP input projection)."""
    return F.gelu(a.float() @ wg.float().T) * (a.float() @ wu.float().T)


def add_ln_ref(x: torch.Tensor, residual: torch.Tensor | None, gamma: torch.Tensor,
               beta: torch.Tensor | None, eps: float = 1e-5,
               dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Residual add then LayerNorm: returns ``(y, new_residual)``.

    The new residual is stored in ``dtype`` (as the kernel stores it in place) and the
    LayerNorm reads that stored value, as a ModernBERT layer does.
    """
    h = x.float()
    new_res = None
    if residual is not None:
        new_res = (residual.float() + x.float()).to(dtype).float()
        h = new_res
    y = F.layer_norm(h, (h.shape[-1],), gamma.float(),
                     None if beta is None else beta.float(), eps)
    return y, new_res


def rope_tables(positions: int, dh: int, theta: float = 10000.0) -> tuple[torch.Tensor,
                                                                          torch.Tensor]:
    """``(cos, sin)`` tables of shape (positions, dh // 2) for rotate-half RoPE."""
    inv = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    ang = torch.arange(positions, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope_ref(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, heads: int,
             dh: int) -> torch.Tensor:
    """Rotate-half RoPE on the Q and K columns of packed QKV (tokens, 3*heads*dh).

    Token ``t`` uses position ``t % cos.shape[0]``; V columns are returned untouched.
    """
    out = qkv.float().clone()
    tokens, half = qkv.shape[0], dh // 2
    pos = torch.arange(tokens) % cos.shape[0]
    c, s = cos.float()[pos][:, None, :], sin.float()[pos][:, None, :]
    qk = out[:, : 2 * heads * dh].reshape(tokens, 2 * heads, dh)
    x1, x2 = qk[..., :half].clone(), qk[..., half:].clone()
    qk[..., :half] = x1 * c - x2 * s
    qk[..., half:] = x2 * c + x1 * s
    out[:, : 2 * heads * dh] = qk.reshape(tokens, 2 * heads * dh)
    return out


def attn_mask(lengths: torch.Tensor, seq: int, window: int | None = None) -> torch.Tensor:
    """Boolean (batch, seq_q, seq_k): key valid, query valid and within the window."""
    idx = torch.arange(seq)
    lens = lengths.long()[:, None]
    valid = idx[None, :] < lens  # (B, S)
    mask = valid[:, :, None] & valid[:, None, :]
    if window is not None:
        mask = mask & ((idx[:, None] - idx[None, :]).abs() <= window)[None]
    return mask


def attn_ref(qkv: torch.Tensor, lengths: torch.Tensor, heads: int, dh: int,
             window: int | None = None) -> torch.Tensor:
    """Attention over packed QKV (batch, seq, 3*heads*dh) -> (batch, seq, heads*dh).

    Keys at or past a row's length are masked, and with ``window`` so is ``|q - k| >
    window``; query rows at or past the length (padding) and rows with no valid key are 0.
    """
    b, s, _ = qkv.shape
    x = qkv.float().reshape(b, s, 3, heads, dh)
    q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))  # (B, H, S, Dh)
    mask = attn_mask(lengths, s, window)[:, None]  # (B, 1, S, S)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
    scores = scores.masked_fill(~mask, float("-inf"))
    any_valid = mask.any(-1, keepdim=True)
    probs = torch.softmax(scores.masked_fill(~any_valid, 0.0), dim=-1) * any_valid
    out = probs @ v  # (B, H, S, Dh)
    return out.transpose(1, 2).reshape(b, s, heads * dh)
