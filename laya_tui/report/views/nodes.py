"""The cluster node a cell ran on (report/5 ``node``, ``--cluster``: docs/cluster.md): one
line for the drill-down (dashboard and HTML page), and the nodes of a run side by side for
the dashboard's ``v`` screen."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from laya_tui.core.results import ResultLike

#: The versions a node line names (the rest stay in the report).
SHOWN_VERSIONS = ("python", "torch", "tilelang", "mlx", "torch-rbln", "laya-tui")


def node_line(node: object) -> str | None:
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


def _map(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _num(value: object) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def node_rows(results: Iterable[ResultLike]
              ) -> tuple[list[str], list[tuple[str, list[str], bool]]]:
    """The nodes a run's cells ran on, side by side: their names (``host (id8)``, in order
    of first use) and rows ``(what, value per node, differs)``: cells run there, resources,
    then every version any node reports (the ``v`` screen of a ``--cluster`` run)."""
    nodes: dict[str, Mapping[str, object]] = {}
    cells: dict[str, int] = {}
    for r in results:
        node = r.get("node")
        if isinstance(node, Mapping) and node.get("id"):
            nid = str(node["id"])
            nodes.setdefault(nid, node)
            cells[nid] = cells.get(nid, 0) + 1
    if not nodes:
        return [], []
    names = [f"{n.get('host') or '?'} ({nid[:8]})" for nid, n in nodes.items()]
    res = [_map(n.get("resources")) for n in nodes.values()]
    vers = [_map(n.get("versions")) for n in nodes.values()]
    rows: list[tuple[str, list[str], bool]] = [
        ("cells", [str(cells[nid]) for nid in nodes], False),
        ("resources", [", ".join(f"{k} {_num(v)}" for k, v in r.items()) for r in res],
         False)]
    keys = [k for k in SHOWN_VERSIONS if any(k in v for v in vers)]
    keys += sorted({k for v in vers for k in v} - set(keys))
    for key in keys:
        vals = [str(v.get(key)) if v.get(key) is not None else "-" for v in vers]
        rows.append((key, vals, len(set(vals)) > 1))
    return names, rows
