"""The report's JSON objects as typed dicts, mirroring ``laya_tui/report/schema.json``
(``$defs``: ``site``, ``signal``, ``probe``, ``gate``, ``change``); a test keeps the two
equal, field for field and required for required.

The frozen :class:`~laya_tui.core.results.Signal` and ``ProbeResult`` are what the
dashboard holds; these describe the plain dicts that travel between the worker, the runner,
the cache and the report writers, for the functions that build or read one. Two objects
that are not in the report are typed elsewhere: a discovered cell (:class:`CellSpec`, here)
and a watch-mode record (``laya_tui.watch.record_types``).
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from collections.abc import Mapping
from typing import Any, NotRequired, TypeAlias, TypedDict

from laya_tui.core.open_types import Detail, HostFacts, Params


class SiteDict(TypedDict):
    """Where a signal happened: ``$defs/site``."""

    file: str
    line: NotRequired[int | None]
    func: NotRequired[str | None]


class FileErrorDict(TypedDict):
    """A probe file that did not load (discovery): an item of the report's ``errors``."""

    file: str
    error: str
    line: NotRequired[int | None]


class ErrorDict(TypedDict):
    """The exception a probe raised: a result's ``error`` (``$defs/probe``)."""

    type: NotRequired[str]
    message: NotRequired[str]
    traceback: NotRequired[str]
    site: NotRequired[SiteDict | None]


class BudgetDict(TypedDict, total=False):
    """A run's timeout bounds and what it used of them: a result's ``budget``
    (``laya_tui.core.watchdog``)."""

    timeout: float
    idle_window: float
    cpu_budget: float
    ceiling: float
    wall_limit: float
    seconds: float
    own_seconds: float
    cpu_seconds: float
    longest_idle: float
    ended_by: str


class SignalDict(TypedDict):
    """One signal: ``$defs/signal`` (its kinds: ``laya_tui.core.signals.KINDS``)."""

    kind: str
    probe: str
    subject: NotRequired[str | None]
    count: NotRequired[int | None]
    bytes: NotRequired[int | None]
    reason: NotRequired[str | None]
    site: NotRequired[SiteDict | None]
    fix: NotRequired[str | None]
    value: NotRequired[Any]
    limit: NotRequired[float | None]
    passed: NotRequired[bool | None]
    seconds: NotRequired[float | None]
    detail: NotRequired[Detail | None]
    #: fields whose value was not a finite number (written as null): field -> nan/inf/-inf
    nonfinite: NotRequired[Mapping[str, str]]


class GapRowDict(TypedDict, total=False):
    """A gap table's row: one module call's error and own error against the fp32 run."""

    module: str
    type: str
    call: int
    dtype: str | None
    error: float | None
    local: float | None
    limit: float | None
    share: float | None
    note: str


class GapTableDict(TypedDict, total=False):
    """A compared output's gap table as a cell keeps it (its top rows; the signal's
    ``detail.gap_table`` has more, the artifact every one)."""

    path: str
    modules: int
    output: GapRowDict | None  # the output's own row (its error, limit)
    budget_bytes: int | None
    peak_bytes: int
    activation_bytes: int
    spilled_bytes: int
    spilled_files: int
    seconds: float
    artifact: str
    note: str
    rows_shown: int
    rows: list[GapRowDict]


class PrecisionPlanDict(TypedDict, total=False):
    """The modules to keep in fp32 that bring an output within its limit, verified."""

    status: str  # found, not_needed, no_plan, not_precision, budget, skipped
    fp32_modules: list[str]
    verified_error: float | None
    baseline_error: float | None
    fp32_error: float | None
    limit: float | None
    forwards: int
    max_forwards: int
    seconds: float
    dtype: str
    reason: str
    sites: dict[str, str]  # module -> its call site, file:line(func)
    class_sites: dict[str, SiteDict]


class NumericsDict(TypedDict):
    """One compared output of a cell (report/4, ``report.views.numerics``)."""

    subject: str
    gap_table: NotRequired[GapTableDict]
    precision_plan: NotRequired[PrecisionPlanDict]


class NodeDict(TypedDict):
    """report/5: the Ray cluster node that ran a cell under ``--cluster`` (docs/cluster.md):
    its id and host, the resources it offers and its library versions."""

    id: str
    host: str
    resources: NotRequired[dict[str, float]]
    versions: NotRequired[dict[str, str | None]]


