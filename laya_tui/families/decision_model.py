"""The two-headed decision model on top of the tiny ModernBERT preset (aoti family).

Worker-side only: torch is imported at the top, so no UI-side module may import this file.

- decision head: one score per marker slot of each row (``marker_positions`` index tokens);
  softmax over the slots picks the row's decision.
- action head: an MLP over the masked-mean pooled state concatenated with a few extra
  confidence features (fp32 from the caller), giving one score per action.

``cast_features=False`` builds the deliberately broken variant users hit: in a bf16 copy the
fp32 confidence features promote the concatenation to fp32, and the bf16 head then fails
with ``mat1 and mat2 must have the same dtype, but got Float and BFloat16``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.export import Dim

from laya_tui.families.presets import MODERNBERT_CONFIG, SEED, tiny_modernbert, token_batch

NUM_CONFIDENCE = 3
NUM_ACTIONS = 4
HEADS = ("decision", "action")

#: Exported ranges: rows, tokens (= 16 * tokens16) and marker slots. The lower bounds are 2
#: because AOTInductor's runtime check refuses 0/1-specialised sizes (``>= 2``) anyway.
ROWS = (2, 64)
TOKENS16 = (2, 16)  # tokens 32..256 (the preset's max_position_embeddings)
MARKERS = (2, 8)
TOKEN_MULTIPLE = 16


@dataclass(frozen=True)
class Shape:
    """One input shape of the decision model."""

    rows: int
    tokens: int
    markers: int

    @property
    def name(self) -> str:
        """Stable label such as ``r4.t64.m3``."""
        return f"r{self.rows}.t{self.tokens}.m{self.markers}"


#: The export example, then shapes inside the ranges; the last ones differ from the example.
EXAMPLE = Shape(4, 64, 3)
SHAPES: tuple[Shape, ...] = (EXAMPLE, Shape(2, 32, 2), Shape(7, 160, 5), Shape(16, 256, 8))


class DecisionModel(nn.Module):
    """ModernBERT encoder + a per-row decision head + an action head with extra features."""

    def __init__(self, encoder: nn.Module, *, cast_features: bool = True) -> None:
        super().__init__()
        hidden = int(getattr(encoder, "config").hidden_size)  # noqa: B009 - a transformers model
        self.encoder = encoder
        self.marker_head = nn.Linear(hidden, 1)
        self.action_head = nn.Sequential(
            nn.Linear(hidden + NUM_CONFIDENCE, hidden), nn.GELU(), nn.Linear(hidden, NUM_ACTIONS)
        )
        self.cast_features = cast_features

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                marker_positions: torch.Tensor, confidence: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(decision_logits [rows, markers], action_logits [rows, actions])``."""
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        index = marker_positions.unsqueeze(-1).expand(-1, -1, states.shape[-1])
        markers = torch.gather(states, 1, index)
        decision = self.marker_head(markers).squeeze(-1)
        mask = attention_mask.unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1)
        features = confidence.to(pooled.dtype) if self.cast_features else confidence
        action = self.action_head(torch.cat([pooled, features], dim=-1))
        return decision, action


def build_decision_model(dtype: torch.dtype | None = None, *, cast_features: bool = True,
                         seed: int = SEED) -> DecisionModel:
    """The decision model in eval mode, seeded; ``dtype`` casts every weight (no autocast)."""
    encoder = tiny_modernbert(seed=seed)
    torch.manual_seed(seed + 1)
    model = DecisionModel(encoder, cast_features=cast_features).eval()
    return model.to(dtype) if dtype is not None else model


def decision_inputs(shape: Shape, *, seed: int = SEED) -> dict[str, torch.Tensor]:
    """Right-padded token rows (first row full), in-row marker positions, fp32 features."""
    gen = torch.Generator().manual_seed(seed + shape.rows * 1000 + shape.tokens)
    lengths = [shape.tokens] + [
        int(torch.randint(max(shape.markers, shape.tokens // 2), shape.tokens + 1, (1,),
                          generator=gen)) for _ in range(shape.rows - 1)
    ]
    batch = token_batch(lengths, pad_to=shape.tokens, vocab=MODERNBERT_CONFIG["vocab_size"],
                        seed=seed + shape.tokens)
    positions = torch.stack([
        torch.sort(torch.randperm(n, generator=gen)[: shape.markers]).values for n in lengths
    ])
    confidence = torch.rand((shape.rows, NUM_CONFIDENCE), generator=gen)
    return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"],
            "marker_positions": positions, "confidence": confidence}


def dynamic_shapes() -> dict[str, dict[int, Dim]]:
    """``torch.export`` dynamic dims: rows, ``16 * tokens16`` and marker slots."""
    rows = Dim("rows", min=ROWS[0], max=ROWS[1])
    tokens = TOKEN_MULTIPLE * Dim("tokens16", min=TOKENS16[0], max=TOKENS16[1])
    markers = Dim("markers", min=MARKERS[0], max=MARKERS[1])
    return {
        "input_ids": {0: rows, 1: tokens},
        "attention_mask": {0: rows, 1: tokens},
        "marker_positions": {0: rows, 1: markers},
        "confidence": {0: rows},
    }


#: Names of the dynamic dims per input, for readable shape-check messages.
DIM_NAMES: dict[str, dict[int, str]] = {
    "input_ids": {0: "rows", 1: "tokens"},
    "attention_mask": {0: "rows", 1: "tokens"},
    "marker_positions": {0: "rows", 1: "markers"},
    "confidence": {0: "rows", 1: "features"},
}
