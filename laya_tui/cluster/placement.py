"""Which node runs a cell (docs/cluster.md, 'What a cell asks for').

A cell that asks for a resource goes to a node offering it; a CPU-only cell to a node
offering nothing special when there is one (the GPU and RBLN hosts stay free for the cells
that need them). Among the candidates, the node where the family already has a warm worker
wins, else the one with the fewest of the run's workers. With no candidate, the cell gets
the outcome a local run would give on such a machine: a soft need runs on a plain node
(a CUDA TileLang cell is built, not run), a hard one is ``skipped`` ("no node offers
rbln"), or ``crashed`` when the only nodes offering it left the cluster mid-run.
Nothing is queued: a node is chosen from what the cluster offers now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from laya_tui.cluster.needs import Need
from laya_tui.cluster.session import Node


@dataclass(frozen=True)
class Placed:
    """Run on ``node``, asking Ray for ``resource`` there (None: nothing but the node)."""

    node: Node
    resource: str | None


@dataclass(frozen=True)
class Refused:
    """No node for this cell: it ends with ``status`` and ``reason`` without running."""

    status: str
    reason: str


def place(need: Need, nodes: list[Node], lost: list[Node], warm: Mapping[str, int],
          current: str | None = None, unusable: tuple[Node, ...] = ()) -> Placed | Refused:
    """Choose a node for a cell with ``need`` among the live ``nodes``.

    ``lost`` are nodes that left the cluster during the run, ``warm`` the run's live workers
    per node id, ``current`` the node of the family's warm worker, ``unusable`` live nodes
    that cannot run laya-tui (their ``error`` says why).
    """
    if not nodes:
        return Refused("crashed", "node lost: no node of the cluster is left"
                       if lost else "the cluster has no node that can run laya-tui")
    resource = need.resource
    if resource is not None:
        offering = [n for n in nodes if n.offers(resource)]
        if offering:
            return Placed(_pick(offering, warm, current), resource)
        gone = [n for n in lost if n.offers(resource)]
        if gone:
            return Refused("crashed", f"node lost: {', '.join(n.name() for n in gone)} "
                           f"offered {resource} and left the cluster")
        if not need.soft:
            cannot = [n for n in unusable if n.offers(resource)]
            if cannot:
                return Refused("skipped", f"no usable node offers {resource}: {cannot[0].error}")
            return Refused("skipped", f"no node offers {resource}")
    plain = [n for n in nodes if n.plain]
    return Placed(_pick(plain or nodes, warm, current), None)


def _pick(candidates: list[Node], warm: Mapping[str, int], current: str | None) -> Node:
    for n in candidates:
        if n.id == current:
            return n
    return min(candidates, key=lambda n: (warm.get(n.id, 0), candidates.index(n)))
