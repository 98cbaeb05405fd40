"""The records the explain modules hand each other, named for what they hold (worker side).

A site is the report's own :class:`~laya_tui.core.report_types.SiteDict`, a signal its
:class:`~laya_tui.core.report_types.SignalDict`. The open mappings keep a name that says
whose they are: a signal's detail (an open JSON object, ``$defs/signal``), the probe's run
options (JSON from outside) and RBLN's compiler dump (the library's payload).
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypeAlias, TypedDict

from laya_tui.core.open_types import Detail, Kwargs, ProbeOptions  # open by design
from laya_tui.core.report_types import GapRowDict, SignalDict, SiteDict

if TYPE_CHECKING:
    from torch.nn import Module

__all__ = ["CondCall", "CondEntry", "Detail", "Divergence", "DriftCall", "DriftPoint",
           "DriftResult", "DriftSeconds", "DriftSummary", "EntryFields", "GapRowDict",
           "GbRegistry", "InductorConfig", "Kwargs", "Latency", "LogSiteDict", "ParsedReason",
           "Placement", "PlanTrial", "ProbeOptions", "RblnDump", "Recompile", "RegionSummary",
           "SignalDict", "SignalSpec", "SiteDict", "SkippedModule", "Verdict", "VerdictContext"]

#: Inductor config fields and values (``torch._inductor.config``), handed to torch as they are.
InductorConfig: TypeAlias = dict[str, object]
#: RBLN's compiler dump (a library payload, read as the compiler writes it).
RblnDump: TypeAlias = dict[str, Any]


class EntryFields(TypedDict):
    """An aggregated entry's keyword arguments for ``ctx.signal(kind, **fields)``."""

    subject: str
    count: int
    bytes: int | None
    reason: str | None
    site: SiteDict | None
    fix: str | None
    seconds: float | None
    detail: Detail | None


class LogSiteDict(SiteDict):
    """A site the RBLN log names, with the source line the log quotes under it."""

    code: NotRequired[str]


class Verdict(TypedDict, total=False):
    """What the follow-ups of a tolerance verdict read of it (gap table, precision plan,
    compile bisection): a ``tolerance`` signal, or a bare ``{"passed": ...}``."""

    passed: bool | None
    limit: float | None


class VerdictContext(Protocol):
    """What a verdict's follow-ups (gap table, precision plan, compile bisection) call on the
    probe's context (the probe's ``ctx``)."""

    @property
    def id(self) -> str: ...

    @property
    def options(self) -> ProbeOptions: ...

    def step(self, name: str, /) -> None: ...

    def log(self, text: str, **fields: object) -> object: ...


class Divergence(TypedDict):
    """Where two runs called different modules (``control_flow.divergence``)."""

    index: int
    after: str | None
    model_called: str | None
    reference_called: str | None
    model_site: str | None
    reference_site: str | None
    site: SiteDict | None
    text: str
    differing: int


class DriftCall(TypedDict):
    """One compared module call of the drift curve, in the model's execution order."""

    module: str
    type: str
    call: int
    dtype: str | None
    max_diff: float
    limit: float
    past: bool
    order: int  # how many module calls had started when it returned


class SkippedModule(TypedDict):
    """A module the drift curve leaves out, and why."""

    module: str
    reason: str


class CondCall(TypedDict):
    """One ``torch.cond`` call as the drift detail shows it: its site and the branches."""

    site: str | None
    ran: str | None
    reference_ran: str | None
    other_branch_error: NotRequired[str]


class DriftSeconds(TypedDict):
    reference: float
    model: float


class DriftResult(TypedDict):
    """``drift.module_drift``'s result: the per-module curve and where it left the limit."""

    calls: list[DriftCall]
    first_past_limit: DriftCall | None
    diverged: Divergence | None
    skipped: list[SkippedModule]
    cond: list[CondCall]
    compared: int
    seconds: DriftSeconds
    reference_output: Any  # what the two calls returned (tensors, model outputs)
    model_output: Any


class DriftPoint(TypedDict):
    """A drift curve's point as the summary shows it (``ratio``: the worst's error/limit)."""

    module: str
    type: str
    call: int
    dtype: str | None
    max_diff: float | None
    limit: float | None
    ratio: NotRequired[float | None]


class DriftSummary(TypedDict):
    """The ``drift`` entry of a tolerance signal's detail (``drift.summary_detail``)."""

    first_past_limit: DriftPoint | None
    index: int | None
    curve_first: int | None
    worst: DriftPoint | None
    compared: int
    diverged: Detail | None
    curve: list[list[Any]]  # [module, max_diff, limit] (lists, as JSON has them)
    skipped: list[SkippedModule]
    cond: NotRequired[list[CondCall]]
    curve_every: NotRequired[int]
    artifact: NotRequired[str]


class PlanTrial(TypedDict):
    """One verified run of the precision-plan search: the modules kept in fp32, its error."""

    fp32_modules: list[str]
    error: float | None
    passed: bool


class Recompile(TypedDict):
    """A real recompile ``DynamoWatch`` saw: its guard, where the compiled function is."""

    compile_id: str
    subject: str  # the compiled frame, named
    guard: str  # the guard that failed, as Dynamo wrote it
    reason: str  # its first line
    site: SiteDict | None
    stack: list[str]
    seconds: float | None


#: An extra signal as ``{"kind", **fields}``: the region pops ``kind`` and passes the fields
#: through to ``ctx.signal(kind, **fields)`` (any of a signal's fields).
SignalSpec: TypeAlias = dict[str, Any]


class Placement(TypedDict):
    """A region's device placement (the ``placement`` of its detail): ops in device
    kernels vs outside them, or ``note`` saying why nothing was counted."""

    on_device: int | None
    fallback: int | None
    share: float | None  # fallback over all counted (0..1)
    unit: str | None
    graphs: NotRequired[int]  # Inductor: generated graphs read
    outside: NotRequired[dict[str, int]]  # Inductor: extern, fallback and custom ops
    counted: NotRequired[str]  # RBLN: what the counts are
    note: NotRequired[str]


class RegionSummary(TypedDict):
    """Region-level facts for the emitted signals' detail (``summary()`` of a region)."""

    region: str
    phase: str | None
    backend: str
    device: str
    wall_s: float
    placement: Placement
    rbln_wall_ns: NotRequired[int | None]
    compiled_code_kernels: NotRequired[dict[str, dict[str, int]]]  # how -> kernel -> calls


class ParsedReason(TypedDict):
    """Dynamo's graph-break message, split (``graph_breaks.parse_reason``)."""

    headline: str
    explanation: str | None
    hints: list[str]


class Latency(TypedDict):
    """A forward's latency without instrumentation (``timing.median_latency``)."""

    median_s: float
    min_s: float
    samples: int
    warmup: int


class CondEntry(TypedDict):
    """One ``torch.cond`` call of a run: which branch ran, what the other one calls."""

    site: SiteDict | None
    ran: str  # "true" or "false"
    not_run_modules: list["Module"]  # modules the other branch calls (matched by id)
    error: str | None  # the other branch's trace error, if any


#: Dynamo's graph-break registry (gb type -> id), as torch's own JSON file holds it.
GbRegistry: TypeAlias = dict[str, object]
