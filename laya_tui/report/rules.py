"""The finding kinds of ``--sarif`` and ``--annotations``: one rule per kind, with a stable
id, a short description, the help text (the fix) and a help URI where one exists.

A signal is a *finding* when it states a cost or a failure (:func:`rule_for_signal`): a
fallback, a graph break, a recompile, a host bounce or a cast that occurred, a failing
lowering cell or tolerance check. Facts (``environment``, ``timing``, ``artifact``, ``log``,
a frame's first ``compile``) are not findings. Probe states that are not a pass (could not
be examined, crashed, timed out, raised) are findings of their own (:func:`probe_rule`).
Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from laya_tui.core.results import SignalLike, failing, occurrences

#: Dynamo's graph-break pages; the form torch's ``get_gbid_documentation_link`` prints.
GB_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/"


@dataclass(frozen=True)
class Rule:
    """One finding kind (a SARIF ``reportingDescriptor``)."""

    id: str
    name: str
    short: str
    full: str
    help: str
    level: str = "warning"  # the level of a finding no gate fails on: warning or note
    uri: str | None = None
    tags: tuple[str, ...] = ()


def _rule(id_: str, name: str, short: str, full: str, help_: str, level: str = "warning",
          *tags: str) -> Rule:
    return Rule(id_, name, short, full, help_, level, None, tags)


#: Host-bounce directions (``detail.direction`` of the explain families).
DIRECTIONS: dict[str, str] = {
    "d2h": "device to host", "h2d": "host to device", "d2d": "device to device",
    "d2h2d": "device to host and back", "host": "through the host",
}

_STATIC: tuple[Rule, ...] = (
    _rule("laya/graph-break", "GraphBreak", "Dynamo graph break",
          "torch.compile (Dynamo) stopped tracing here: the graph ends, this code runs in "
          "Python, and a new graph starts after it.",
          "Rewrite the construct Dynamo cannot trace (see the finding's fix), or move it out "
          "of the compiled region.", "warning", "graph-break", "torch.compile"),
    _rule("laya/fallback/cpu-op", "CpuFallback", "Op ran on the CPU",
          "An operator of a device region ran on the host CPU (no device kernel, or the "
          "backend rejected its arguments): its inputs and outputs cross the host boundary.",
          "Give the op a device kernel or change the dtype/shape/alignment the backend "
          "rejects (see the finding's fix).", "warning", "fallback"),
    _rule("laya/fallback/inductor-kernel", "InductorFallbackKernel",
          "Eager kernel called from compiled code",
          "Inductor has no lowering for this op and calls the eager ATen kernel from the "
          "compiled graph.",
          "Expected for attention and custom ops; otherwise add a decomposition or a lowering.",
          "note", "fallback", "torch.compile"),
    _rule("laya/fallback/compile-failed", "CompileFailed", "Compile failed, frame ran eager",
          "torch.compile failed on this frame and fell back to running it eagerly.",
          "Fix the failing construct, or graph-break around it.", "warning", "fallback",
          "torch.compile"),
    _rule("laya/recompile", "Recompile", "Recompile",
          "A compiled frame or op was compiled again: a guard failed (a new shape, dtype or "
          "value).",
          "Bucket or pad the varying dimension, mark it dynamic, or compile with "
          "dynamic=False where shapes are fixed.", "warning", "recompile"),
    _rule("laya/cast", "Cast", "Dtype cast",
          "A tensor was converted to another dtype (a copy of its data).",
          "Keep the tensor in one dtype where the conversion is not needed.", "note", "cast"),
    _rule("laya/tolerance", "Tolerance", "Output outside its tolerance",
          "An output compared with its reference drifted past the limit (or, against a "
          "baseline, drifted more than before).",
          "Find the first module past the limit (the drift curve in the report) and keep its "
          "computation in a wider dtype.", "warning", "tolerance"),
    _rule("laya/kernel-output", "KernelOutputDiffers", "Kernel output differs from its "
          "reference",
          "The kernel lowers, builds and runs, but an output differs from what the kernel "
          "file's own check (or the reference program) expects, past the check's limit.",
          "Fix the kernel's computation at its definition (the related location), or the "
          "check if its tolerance is wrong for this dtype.", "warning", "tolerance",
          "tilelang"),
    _rule("laya/kernel-build", "KernelBuildFailed", "Kernel does not build",
          "The kernel lowered, but its generated source did not compile (g++ for c, nvcc for "
          "cuda): the compiler's first error is the finding's message.",
          "Follow the compiler's error (the generated source and the command are in the "
          "report).", "warning", "lowering", "tilelang"),
    _rule("laya/kernel-run", "KernelRunFailed", "Kernel fails when run",
          "The kernel lowered and built, but running it raised.",
          "Read the error in the report (the inputs' shapes and devices first).", "warning",
          "lowering", "tilelang"),
    _rule("laya/not-examined", "NotExamined", "Probe could not examine its subject",
          "The probe never reached its subject (kernel arguments unknown, a model that does "
          "not import, a factory that raises): nothing was found about it, and nothing was "
          "shown to be fine.",
          "Fix what stopped the probe (its reason), then run again.", "warning", "probe"),
    _rule("laya/probe/crashed", "ProbeCrashed", "Probe crashed its worker",
          "The probe's worker process died (a signal, or a broken protocol).",
          "Run the probe alone (--only ID) and read its log tail.", "warning", "probe"),
    _rule("laya/probe/timeout", "ProbeTimeout", "Probe ran past its timeout",
          "The probe did not finish in time and its worker was killed.",
          "Raise the family's timeout ([tool.laya-tui] timeouts) or shrink the subject.",
          "warning", "probe"),
    _rule("laya/probe/raised", "ProbeRaised", "Probe raised",
          "The probe raised an exception before it finished.",
          "Read the traceback in the report (the probe's error).", "warning", "probe"),
    _rule("laya/probe/failed", "ProbeFailed", "Probe failed",
          "The probe reported a finding about its subject.",
          "See the probe's signals and reason.", "warning", "probe"),
    _rule("laya/probe/skipped", "ProbeSkipped", "Probe skipped",
          "Something the probe needs is missing.",
          "Install what the reason names.", "note", "probe"),
    _rule("laya/probe-file", "ProbeFileError", "Probe file does not import",
          "A probe file could not be imported, so none of its probes ran.",
          "Fix the import error at this line.", "warning", "probe"),
)
_STATIC += tuple(
    _rule(f"laya/host-bounce/{d}", "HostBounce" + d.upper(), f"Host bounce ({text})",
          f"Data crossed the host boundary ({text}) inside the measured region: a transfer, "
          "often a synchronisation.",
          "Keep producer and consumer on one device; avoid .item()/.cpu()/.tolist() and "
          "data-dependent shapes in the hot path.", "warning", "host-bounce")
    for d, text in DIRECTIONS.items())

#: Every fixed rule by id (graph-break ids and lowering passes add rules as they occur).
RULES: dict[str, Rule] = {r.id: r for r in _STATIC}

_GB_ID = re.compile(r"^GB\d+$")
_DIRECTION = re.compile(r"^(d2h2d|d2h|h2d|d2d)")


def gb_uri(gb_id: str) -> str:
    """Dynamo's page for a graph-break id: ``GB0170`` -> ``.../gb/gb0170.html``."""
    return f"{GB_SITE}gb{gb_id[2:]}.html"


