"""Generated-kernel placement of compiled code, from Inductor's own provenance record.

While a region is open, Inductor's provenance tracking (``config.trace.provenance_tracking_level
= 1``) is on and a handler listens on torch's structured trace log (``torch.__trace``). For
every graph Inductor compiles or loads from its cache it emits the artifact
``inductor_provenance_tracking_node_mappings``, whose ``cppCodeToPost`` maps each kernel
of the output code (``cpp_fused_mul_0:2``, ``triton_poi_fused_add_0:1``,
``extern_kernels.addmm:1``, ``torch.ops.aten.sort.stable:4``, ``torch.ops.ns.op.default:3``)
to the post-grad FX nodes it computes. A post-grad node is *outside* generated kernels when
any extern kernel, fallback kernel or custom op computes it, else *inside*. A kernel's record lists
its IR node's origins, which can include the node feeding it (``sort``'s fallback lists the
``add`` before it; a custom op's input kernel lists the custom op): an outside kernel claims
only the nodes whose op is the kernel's own (``torch.ops.aten.sort.stable`` -> the node that
calls ``aten.sort``, read from the ``inductor_post_grad_graph`` artifact, or from the node's
name on a cache hit, where Inductor does not log the graph), all its nodes when none match.
Nodes no kernel computes (views folded into ``reinterpret_tensor``, ``getitem``) are not ops
and not counted.
Counts are per compiled graph (static), not per call. Worker side: imports torch lazily.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field

from laya_tui.families.explain.compiled_calls import CUSTOM, EXTERN, FALLBACK, TORCH_NAMESPACES
from laya_tui.families.explain.records import Placement, RblnDump

UNIT_KERNELS = "generated-kernel placement"
ARTIFACT = "inductor_provenance_tracking_node_mappings"
POST_GRAD = "inductor_post_grad_graph"
_NODE_LINE = re.compile(r"^\s+(\w+)(?:: [^=]*)? = torch\.ops\.\w+\.(\w+)\.\w+\(", re.M)
NO_PLACEMENT_CPU = "eager on the CPU: no device or compiler placement to report"
NOT_MEASURED_DEVICE = "eager on {device}: device placement not measured here"
NOT_RECORDED = ("no graph compiled in this region (its compiled code, if any, comes from an "
                "earlier compile): placement is on the region that compiled it")
UNIT_DEVICE = "device placement"
NO_RBLN_DISPATCH = "no op dispatched to the RBLN device in this region"
GENERATED = "generated"


def kernel_kind(name: str) -> str:
    """GENERATED, EXTERN, FALLBACK or CUSTOM for a provenance kernel key (``name:handle``)."""
    base = name.rsplit(":", 1)[0]
    if base.startswith("extern_kernels."):
        return EXTERN
    for prefix in ("torch.ops.", "aten.", "prims."):
        if base.startswith(prefix):
            ns = "aten" if prefix == "aten." else "prims" if prefix == "prims." else \
                base[len(prefix):].split(".", 1)[0]
            return FALLBACK if ns in TORCH_NAMESPACES else CUSTOM
    return GENERATED


@dataclass
class GraphPlacement:
    """One compiled graph: post-grad nodes inside generated kernels, and those outside."""

    inside: set[str] = field(default_factory=set)
    outside: dict[str, str] = field(default_factory=dict)  # node -> EXTERN|FALLBACK|CUSTOM


def kernel_op(name: str) -> str:
    """The op a kernel key calls: ``extern_kernels.addmm:1`` -> addmm,
    ``torch.ops.aten.sort.stable:4`` -> sort."""
    parts = name.rsplit(":", 1)[0].split(".")
    if parts[0] == "extern_kernels":
        return parts[-1]
    if parts[0] == "torch" and len(parts) >= 4:
        return parts[3]
    return parts[1] if len(parts) >= 2 else parts[0]


def post_grad_targets(graph_text: str) -> dict[str, str]:
    """Node name -> op name (``sort``) from Inductor's logged post-grad graph."""
    return {m.group(1): m.group(2) for m in _NODE_LINE.finditer(graph_text)}


def _node_op(node: str, targets: dict[str, str]) -> str:
    return targets.get(node) or re.sub(r"_\d+$", "", node)


