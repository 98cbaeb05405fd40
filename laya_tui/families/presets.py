"""Tiny model presets built from transformers configs with seeded random weights.

No download ever: configs are written here and weights are random (a diagnostics probe
needs shapes and code paths, not trained numbers). Imported only inside workers: this
module imports torch and transformers inside its functions.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypedDict

if TYPE_CHECKING:
    import torch

SEED = 1234

class ModernBertSettings(TypedDict):
    """The ``ModernBertConfig`` keyword arguments of the preset."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    global_attn_every_n_layers: int
    local_attention: int
    max_position_embeddings: int
    pad_token_id: int
    bos_token_id: int
    eos_token_id: int
    cls_token_id: int
    sep_token_id: int
    global_rope_theta: float
    local_rope_theta: float


class LlamaSettings(TypedDict):
    """The ``LlamaConfig`` keyword arguments of the preset."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    pad_token_id: int
    bos_token_id: int
    eos_token_id: int


#: Tiny ModernBERT: 3 layers, global attention every 3rd layer (0 global, 1-2 local).
MODERNBERT_CONFIG = ModernBertSettings(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
    num_attention_heads=4, global_attn_every_n_layers=3, local_attention=16,
    max_position_embeddings=256, pad_token_id=0, bos_token_id=1, eos_token_id=2,
    cls_token_id=1, sep_token_id=2, global_rope_theta=160000.0, local_rope_theta=10000.0,
)

#: Tiny Llama causal LM (RMSNorm, rotate_half RoPE, GQA).
LLAMA_CONFIG = LlamaSettings(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
    pad_token_id=0, bos_token_id=1, eos_token_id=2,
)


def _quiet_transformers() -> None:
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]  # transformers: unannotated
    except ImportError:
        pass


def tiny_modernbert(dtype: torch.dtype | None = None, *, seed: int = SEED) -> torch.nn.Module:
    """A ``ModernBertModel`` in eval mode with seeded random weights."""
    import torch
    from transformers import ModernBertConfig, ModernBertModel

    _quiet_transformers()
    torch.manual_seed(seed)
    # global_attn_every_n_layers and the two rope thetas are the older transformers' names;
    # newer ones still take them but no longer list them in the typed signature
    make_config: Callable[..., ModernBertConfig] = ModernBertConfig
    config = make_config(**MODERNBERT_CONFIG)
    config._attn_implementation = "sdpa"
    model: torch.nn.Module = ModernBertModel(config).eval()  # type: ignore[no-untyped-call]  # transformers: unannotated
    return model.to(dtype) if dtype is not None else model


def tiny_llama(dtype: torch.dtype | None = None, *, seed: int = SEED) -> torch.nn.Module:
    """A ``LlamaForCausalLM`` in eval mode with seeded random weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    _quiet_transformers()
    torch.manual_seed(seed)
    config = LlamaConfig(**LLAMA_CONFIG)
    config._attn_implementation = "sdpa"
    model: torch.nn.Module = LlamaForCausalLM(config).eval()  # type: ignore[no-untyped-call]  # transformers: unannotated
    return model.to(dtype) if dtype is not None else model


def token_batch(lengths: list[int], *, pad_to: int | None = None, vocab: int = 512,
                seed: int = SEED) -> dict[str, torch.Tensor]:
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


class DecodeResult(NamedTuple):
    """What :func:`host_greedy_decode` leaves behind for a numerics check."""

    #: prompt + generated tokens ``(batch, width)``, int64, on the host
    ids: torch.Tensor
    #: the attention mask of ``ids``, on the host
    mask: torch.Tensor
    #: the last device forward's logits, over ``ids[:, :logits.shape[1]]`` (model dtype,
    #: on the device)
    logits: torch.Tensor


