"""Probe cell ids, built and read in one place (docs/architecture.md, 'Probes and the probe
API'): ``family/name`` for a probe without params, ``family/name[param id]`` for one cell of
a parametrised probe (``tilelang/gemm_kernel[c,bf16,gpu]``), and ``…@env`` for the same cell
under one of several environments (``--env``). Standard library only.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

_CELL_RE = re.compile(r"^(?P<name>[^\[]*)\[(?P<param>[^\]]*)\]$")
_ENV_RE = re.compile(r"^(?P<base>.*[^@])@(?P<env>[^@/\[\]]+)$")


def cell_id(family: str, name: str, param: str | None = None) -> str:
    """The id of a probe (``param`` None) or of one of its cells."""
    return f"{family}/{name}" if param is None else f"{family}/{name}[{param}]"


def with_env(base: str, env: str | None) -> str:
    """``family/name[param]@env`` (the base id when ``env`` is None)."""
    return f"{base}@{env}" if env else base


def split_env(probe_id: str) -> tuple[str, str | None]:
    """``(base id, env)`` of an id; env None when it names none."""
    m = _ENV_RE.match(probe_id)
    return (m.group("base"), m.group("env")) if m else (probe_id, None)


@dataclass(frozen=True, slots=True)
class CellId:
    """A cell id read back: its family, its name and its param id (None: no params)."""

    family: str
    name: str
    param: str | None = None
    env: str | None = None

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
    """``tilelang/gemm_kernel[c,bf16,gpu]@old`` -> ``CellId("tilelang", "gemm_kernel",
    "c,bf16,gpu", "old")`` (an id without ``/`` is its own family and leaf, as
    :func:`family_of` and :func:`leaf_name` read it)."""
    base, env = split_env(probe_id)
    family, leaf = family_of(base), leaf_name(base)
    m = _CELL_RE.match(leaf)
    if m is None:
        return CellId(family, leaf, None, env)
    return CellId(family, m.group("name"), m.group("param"), env)


def family_of(probe_id: str) -> str:
    """The family part of a cell id (the whole id when it has no ``/``)."""
    return probe_id.split("/", 1)[0]


def leaf_name(probe_id: str) -> str:
    """The id without its family: ``gemm_kernel[c,bf16,gpu]``."""
    return probe_id.split("/", 1)[-1]


def matches_any(probe_id: str, patterns: Iterable[str]) -> bool:
    """True when ``probe_id`` equals a pattern, or matches it as a glob (``[`` literal)."""
    for pat in patterns:
        if probe_id == pat or probe_id.startswith(pat.rstrip("/") + "/") and "*" not in pat:
            return True
        if fnmatch.fnmatchcase(probe_id, _escape_brackets(pat)):
            return True
    return False


def _escape_brackets(pat: str) -> str:
    return re.sub(r"([\[\]])", r"[\1]", pat)
