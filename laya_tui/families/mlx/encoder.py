"""The tiny ModernBERT-style encoder in MLX, loaded from the torch model's state dict.

Worker-side only: imported by the ``mlx`` probe family, its tests and its benchmark, never
by the CLI, runner, report or app. ``mlx`` and ``numpy`` are imported at top level; torch
is only touched through the tensors handed in.

The math follows ``transformers`` ``ModernBertModel`` (eval mode): token embedding +
LayerNorm; per layer pre-norm attention (layer 0 has no ``attn_norm``) with fused ``Wqkv``,
rotate-half RoPE (``mx.fast.rope``, ``traditional=False``; theta per layer type),
``mx.fast.scaled_dot_product_attention`` with a boolean mask (key padding, and for local
layers ``|q - k| <= local_attention // 2``), then a pre-norm gated GELU MLP
(``Wi`` output split in halves ``input, gate``; ``Wo(gelu(input) * gate)``); a final norm.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict

import mlx.core as mx
import numpy as np

if TYPE_CHECKING:
    import torch

#: Max |diff| on valid positions vs the torch fp32 reference, by MLX compute dtype.
#: fp32: the contract (measured ~1e-6). fp16: the final LayerNorm outputs reach ~2.7, where
#: one fp16 ulp is 2**-9 ~ 2e-3; 1e-2 is ~5 ulps there, over the 4.3e-3 measured on the
#: presets (mixed lengths up to 200 tokens) and 5.9e-3 with perturbed weights.
LIMITS: dict[str, float] = {"fp32": 1e-4, "fp16": 1e-2}

DTYPES: dict[str, mx.Dtype] = {"fp32": mx.float32, "fp16": mx.float16, "bf16": mx.bfloat16}

INSTALL_HINT = "pip install 'mlx[cpu]' on Linux, 'mlx' on macOS (or 'laya-tui[mlx]')"


#: ``capture(name, value) -> value``: sees a named step of :meth:`MlxEncoder.forward`.
Capture = Callable[[str, mx.array], mx.array]


class EncoderConfig(Protocol):
    """What :meth:`EncoderSpec.from_config` reads of a ``ModernBertConfig`` by name (the rest,
    optional, by ``getattr`` with the config's defaults)."""

    @property
    def vocab_size(self) -> int: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def intermediate_size(self) -> int: ...
    @property
    def num_hidden_layers(self) -> int: ...
    @property
    def num_attention_heads(self) -> int: ...
    @property
    def layer_types(self) -> Sequence[str] | None: ...
    @property
    def local_attention(self) -> int: ...
    @property
    def norm_eps(self) -> float: ...


class TokenArray(Protocol):
    """Right-padded ``(B, L)`` token ids or mask: a torch tensor or a numpy array."""

    @property
    def shape(self) -> Sequence[int]: ...


def _ignore(_name: str, value: mx.array) -> mx.array:
    return value


class WeightMismatch(ValueError):
    """The state dict does not match the encoder's expected keys and shapes."""


@dataclass(frozen=True)
class EncoderSpec:
    """The hyper-parameters the MLX forward needs, read from a ``ModernBertConfig``."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    layer_types: tuple[str, ...]
    window: int  # half window: a local query sees keys with |q - k| <= window
    global_theta: float
    local_theta: float
    norm_eps: float
    norm_bias: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @classmethod
    def from_config(cls, config: EncoderConfig) -> EncoderSpec:
        """Read a ``transformers`` ``ModernBertConfig`` (or anything with its attributes)."""
        act = getattr(config, "hidden_activation", "gelu")
        if act != "gelu":
            raise ValueError(f"unsupported hidden_activation {act!r}: the MLX encoder has 'gelu'")
        rope = getattr(config, "rope_parameters", None) or {}
        for kind in ("full_attention", "sliding_attention"):
            rtype = (rope.get(kind) or {}).get("rope_type", "default")
            if rtype != "default":
                raise ValueError(f"unsupported rope_type {rtype!r} for {kind}")
        if not config.layer_types:
            raise ValueError("the config names no layer_types (full or sliding attention)")
        return cls(
            vocab_size=int(config.vocab_size),
            hidden_size=int(config.hidden_size),
            intermediate_size=int(config.intermediate_size),
            num_layers=int(config.num_hidden_layers),
            num_heads=int(config.num_attention_heads),
            layer_types=tuple(config.layer_types),
            window=int(config.local_attention) // 2,
            global_theta=float(rope.get("full_attention", {}).get(
                "rope_theta", getattr(config, "global_rope_theta", 160000.0))),
            local_theta=float(rope.get("sliding_attention", {}).get(
                "rope_theta", getattr(config, "local_rope_theta", 10000.0))),
            norm_eps=float(config.norm_eps),
            norm_bias=bool(getattr(config, "norm_bias", False)),
            attention_bias=bool(getattr(config, "attention_bias", False)),
            mlp_bias=bool(getattr(config, "mlp_bias", False)),
        )


def expected_shapes(spec: EncoderSpec) -> dict[str, tuple[int, ...]]:
    """Every state-dict key the encoder needs, in ``ModernBertModel.state_dict()`` order."""
    d, i, v = spec.hidden_size, spec.intermediate_size, spec.vocab_size
    out: dict[str, tuple[int, ...]] = {"embeddings.tok_embeddings.weight": (v, d)}

    def norm(prefix: str) -> None:
        out[f"{prefix}.weight"] = (d,)
        if spec.norm_bias:
            out[f"{prefix}.bias"] = (d,)

    def linear(prefix: str, n_out: int, n_in: int, bias: bool) -> None:
        out[f"{prefix}.weight"] = (n_out, n_in)
        if bias:
            out[f"{prefix}.bias"] = (n_out,)

    norm("embeddings.norm")
    for n in range(spec.num_layers):
        p = f"layers.{n}"
        if n != 0:
            norm(f"{p}.attn_norm")
        linear(f"{p}.attn.Wqkv", 3 * d, d, spec.attention_bias)
        linear(f"{p}.attn.Wo", d, d, spec.attention_bias)
        norm(f"{p}.mlp_norm")
        linear(f"{p}.mlp.Wi", 2 * i, d, spec.mlp_bias)
        linear(f"{p}.mlp.Wo", d, i, spec.mlp_bias)
    norm("final_norm")
    return out


def load_weights(state_dict: Mapping[str, torch.Tensor], spec: EncoderSpec,
                 dtype: str = "fp32") -> dict[str, mx.array]:
    """Copy a torch ``state_dict`` into MLX arrays of ``dtype``.

    Raises :class:`WeightMismatch` naming the first bad key: a missing key, an unexpected
    one, or a shape that differs from the spec.
    """
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    want = expected_shapes(spec)
    for key, shape in want.items():
        if key not in state_dict:
            raise WeightMismatch(f"missing key {key!r} (expected shape {shape})")
        got = tuple(state_dict[key].shape)
        if got != shape:
            raise WeightMismatch(f"shape mismatch for {key!r}: got {got}, expected {shape}")
    extra = [k for k in state_dict if k not in want]
    if extra:
        raise WeightMismatch(f"unexpected key {extra[0]!r} ({len(extra)} unexpected in all)")
    target = DTYPES[dtype]
    return {k: mx.array(_to_numpy32(state_dict[k])).astype(target) for k in want}


def _to_numpy32(t: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(t, np.ndarray):
        return np.asarray(t, dtype=np.float32)
    arr: np.ndarray = t.detach().to("cpu").float().numpy()
    return arr


class MlxEncoder:
    """The encoder forward in MLX: ``forward`` (uncompiled) and ``compiled`` side by side.

    ``traces`` lists the input shape of every trace of the compiled function: the traced
    body appends to it, and it only runs when ``mx.compile`` (re)traces.
    """

    def __init__(self, weights: dict[str, mx.array], spec: EncoderSpec, dtype: str = "fp32"):
        self.w = weights
        self.spec = spec
        self.dtype = dtype
        self.traces: list[tuple[int, ...]] = []
        self.compiled: Callable[[mx.array, mx.array], mx.array] = mx.compile(self._traced)

    @classmethod
    def from_torch(cls, model: torch.nn.Module, dtype: str = "fp32") -> MlxEncoder:
        """Build from a ``ModernBertModel`` (its config and state dict)."""
        config: EncoderConfig = getattr(model, "config")  # noqa: B009 - a transformers model
        spec = EncoderSpec.from_config(config)
        return cls(load_weights(model.state_dict(), spec, dtype), spec, dtype)

    def _traced(self, ids: mx.array, valid: mx.array) -> mx.array:
        self.traces.append(tuple(ids.shape))
        return self.forward(ids, valid)

    # -- the math ------------------------------------------------------------------------
    def _norm(self, x: mx.array, prefix: str) -> mx.array:
        return mx.fast.layer_norm(x, self.w[f"{prefix}.weight"], self.w.get(f"{prefix}.bias"),
                                  self.spec.norm_eps)

    def _linear(self, x: mx.array, prefix: str) -> mx.array:
        y = x @ self.w[f"{prefix}.weight"].T
        bias = self.w.get(f"{prefix}.bias")
        return y + bias if bias is not None else y

    def masks(self, valid: mx.array) -> dict[str, mx.array]:
        """Boolean ``(B, 1, L, L)`` masks per layer type (True = attend).

        Keys must be valid (unpadded); local layers add ``|q - k| <= window``. The diagonal
        is always allowed so a padded query row is never fully masked (a NaN there would
        reach valid rows through ``0 * NaN`` in the value product).
        """
        length = valid.shape[1]
        pos = mx.arange(length)
        dist = mx.abs(pos[:, None] - pos[None, :])
        diag = dist == 0
        keys = valid[:, None, None, :]
        return {
            "full_attention": keys | diag,
            "sliding_attention": (keys & (dist <= self.spec.window)) | diag,
        }

    def _attention(self, x: mx.array, layer: int, mask: mx.array) -> mx.array:
        s = self.spec
        b, length, _ = x.shape
        qkv = self._linear(x, f"layers.{layer}.attn.Wqkv")
        qkv = qkv.reshape(b, length, 3, s.num_heads, s.head_dim).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        theta = s.global_theta if s.layer_types[layer] == "full_attention" else s.local_theta
        q = mx.fast.rope(q, s.head_dim, traditional=False, base=theta, scale=1.0, offset=0)
        k = mx.fast.rope(k, s.head_dim, traditional=False, base=theta, scale=1.0, offset=0)
        o = mx.fast.scaled_dot_product_attention(q, k, v, scale=s.head_dim ** -0.5, mask=mask)
        o = o.transpose(0, 2, 1, 3).reshape(b, length, s.hidden_size)
        return self._linear(o, f"layers.{layer}.attn.Wo")

    def _mlp(self, x: mx.array, layer: int) -> mx.array:
        h = self._linear(x, f"layers.{layer}.mlp.Wi")
        inp, gate = mx.split(h, 2, axis=-1)
        gelu = inp * (1.0 + mx.erf(inp * (2.0 ** -0.5))) * 0.5
        return self._linear(gelu * gate, f"layers.{layer}.mlp.Wo")

    def embed(self, ids: mx.array) -> mx.array:
        """The embeddings: token embedding + LayerNorm (``embeddings``)."""
        return self._norm(self.w["embeddings.tok_embeddings.weight"][ids], "embeddings.norm")

    def layer(self, x: mx.array, n: int, masks: dict[str, mx.array],
              capture: Capture | None = None) -> mx.array:
        """Encoder layer ``n`` (``layers.n``): pre-norm attention, then the pre-norm MLP."""
        keep = capture or _ignore
        h = x if n == 0 else keep(f"layers.{n}.attn_norm",
                                  self._norm(x, f"layers.{n}.attn_norm"))
        x = x + keep(f"layers.{n}.attn",
                     self._attention(h, n, masks[self.spec.layer_types[n]]))
        h = keep(f"layers.{n}.mlp_norm", self._norm(x, f"layers.{n}.mlp_norm"))
        return x + keep(f"layers.{n}.mlp", self._mlp(h, n))

    def forward(self, ids: mx.array, valid: mx.array,
                capture: Capture | None = None) -> mx.array:
        """``last_hidden_state`` ``(B, L, hidden)`` for int ``ids`` and boolean ``valid``.

        ``capture(name, value)`` (uncompiled runs only) sees each named step's output as it
        is computed, named as ``ModernBertModel``'s modules (``embeddings``,
        ``layers.N.attn_norm``, ``layers.N.attn``, ``layers.N.mlp_norm``, ``layers.N.mlp``,
        ``layers.N``, ``final_norm``), and returns the value the forward goes on with."""
        keep = capture or _ignore
        x = keep("embeddings", self.embed(ids))
        masks = self.masks(valid)
        for n in range(self.spec.num_layers):
            x = keep(f"layers.{n}", self.layer(x, n, masks, capture))
        return keep("final_norm", self._norm(x, "final_norm"))


# -- inputs ----------------------------------------------------------------------------
class BatchWaste(TypedDict):
    """What a batching choice cost (a padding signal's ``detail``)."""

    padding_waste: float
    padded_tokens: int
    total_tokens: int
    bucket: int | None
    unique_inputs: int
    rows: int
    shape: list[int]


@dataclass(frozen=True)
class Batch:
    """MLX inputs plus what batching cost: real lengths, padded width, padding waste."""

    ids: mx.array
    valid: mx.array
    lengths: tuple[int, ...]
    width: int
    bucket: int | None

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.lengths), self.width)

    @property
    def total_tokens(self) -> int:
        return len(self.lengths) * self.width

    @property
    def padded_tokens(self) -> int:
        return self.total_tokens - sum(self.lengths)

    @property
    def padding_waste(self) -> float:
        """Padded tokens / total tokens (0.0 for an empty batch)."""
        return self.padded_tokens / self.total_tokens if self.total_tokens else 0.0

    @property
    def unique_inputs(self) -> int:
        """Distinct rows (valid token sequences), so duplicates cannot flatter a result."""
        ids = np.array(self.ids)
        return len({tuple(ids[i, :n].tolist()) for i, n in enumerate(self.lengths)})

    def waste_detail(self) -> BatchWaste:
        """What this batching choice cost, for a signal's ``detail``."""
        return {"padding_waste": round(self.padding_waste, 6), "padded_tokens": self.padded_tokens,
                "total_tokens": self.total_tokens, "bucket": self.bucket,
                "unique_inputs": self.unique_inputs, "rows": len(self.lengths),
                "shape": list(self.shape)}


