"""A small bf16 model written the way ports often are, for the H200 user-model run.

Two host syncs a porting engineer meets: a ``.item()`` read of a device value (a sync and
a graph break), and a Python ``if`` on a tensor (a data-dependent graph break that the
``graph_break`` counter misses). An fp32 RMSNorm section (upcast/downcast), and two input
sets of different batch sizes, so torch.compile recompiles on the second.
"""

from __future__ import annotations

import torch


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * x.to(dtype)


class Block(torch.nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = RMSNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.silu(self.up(self.norm(x))))


class PortModel(torch.nn.Module):
    def __init__(self, dim: int = 256, depth: int = 4, vocab: int = 1000) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList(Block(dim) for _ in range(depth))
        self.norm = RMSNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h)
        peak = h.abs().amax().item()  # host sync: a device value read on the host
        if h.mean() > 0:  # data-dependent branch
            h = h * (1.0 / max(peak, 1.0))
        return self.head(self.norm(h))


def build() -> tuple[torch.nn.Module, list[tuple[torch.Tensor]]]:
    torch.manual_seed(0)
    model = PortModel().to(torch.bfloat16).eval()
    gen = torch.Generator().manual_seed(0)
    sets = [(torch.randint(0, 1000, (2, 64), generator=gen),),
            (torch.randint(0, 1000, (4, 64), generator=gen),)]
    return model, sets