def _detail(sig: SignalLike) -> Mapping[str, object]:
    d = sig.get("detail")
    return d if isinstance(d, Mapping) else {}


def is_graph_break(sig: SignalLike) -> bool:
    """A fallback signal that is a Dynamo graph break."""
    return sig.get("kind") == "fallback" and (
        _detail(sig).get("graph_break") is True or sig.get("subject") == "graph break")


def graph_break_rule(sig: SignalLike) -> Rule:
    """``laya/graph-break/GBxxxx`` when the signal carries Dynamo's id, else the generic one."""
    d = _detail(sig)
    gb_id = d.get("graph_break_id")
    if not (isinstance(gb_id, str) and _GB_ID.match(gb_id)):
        return RULES["laya/graph-break"]
    base = RULES["laya/graph-break"]
    gb_type = str(d.get("graph_break_type") or sig.get("reason") or "graph break")
    doc = d.get("documentation")
    return Rule(f"laya/graph-break/{gb_id}", f"GraphBreak{gb_id}", f"{gb_id}: {gb_type}",
                str(d.get("explanation") or base.full), base.help, base.level,
                doc if isinstance(doc, str) and doc.startswith("https://") else gb_uri(gb_id),
                base.tags)


def lowering_rule(sig: SignalLike) -> Rule:
    """``laya/lowering/<pass>``: the TileLang pass that raised, else the failed stage; a
    build or run failure under its own name (``laya/kernel-build``, ``laya/kernel-run``)."""
    d = _detail(sig)
    if d.get("stage") == "build":
        return RULES["laya/kernel-build"]
    if d.get("stage") == "run":
        return RULES["laya/kernel-run"]
    where = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(d.get("pass") or d.get("stage") or "")
                   ).strip("-")
    return Rule(f"laya/lowering/{where}" if where else "laya/lowering",
                "Lowering" + where.replace(".", "").replace("-", ""),
                f"Kernel does not lower ({where})" if where else "Kernel does not lower",
                f"A kernel cell failed{' at ' + where if where else ''}: the first "
                "diagnostic is the finding's message.",
                "Follow the finding's fix (for target c: lower the cpu=True specialization, "
                "local buffers, serial loops; no bf16 in C).", "warning", None, ("lowering",))


