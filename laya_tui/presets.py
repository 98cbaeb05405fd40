"""Tiny model presets built from transformers configs with seeded random weights.

No download ever: configs are written here and weights are random (a diagnostics probe
needs shapes and code paths, not trained numbers). Imported only inside workers: this
module imports torch and transformers inside its functions.
"""

from __future__ import annotations

import importlib
from typing import Any

SEED = 1234

#: Tiny ModernBERT: 3 layers, global attention every 3rd layer (0 global, 1-2 local).
MODERNBERT_CONFIG: dict[str, Any] = dict(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
    num_attention_heads=4, global_attn_every_n_layers=3, local_attention=16,
    max_position_embeddings=256, pad_token_id=0, bos_token_id=1, eos_token_id=2,
    cls_token_id=1, sep_token_id=2, global_rope_theta=160000.0, local_rope_theta=10000.0,
)

#: Tiny Llama causal LM (RMSNorm, rotate_half RoPE, GQA).
LLAMA_CONFIG: dict[str, Any] = dict(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
    pad_token_id=0, bos_token_id=1, eos_token_id=2,
)


def _quiet_transformers() -> None:
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
    except ImportError:
        pass


def tiny_modernbert(dtype: Any = None, *, seed: int = SEED) -> Any:
    """A ``ModernBertModel`` in eval mode with seeded random weights."""
    import torch
    from transformers import ModernBertConfig, ModernBertModel

    _quiet_transformers()
    torch.manual_seed(seed)
    config = ModernBertConfig(**MODERNBERT_CONFIG)
    config._attn_implementation = "sdpa"
    model = ModernBertModel(config).eval()
    return model.to(dtype) if dtype is not None else model


def tiny_llama(dtype: Any = None, *, seed: int = SEED) -> Any:
    """A ``LlamaForCausalLM`` in eval mode with seeded random weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    _quiet_transformers()
    torch.manual_seed(seed)
    config = LlamaConfig(**LLAMA_CONFIG)
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config).eval()
    return model.to(dtype) if dtype is not None else model


def token_batch(lengths: list[int], *, pad_to: int | None = None, vocab: int = 512,
                seed: int = SEED) -> dict[str, Any]:
    """Right-padded ``input_ids`` / ``attention_mask`` for rows of the given lengths."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    width = max(pad_to or 0, max(lengths) if lengths else 0)
    ids = torch.zeros((len(lengths), width), dtype=torch.long)
    mask = torch.zeros((len(lengths), width), dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(3, vocab, (n,), generator=gen)
        mask[i, :n] = 1
    return {"input_ids": ids, "attention_mask": mask}


def load_user_model(spec: str) -> tuple[Any, Any]:
    """``module:callable`` returning ``(model, inputs)`` (``--model``)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--model must look like module:callable, got {spec!r}")
    mod = importlib.import_module(module_name)
    fn = getattr(mod, attr, None)
    if fn is None:
        raise AttributeError(f"{module_name} has no attribute {attr!r}")
    out = fn()
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{spec} must return (model, inputs), got {type(out).__name__}")
    return out
