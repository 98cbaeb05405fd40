"""What discovery found, narrowed to what this run selects: every cell once per ``--env``
environment, then ``--only`` (an id, or an id without its ``@env``), then ``--shard K/N``.
The runner's ``discover`` asks a worker for the cells and hands its reply here.
Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from laya_tui.core.cellid import matches_any
from laya_tui.core.envs import base_id, expand
from laya_tui.core.protocol import DiscoveredEvent
from laya_tui.core.report_types import CellSpec, EnvInfoDict, FileErrorDict, ShardDict
from laya_tui.core.settings import RunOptions

__all__ = ["Discovery", "only_error", "select_discovered", "shard_discovery",
           "unmatched_patterns"]


@dataclass
class Discovery:
    """What discovery found: probe cells and per-file errors."""

    probes: list[CellSpec]
    errors: list[FileErrorDict]
    shard: ShardDict | None = None  # the report's "shard" object under --shard K/N
    envs: dict[str, EnvInfoDict] | None = None  # the report's "envs" object under --env
    #: ``--only`` patterns matching no discovered cell (checked before ``--shard`` splits)
    unmatched_only: tuple[str, ...] = ()
    discovered: int = 0  # cells discovered before --only and --shard narrowed them


def unmatched_patterns(probes: list[CellSpec], only: tuple[str, ...]) -> tuple[str, ...]:
    """The ``--only`` patterns that select none of ``probes`` (by id, or by the id without
    its ``@env`` under ``--env``), in the order given."""
    ids = [p["id"] for p in probes] + [base_id(p) for p in probes if p.get("env")]
    return tuple(pat for pat in dict.fromkeys(only)
                 if not any(matches_any(i, (pat,)) for i in ids))


def only_error(unmatched: tuple[str, ...], discovered: int) -> str:
    """The one line for ``--only`` patterns that match nothing (a typo, a renamed cell)."""
    pats = ", ".join(repr(p) for p in unmatched)
    verb = "matches" if len(unmatched) == 1 else "each match"
    return (f"--only {pats} {verb} no probe id ({discovered} discovered; "
            "laya-tui --list prints them)")


def select_discovered(event: DiscoveredEvent, config: RunOptions,
                      shard: Callable[[list[CellSpec], list[FileErrorDict]], Discovery]
                      ) -> Discovery:
    """The ``discovered`` reply, narrowed by ``--only`` and ``--shard`` (``shard`` splits
    the selection when ``config.shard`` is set: the runner's, which knows its cache)."""
    probes = event.get("probes", [])
    envs = None
    if config.envs:  # every cell once per environment, ids ``...@env``
        probes = expand(probes, config.envs)
        envs = {e.name: e.info() for e in config.envs}
    unmatched: tuple[str, ...] = ()
    discovered = len(probes)
    if config.only:
        only = config.only
        unmatched = unmatched_patterns(probes, only)
        probes = [p for p in probes if matches_any(p["id"], only)
                  or (p.get("env") and matches_any(base_id(p), only))]
    if config.shard:
        disc = shard(probes, event.get("errors", []))
    else:
        disc = Discovery(probes, event.get("errors", []))
    disc.envs = envs
    disc.unmatched_only, disc.discovered = unmatched, discovered
    return disc


def shard_discovery(probes: list[CellSpec], errors: list[FileErrorDict], config: RunOptions,
                    cache_root: Callable[[], str | os.PathLike[str]]) -> Discovery:
    """``--shard K/N``: keep part K of the selection (see :mod:`laya_tui.core.shard`),
    balanced by ``--durations``, else the cache's recorded durations (``cache_root`` is
    asked only then), else by counts."""
    from laya_tui.core.shard import read_cache_durations, select_shard

    assert config.shard is not None
    durations: Mapping[str, float]
    if config.durations is not None:
        durations, source, path = config.durations, "report", config.durations_path
    elif config.use_cache:
        durations, source, path = read_cache_durations(cache_root()), "cache", None
    else:
        durations, source, path = {}, "counts", None
    chosen, info = select_shard(probes, config.shard, durations, source, path)
    return Discovery(chosen, errors, shard=info)