def graph_placement(code_to_post: dict[str, list[str]],
                    targets: dict[str, str] | None = None) -> GraphPlacement:
    """Classify the post-grad nodes of one ``cppCodeToPost`` mapping (see the module doc)."""
    g = GraphPlacement()
    targets = targets or {}
    for kernel, nodes in code_to_post.items():
        kind = kernel_kind(kernel)
        if kind == GENERATED:
            g.inside.update(nodes)
            continue
        op = kernel_op(kernel)
        own = [n for n in nodes if _node_op(n, targets) == op] or nodes
        for node in own:
            g.outside.setdefault(node, kind)
    g.inside -= set(g.outside)
    return g


def placement_of(graphs: list[GraphPlacement]) -> Placement:
    """The report field: ``{on_device, fallback, share, unit, graphs, outside}``.

    ``on_device`` counts ops in generated kernels, ``fallback`` ops outside them (extern,
    fallback kernels and custom ops, split in ``outside``); ``share`` is ``fallback`` over
    all counted ops (0..1).
    """
    inside = sum(len(g.inside) for g in graphs)
    by_kind = {EXTERN: 0, FALLBACK: 0, CUSTOM: 0}
    for g in graphs:
        for kind in g.outside.values():
            by_kind[kind] += 1
    outside = sum(by_kind.values())
    total = inside + outside
    return {"on_device": inside, "fallback": outside,
            "share": round(outside / total, 6) if total else None,
            "unit": UNIT_KERNELS, "graphs": len(graphs), "outside": by_kind}


def rbln_placement(dump: RblnDump) -> Placement:
    """Device placement from torch.rbln.explain's own counts (``dump()["dispatch"]``).

    ``total`` counts the op calls the RBLN dispatch shim saw in the region (warm hits,
    cold compiles and CPU fallbacks), ``cpu_fallback`` those that ran on the CPU: the
    rest ran on the device. Counts are per call, not per distinct op.
    """
    disp = dump.get("dispatch") or {}
    total, fallback = disp.get("total"), disp.get("cpu_fallback")
    if not isinstance(total, int) or not isinstance(fallback, int) or total <= 0:
        return no_placement(NO_RBLN_DISPATCH)
    return {"on_device": total - fallback, "fallback": fallback,
            "share": round(fallback / total, 6), "unit": UNIT_DEVICE,
            "counted": "op calls (torch.rbln.explain dispatch.total, cpu_fallback)"}


def no_placement(note: str) -> Placement:
    """A placement field that says why nothing was counted."""
    return {"on_device": None, "fallback": None, "share": None, "unit": None, "note": note}


class _Handler(logging.Handler):
    def __init__(self, sink: list[GraphPlacement]) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink
        self.targets: dict[str, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", None)
        if not isinstance(meta, dict):
            return
        payload = getattr(record, "payload", None)
        if POST_GRAD in meta and isinstance(payload, str):
            self.targets = post_grad_targets(payload)
            return
        art = meta.get("artifact")
        if not isinstance(art, dict) or art.get("name") != ARTIFACT:
            return
        try:
            data = json.loads(payload) if isinstance(payload, str) else None
        except ValueError:
            return
        if isinstance(data, dict) and isinstance(data.get("cppCodeToPost"), dict):
            self.sink.append(graph_placement(data["cppCodeToPost"], self.targets))
        self.targets = {}


class PlacementWatch:
    """``start()``/``stop()`` around a region; ``graphs`` holds one entry per compiled graph."""

    def __init__(self) -> None:
        self.graphs: list[GraphPlacement] = []
        self._handler = _Handler(self.graphs)
        self._old_level: int | None = None
        self._log = logging.getLogger("torch.__trace")

    def start(self) -> None:
        import torch._inductor.config as inductor_config

        self._old_level = inductor_config.trace.provenance_tracking_level
        if not self._old_level:
            inductor_config.trace.provenance_tracking_level = 1
        self._log.addHandler(self._handler)

    def stop(self) -> None:
        self._log.removeHandler(self._handler)
        if self._old_level is not None:
            import torch._inductor.config as inductor_config

            inductor_config.trace.provenance_tracking_level = self._old_level
            self._old_level = None

    def placement(self) -> Placement | None:
        return placement_of(self.graphs) if self.graphs else None