class ResultDict(TypedDict):
    """One probe cell's result: ``$defs/probe`` (built by ``core.results.make_result``)."""

    id: str
    family: str
    status: str  # a report status: laya_tui.core.signals.STATUSES
    state: NotRequired[str]  # report/3, written by build_report: report.views.legend.State
    reason: str | None
    seconds: float | None
    cached: bool
    deps: list[str]
    signals: list[SignalDict]
    log_tail: str
    env: NotRequired[str]
    params: NotRequired[Params]
    file: NotRequired[str | None]
    started: NotRequired[float]
    ended: NotRequired[float]
    error: NotRequired[ErrorDict | None]
    budget: NotRequired[BudgetDict]
    host: NotRequired[str]
    nonfinite: NotRequired[Mapping[str, str]]  # as SignalDict's
    numerics: NotRequired[list[NumericsDict]]  # report/4: report.views.numerics
    node: NotRequired[NodeDict]  # report/5: the cluster node that ran it (--cluster)


#: One failure a gate lists: the cell, and the facts that gate names (a status and reason,
#: a signal's kind, subject and count, a message): free-form per gate in the schema.
GateFailure: TypeAlias = dict[str, Any]


class GateDict(TypedDict):
    """One gate's outcome: ``$defs/gate`` (``report.gates.evaluate_all``)."""

    name: str
    passed: bool
    description: NotRequired[str]
    failures: NotRequired[list[GateFailure]]
    compared: NotRequired[int]


class ChangeDict(TypedDict):
    """One change between two reports or two watch runs: ``$defs/change``."""

    change: str
    kind: str
    probe: str
    before: Mapping[str, object] | None  # the facts that changed, on each side
    after: Mapping[str, object] | None
    message: str
    subject: NotRequired[str | None]
    reason: NotRequired[str | None]


class ShardDict(TypedDict):
    """The part of the cells a ``--shard K/N`` run took: ``$defs/shard``."""

    index: int
    count: int
    plan: str
    cells: NotRequired[int]
    selected: NotRequired[int]
    balance: NotRequired[str]  # "report" | "cache" | "counts"
    durations: NotRequired[str]
    estimated_seconds: NotRequired[list[float]]


class NotRunDict(TypedDict):
    """The summary's ``not_run``: cells built but never run, by why."""

    count: int
    why: dict[str, int]


class UngatedDict(TypedDict):
    """The summary's ``ungated``: findings no gate reads, by kind."""

    count: int
    kinds: dict[str, int]


class SummaryDict(TypedDict):
    """The report's ``summary`` (``report.document.summarise``; ``passed`` and
    ``ungated`` set by ``build_report``)."""

    probes: int
    status: dict[str, int]
    signals: dict[str, int]
    seconds: float
    cached: NotRequired[int]
    passed: NotRequired[bool]
    states: NotRequired[dict[str, int]]
    not_run: NotRequired[NotRunDict]
    ungated: NotRequired[UngatedDict]


class ComparisonDict(TypedDict):
    """What a comparison of two reports' cells says (``report.baseline.compare``): the
    part a baseline section and an ``--env`` candidate share."""

    schema: NotRequired[str]
    created: NotRequired[str | None]
    tool_version: NotRequired[str | None]
    tolerance_margin: NotRequired[float]
    probes: dict[str, int]
    occurrences: NotRequired[dict[str, dict[str, int]]]
    counts: dict[str, dict[str, int] | int]  # regressions/improvements by kind, notes
    regressions: list[ChangeDict]
    improvements: list[ChangeDict]
    notes: list[ChangeDict]


class BaselineDict(ComparisonDict):
    """The comparison with a baseline report: ``$defs/baseline`` (``report.baseline``)."""

    path: str
    environment: NotRequired[HostFacts]


class CompilerDict(TypedDict):
    """A compiler an environment found on its PATH, and its version line."""

    path: str
    version: str


class ToolDict(TypedDict, total=False):
    """The report's ``tool``: what wrote it (free-form in the schema)."""

    name: str
    version: str


class EnvInfoDict(TypedDict):
    """One ``--env`` environment in the report's ``envs``: its interpreter and the
    versions, compilers and facts its env cells probed (``core.envs.Environment.info``)."""

    python: str
    executable: NotRequired[str]
    versions: dict[str, str | None]  # package -> version (None: not installed)
    compilers: NotRequired[dict[str, CompilerDict | None]]  # None: not on PATH
    probed: NotRequired[HostFacts]


class BeforeAfterDict(TypedDict):
    """A value on each side of a comparison (a version, a compiler)."""

    before: object
    after: object


class EnvSideDict(TypedDict):
    """A cell's status and first diagnostic in one environment."""

    status: str | None
    reason: str | None


class EnvPairDict(TypedDict):
    """A cell whose status or first diagnostic differs: ``$defs/env_pair``."""

    probe: str
    before: EnvSideDict
    after: EnvSideDict


class ToleranceDeltaDict(TypedDict):
    """A tolerance check whose value differs between two environments (None: not finite)."""

    probe: str
    subject: str
    before: float | None
    after: float | None
    limit: float | None
    passed_before: bool
    passed_after: bool