def host_greedy_decode(model: torch.nn.Module, batch: dict[str, torch.Tensor], *,
                       steps: int = 3, device: torch.device | str | None = None,
                       eos_token_id: int | None = None) -> DecodeResult:
    """Greedy decode with the token choice on the host, no KV cache.

    This deliberately mirrors a common hand-written sampling loop, so that an explain region
    around it has real host bounces and CPU ops to show: each step runs the forward on the
    device over the whole sequence, takes the last position's logits to the host
    (``.float().cpu()``: a device-to-host copy), picks the token there (softmax and argmax
    on CPU tensors), checks the EOS stop condition on the host, extends the attention mask
    on the host (``torch.ones`` + ``torch.cat``) and moves the next ids and the mask back
    with ``.to(device)`` (host-to-device copies). Rows that reached EOS get the pad token;
    the loop stops early once every row has. ``batch`` holds ``input_ids`` and
    ``attention_mask`` (rows of one length: a hand-written loop like this one does not
    shift positions for padded rows). ``steps`` is at least 1.
    """
    import torch

    if steps < 1:
        raise ValueError(f"host_greedy_decode: steps must be at least 1, got {steps}")

    dev = torch.device(device) if device is not None else next(model.parameters()).device
    config = getattr(model, "config", None)
    eos = eos_token_id if eos_token_id is not None else getattr(config, "eos_token_id", None)
    pad = getattr(config, "pad_token_id", None) or 0
    ids, mask = batch["input_ids"].cpu(), batch["attention_mask"].cpu()
    ids_dev, mask_dev = ids.to(dev), mask.to(dev)
    finished = torch.zeros(ids.shape[0], dtype=torch.bool)
    logits: torch.Tensor | None = None
    with torch.no_grad():
        for _ in range(steps):
            logits = model(input_ids=ids_dev, attention_mask=mask_dev).logits
            last = logits[:, -1, :].float().cpu()
            probs = torch.softmax(last, dim=-1)
            next_ids = torch.argmax(probs, dim=-1)
            if eos is not None:
                next_ids = torch.where(finished, torch.full_like(next_ids, pad), next_ids)
                finished |= next_ids == eos
            ids = torch.cat([ids, next_ids[:, None]], dim=1)
            mask = torch.cat([mask, torch.ones((mask.shape[0], 1), dtype=mask.dtype)], dim=1)
            ids_dev = torch.cat([ids_dev, next_ids[:, None].to(dev)], dim=1)
            mask_dev = mask.to(dev)
            if eos is not None and bool(finished.all()):
                break
    assert logits is not None  # steps >= 1: the loop ran
    return DecodeResult(ids, mask, logits)


def load_user_model(spec: str) -> tuple[object, object]:
    """``module:callable`` returning ``(model, inputs)`` (``--model``).

    Raises whatever importing the module or calling the factory raises; a caller turns it
    into status ``error`` (the model could not be examined).
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--model must look like module:callable, got {spec!r}")
    mod = importlib.import_module(module_name)
    fn = getattr(mod, attr, None)
    if fn is None:
        raise AttributeError(f"module {module_name} has no attribute {attr!r}")
    out = fn()
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"{spec} must return (model, inputs), got {type(out).__name__}")
    return out


def input_sets(inputs: object) -> list[object]:
    """A factory's ``inputs`` as a list of input sets.

    One set is a tensor (one positional argument), a tuple/list of positional arguments or a
    dict of keyword arguments. A ``list`` whose items are all tuples, lists or dicts is a
    list of sets (``[(x1,), (x2,)]``, ``[{"x": a}, {"x": b}]``); an empty list is a
    ValueError.
    """
    if isinstance(inputs, list):
        if not inputs:
            raise ValueError("the factory returned an empty list of input sets: return one "
                             "input set, or a list with at least one")
        if all(isinstance(x, (tuple, list, dict)) for x in inputs):
            return list(inputs)
    return [inputs]


def call_with(model: Callable[..., object], inputs: object) -> object:
    """``model(**inputs)``, ``model(*inputs)`` or ``model(inputs)``."""
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def move(inputs: object, device: torch.device | str, *, fp32: bool = False) -> object:
    """Every tensor of an input set on ``device`` (floating ones as fp32 with ``fp32``)."""
    import torch

    def one(x: object) -> object:
        if isinstance(x, torch.Tensor):
            x = x.to(device)
            return x.float() if fp32 and x.is_floating_point() else x
        if isinstance(x, dict):
            return {k: one(v) for k, v in x.items()}
        if isinstance(x, (tuple, list)):
            return type(x)(one(v) for v in x)
        return x

    return one(inputs)


def device_unavailable(device: str) -> str | None:
    """Why ``device`` cannot be used on this host (None when it can)."""
    import torch

    kind, _, index = device.partition(":")
    n = int(index) if index.isdigit() else 0
    if kind == "cpu":
        return None
    if kind == "cuda":
        if not torch.cuda.is_available():
            return f"--device {device}: no CUDA device on this host (torch {torch.__version__})"
        if n >= torch.cuda.device_count():
            return (f"--device {device}: this host has {torch.cuda.device_count()} CUDA "
                    f"device(s)")
        return None
    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            return f"--device {device}: no Apple MPS device on this host"
        return None
    if kind == "rbln":
        from laya_tui.families.rbln_status import runtime_reason, torch_rbln_installed

        if not torch_rbln_installed():
            return f"--device {device}: torch-rbln is not installed"
        reason = runtime_reason()
        if reason is not None:
            return f"--device {device}: the RBLN runtime is unavailable ({reason})"
        return None
    return f"--device {device}: unknown device (one of cpu, cuda, cuda:N, mps, rbln)"