def bucket_width(length: int, bucket: int | None) -> int:
    """``length`` rounded up to a multiple of ``bucket`` (unchanged when ``bucket`` is None)."""
    if not bucket:
        return length
    if bucket < 0:
        raise ValueError(f"bucket must be a positive length multiple, got {bucket}")
    return -(-length // bucket) * bucket


def _host_array(x: TokenArray) -> np.ndarray:
    to_numpy = getattr(x, "numpy", None)  # a torch tensor (on the host)
    return np.asarray(to_numpy() if callable(to_numpy) else x)


def prepare(input_ids: TokenArray, attention_mask: TokenArray, *, bucket: int | None = None
            ) -> Batch:
    """Torch (or numpy) right-padded ``input_ids``/``attention_mask`` -> MLX inputs.

    With ``bucket`` the width is padded up to a multiple of it (pad id 0, mask False).
    """
    ids = _host_array(input_ids)
    mask = _host_array(attention_mask).astype(bool)
    if ids.ndim != 2 or ids.shape != mask.shape:
        raise ValueError(f"input_ids {ids.shape} and attention_mask {mask.shape} must be (B, L)")
    width = bucket_width(ids.shape[1], bucket)
    if width != ids.shape[1]:
        pad = ((0, 0), (0, width - ids.shape[1]))
        ids, mask = np.pad(ids, pad), np.pad(mask, pad)
    lengths = tuple(int(n) for n in mask.sum(axis=1))
    return Batch(ids=mx.array(ids.astype(np.int32)), valid=mx.array(mask), lengths=lengths,
                 width=width, bucket=bucket)


def to_torch(out: mx.array, width: int | None = None) -> torch.Tensor:
    """An evaluated MLX output as a torch tensor, cut back to ``width`` positions."""
    import torch

    arr = np.array(out.astype(mx.float32) if out.dtype == mx.bfloat16 else out)
    if width is not None:
        arr = arr[:, :width]
    return torch.from_numpy(np.ascontiguousarray(arr))


# -- the CPU kernel JIT ------------------------------------------------------------------
def kernel_cache_dir() -> Path:
    """Where MLX's CPU backend keeps fused kernels it builds with the host C++ compiler.

    A compiled graph's fused elementwise kernels are written as C++ and built once per
    kernel shape class (contiguous, strided by rank); the shared libraries outlive the
    process, so a "cold" compile in a new process may find them already built.
    """
    version: str = getattr(mx, "__version__")  # noqa: B009 - mlx.core's stub has no __version__
    return Path(tempfile.gettempdir()) / "mlx" / version / "cpu"


def kernel_count() -> int:
    """Number of JIT-built kernel libraries in :func:`kernel_cache_dir` (0 if none)."""
    d = kernel_cache_dir()
    return sum(1 for _ in d.glob("lib*.so")) if d.is_dir() else 0


def blas_library() -> str | None:
    """The BLAS library MLX's CPU backend links, as mapped in this process (Linux only).

    The ``mlx[cpu]`` Linux wheel bundles the reference (netlib) BLAS under ``mlx_cpu.libs``,
    which bounds what its matmuls can do; name it next to every latency figure. ``None``
    where ``/proc/self/maps`` is absent (macOS: Accelerate) or no MLX BLAS is mapped.
    """
    maps = Path("/proc/self/maps")
    if not maps.is_file():
        return None
    for line in maps.read_text().splitlines():
        path = Path(line.split()[-1]) if len(line.split()) >= 6 else None
        if path and "blas" in path.name.lower() and path.parent.name.startswith("mlx"):
            return str(path)
    return None


# -- timing ----------------------------------------------------------------------------
PHASES: tuple[str, ...] = ("prepare", "graph", "forward", "convert")


@dataclass
class PhaseTimes:
    """One run split into phases; ``total`` is measured per run, never summed from medians."""

    prepare: float
    graph: float
    forward: float
    convert: float

    @property
    def total(self) -> float:
        return self.prepare + self.graph + self.forward + self.convert


def timed_forward(encoder: MlxEncoder, input_ids: TokenArray, attention_mask: TokenArray, *,
                  compiled: bool, bucket: int | None = None
                  ) -> tuple[torch.Tensor, PhaseTimes, Batch]:
    """One forward split into prepare / graph build / evaluated forward / output conversion.

    Returns the torch output (cut back to the input width), the phase times and the batch.
    """
    clock = time.perf_counter
    t0 = clock()
    batch = prepare(input_ids, attention_mask, bucket=bucket)
    mx.eval(batch.ids, batch.valid)
    t1 = clock()
    fn = encoder.compiled if compiled else encoder.forward
    out = fn(batch.ids, batch.valid)
    t2 = clock()
    mx.eval(out)
    mx.synchronize()
    t3 = clock()
    result = to_torch(out, width=input_ids.shape[1])
    t4 = clock()
    return result, PhaseTimes(t1 - t0, t2 - t1, t3 - t2, t4 - t3), batch


@dataclass
class PhaseStats:
    """Medians per phase over ``runs`` runs, plus the median of per-run totals."""

    runs: int
    medians: dict[str, float] = field(default_factory=dict)
    total: float = 0.0


def summarize(times: list[PhaseTimes]) -> PhaseStats:
    """Medians of each phase and of the per-run totals (never a sum of medians)."""
    if not times:
        raise ValueError("no runs to summarize")
    medians = {p: statistics.median(getattr(t, p) for t in times) for p in PHASES}
    return PhaseStats(runs=len(times), medians=medians,
                      total=statistics.median(t.total for t in times))