class TimingDeltaDict(TypedDict):
    """A timing in both environments (seconds) and their ratio."""

    probe: str
    subject: str
    before: float
    after: float
    ratio: float


class EnvCandidateDict(ComparisonDict):
    """One candidate environment against the reference: the baseline comparison of its
    cells (``report.diff.diff_reports``) plus what ``report.envcompare`` adds."""

    versions: dict[str, BeforeAfterDict]
    compilers: dict[str, BeforeAfterDict]
    env: str
    base: str
    statuses: list[EnvPairDict]
    diagnostics: list[EnvPairDict]
    tolerance: list[ToleranceDeltaDict]
    timing: list[TimingDeltaDict]
    worse: bool


class EnvComparisonDict(TypedDict):
    """The report's ``env_comparison`` (``$defs/env_comparison``; ``report.envcompare``)."""

    base: str
    envs: list[str]
    tolerance_margin: NotRequired[float]
    candidates: list[EnvCandidateDict]


class ImportedFileDict(TypedDict):
    """One TORCH_TRACE log an imported report was read from (``report.trace_import``)."""

    file: str
    label: str
    rank: NotRequired[int | None]
    bytes: NotRequired[int]
    records: int
    unknown: NotRequired[int]
    bad: int
    torch: NotRequired[str | None]


#: The report's ``imported`` section: the TORCH_TRACE logs it was read from, and the
#: import's own ``seconds`` (written by ``trace_report``); ``from`` is a keyword, hence the
#: functional form.
ImportedDict = TypedDict("ImportedDict", {"from": str, "path": str,
                                          "files": list[ImportedFileDict],
                                          "seconds": NotRequired[float]})


class MergedInputDict(TypedDict):
    """One report a merged report was made of (``report.merge``): its file, the host it ran
    on, the merged report it came ``via`` (a merge of merges), its counts and shard."""

    file: str
    host: str
    via: NotRequired[str]
    created: NotRequired[str]
    probes: NotRequired[int]
    seconds: NotRequired[float]
    shard: NotRequired[ShardDict]


class MergedDict(TypedDict):
    """The report's ``merged`` section: the reports merged and ``--prefer``."""

    inputs: list[MergedInputDict]
    prefer: NotRequired[str | None]


class ReportSections(TypedDict, total=False):
    """The report's optional sections, as the steps that make them hand them to
    ``report.document.build_report`` (its ``extra``): the same keys as in ReportDict."""

    baseline: BaselineDict
    shard: ShardDict
    envs: dict[str, EnvInfoDict]
    env_comparison: EnvComparisonDict
    hosts: dict[str, HostFacts]
    imported: ImportedDict
    merged: MergedDict


class ReportDict(TypedDict):
    """The report document (the schema's top level; ``report.document.build_report``).
    Its open objects (``environment``, ``envs``, ``hosts``...) are JSON facts by name."""

    schema: str
    tool: NotRequired[ToolDict]
    created: NotRequired[str]
    environment: HostFacts
    errors: NotRequired[list[FileErrorDict]]
    probes: list[ResultDict]
    summary: SummaryDict
    gates: list[GateDict]
    baseline: NotRequired[BaselineDict]
    shard: NotRequired[ShardDict]
    envs: NotRequired[dict[str, EnvInfoDict]]
    env_comparison: NotRequired[EnvComparisonDict]
    hosts: NotRequired[dict[str, HostFacts]]
    imported: NotRequired[ImportedDict]
    merged: NotRequired[MergedDict]


class CellSpec(TypedDict):
    """One probe cell as discovery found it (the worker's ``discovered`` event), the
    runner's unit of work; ``env`` is set under ``--env``."""

    id: str
    family: str
    file: str
    func: str
    param: str | None
    params: Params
    timeout: float | None
    deps: list[str]
    env: NotRequired[str]


#: The schema's ``$defs`` name of each typed dict.
SCHEMA_DEFS: dict[str, type] = {"site": SiteDict, "signal": SignalDict, "probe": ResultDict,
                                "gate": GateDict, "change": ChangeDict, "shard": ShardDict,
                                "baseline": BaselineDict}
#: Typed dicts of objects nested in the schema, by their path in it (keys joined by "/").
SCHEMA_PATHS: dict[str, type] = {
    "": ReportDict,
    "properties/summary": SummaryDict,
    "properties/envs/additionalProperties": EnvInfoDict,
    "properties/summary/properties/not_run": NotRunDict,
    "properties/summary/properties/ungated": UngatedDict,
    "properties/errors/items": FileErrorDict,
    "properties/imported/properties/files/items": ImportedFileDict,
    "properties/merged": MergedDict,
    "properties/merged/properties/inputs/items": MergedInputDict,
    "$defs/probe/properties/error": ErrorDict,
    "$defs/probe/properties/budget": BudgetDict,
    "$defs/probe/properties/node": NodeDict,
}