def host_bounce_rule(sig: SignalLike) -> Rule:
    """``laya/host-bounce/<direction>`` from ``detail.direction`` or the subject's prefix."""
    direction = _detail(sig).get("direction")
    if direction not in DIRECTIONS:
        m = _DIRECTION.match(str(sig.get("subject") or ""))
        direction = m.group(1) if m else "host"
    return RULES[f"laya/host-bounce/{direction}"]


def rule_for_signal(sig: SignalLike, *, drifted: bool = False) -> Rule | None:
    """The rule of a finding signal; None when the signal is a fact, not a finding.

    ``drifted``: a passing tolerance check that a baseline gate fails (it drifted more than
    the margin allows) is a finding too.
    """
    kind = sig.get("kind")
    if kind == "fallback":
        if not occurrences(sig if type(sig) is dict else dict(sig)):
            return None
        if is_graph_break(sig):
            return graph_break_rule(sig)
        if str(sig.get("reason") or "").startswith("compile failed"):
            return RULES["laya/fallback/compile-failed"]
        if _detail(sig).get("inductor") is True:
            return RULES["laya/fallback/inductor-kernel"]
        return RULES["laya/fallback/cpu-op"]
    if kind in ("recompile", "cast", "host_bounce"):
        if not occurrences(sig if type(sig) is dict else dict(sig)):
            return None
        if kind == "host_bounce":
            return host_bounce_rule(sig)
        return RULES[f"laya/{kind}"]
    if kind == "lowering":
        if _detail(sig).get("exception") == "ToleranceExceeded":
            return None  # its tolerance signals are the finding (one result, not two)
        return lowering_rule(sig) if failing(sig) else None
    if kind == "tolerance":
        if not (sig.get("passed") is False or drifted):
            return None
        return RULES["laya/kernel-output"] if _detail(sig).get("check") \
            else RULES["laya/tolerance"]
    return None


#: Probe statuses that are findings by themselves, and their rules.
PROBE_RULES: dict[str, str] = {
    "error": "laya/not-examined", "crashed": "laya/probe/crashed",
    "timeout": "laya/probe/timeout", "raised": "laya/probe/raised",
    "failed": "laya/probe/failed", "skipped": "laya/probe/skipped",
}


def probe_rule(state: str) -> Rule:
    """The rule of a probe-level finding (``state``: a status, or ``raised``)."""
    return RULES[PROBE_RULES[state]]
