"""Probe cell ids, built and read in one place (docs/architecture.md, 'Probes and the probe
API'): ``family/name`` for a probe without params, ``family/name[param id]`` for one cell of
a parametrised probe (``tilelang/gemm_kernel[c,bf16,gpu]``). Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CELL_RE = re.compile(r"^(?P<name>[^\[]*)\[(?P<param>[^\]]*)\]$")


def cell_id(family: str, name: str, param: str | None = None) -> str:
    """The id of a probe (``param`` None) or of one of its cells."""
    return f"{family}/{name}" if param is None else f"{family}/{name}[{param}]"


@dataclass(frozen=True, slots=True)
class CellId:
    """A cell id read back: its family, its name and its param id (None: no params)."""

    family: str
    name: str
    param: str | None = None

    @property
    def leaf(self) -> str:
        """The id without its family: ``gemm_kernel[c,bf16,gpu]``."""
        return self.name if self.param is None else f"{self.name}[{self.param}]"

    @property
    def parts(self) -> tuple[str, ...]:
        """The param id's comma-separated parts (``("c", "bf16", "gpu")``; () without)."""
        if not self.param:
            return ()
        return tuple(p.strip() for p in self.param.split(","))


def parse(probe_id: str) -> CellId:
    """``tilelang/gemm_kernel[c,bf16,gpu]`` -> ``CellId("tilelang", "gemm_kernel",
    "c,bf16,gpu")`` (an id without ``/`` is its own family and leaf, as
    :func:`family_of` and :func:`leaf_name` read it)."""
    family, leaf = family_of(probe_id), leaf_name(probe_id)
    m = _CELL_RE.match(leaf)
    if m is None:
        return CellId(family, leaf)
    return CellId(family, m.group("name"), m.group("param"))


def family_of(probe_id: str) -> str:
    """The family part of a cell id (the whole id when it has no ``/``)."""
    return probe_id.split("/", 1)[0]


def leaf_name(probe_id: str) -> str:
    """The id without its family: ``gemm_kernel[c,bf16,gpu]``."""
    return probe_id.split("/", 1)[-1]
