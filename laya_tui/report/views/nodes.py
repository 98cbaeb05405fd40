"""The cluster node a cell ran on (report/5 ``node``, ``--cluster``: docs/cluster.md), in one
line for the drill-down (dashboard and HTML page) and the headless summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The versions a node line names (the rest stay in the report).
SHOWN_VERSIONS = ("python", "torch", "tilelang", "mlx", "torch-rbln", "laya-tui")


def node_line(node: Any) -> str | None:
    """``gpu-box (c9d0bff2) · CPU 8, GPU 1 · python 3.11.7, torch 2.13.0``; None for a cell
    that ran locally (no ``node``)."""
    if not isinstance(node, Mapping) or not node.get("id"):
        return None
    parts = [f"{node.get('host') or '?'} ({str(node['id'])[:8]})"]
    res = node.get("resources")
    if isinstance(res, Mapping) and res:
        parts.append(", ".join(f"{k} {_num(v)}" for k, v in res.items()))
    versions = node.get("versions")
    if isinstance(versions, Mapping):
        named = [f"{k} {versions[k]}" for k in SHOWN_VERSIONS if versions.get(k)]
        if named:
            parts.append(", ".join(named))
    return " · ".join(parts)


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)
