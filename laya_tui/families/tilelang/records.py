"""The records the TileLang modules hand each other, named for what they hold (worker side).

Typed dicts for what ends up in a signal's ``detail`` (the cell's :class:`CellExtra`, a
check, the pass bisection, a buffer, the kernel part of every detail); a site is the
report's own :class:`~laya_tui.core.report_types.SiteDict`. The open mappings keep a name
that says whose they are: TileLang's pass configuration, a kernel's arguments, a call's
keyword arguments, a module's globals (all handed on as they are), the probe's run options
(JSON from outside) and a signal's detail (an open JSON object, ``$defs/signal``).
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypeAlias, TypedDict

from laya_tui.core.open_types import Detail, Kwargs, ProbeOptions  # open by design
from laya_tui.core.report_types import SiteDict
from laya_tui.families.probe_context import ProbeContext as _ProbeContext
from laya_tui.families.tilelang.capture_types import Described
from laya_tui.families.tilelang.tl_objects import OutIdx

if TYPE_CHECKING:
    import torch

    from laya_tui.families.tilelang.passlog import PassLog

__all__ = ["BisectionDict", "BufferDict", "BuiltByDict", "CellArtifacts", "CellDict",
           "CellExtra", "CellKwargs", "CheckDict", "Detail", "Example", "FactoryExample",
           "FileRunDict", "Globals",
           "ImporterTried", "KernelArgs", "KernelDetail", "KernelTable", "Kwargs", "PassConfigs",
           "PassTimings", "ProbeContext", "ProbeOptions", "SignalFields", "SiteDict", "Tensors",
           "TrialDict", "TunedDict", "VerdictDetail"]

#: TileLang's ``pass_configs`` (option -> value), handed to TileLang as they are.
PassConfigs: TypeAlias = dict[str, object]
#: A kernel's arguments by parameter name, as its file's run, its syntax tree or its
#: pyproject table gives them (sizes, dtype names, flags; tensors as ``{"tensor": shape,
#: "dtype": d}``): the keyword arguments its maker is called with.
KernelArgs: TypeAlias = dict[str, Any]
#: A kernel's ``[tool.laya-tui.kernel-args."file.py::kernel"]`` table (TOML from outside):
#: argument values, plus ``dtypes``, ``targets`` and ``dtype-arg``.
KernelTable: TypeAlias = dict[str, Any]
#: A module's globals, or the part of them a kernel reads (name -> object).
Globals: TypeAlias = dict[str, object]
#: Tensors by parameter name (a kernel's inputs and outputs, a reference's results).
Tensors: TypeAlias = "dict[str, torch.Tensor]"


class KernelDetail(TypedDict):
    """The kernel/target/dtype/spec part of every signal's detail (``cell_state.tdetail``)."""

    kernel: str
    target: str
    dtype: str  # its label: fp16, bf16-fp8e4m3
    spec: str | None


class BufferDict(TypedDict):
    """A buffer of the IR a failing pass received (``diagnostics.ir_buffers``)."""

    name: str
    scope: str
    dtype: str
    file: NotRequired[str]  # the span TileLang stamped on it
    line: NotRequired[int]


class CheckDict(TypedDict):
    """One output's comparison in the cell's ``checks`` (the ``tolerance`` signal's facts)."""

    value: float | None  # max |diff| (None when the comparison gave none)
    limit: float
    passed: bool | None
    check: NotRequired[str]  # the file's own check that made it
    note: NotRequired[str]


class VerdictDetail(TypedDict, total=False):
    """What a file's own check, made again, adds to its ``tolerance`` signal's detail
    (``own_verdict``): the tolerances in force and the elements over the limit; a plain
    assert's ``asserts``."""

    rtol: float
    atol: float
    mismatched: int
    elements: int
    max_mismatched_ratio: float
    asserts: str


class SignalFields(TypedDict, total=False):
    """A finding's own fields beside its detail: why, and where the file makes the check."""

    reason: str
    site: SiteDict


class TrialDict(TypedDict):
    """One build of the pass bisection (``pass_bisect.Trial``)."""

    change: PassConfigs  # option -> value ("<removed>": the file's own option taken out)
    passed: bool | None  # None: the build or the run raised
    note: str


class BisectionDict(TypedDict):
    """The cell detail's ``pass_bisection`` (``pass_bisect.Bisection.as_detail``)."""

    restored_by: PassConfigs | None
    pass_name: str | None
    verdict: str
    builds: int
    seconds: float
    budget: dict[str, float]
    trials: list[TrialDict]


class PassTimings(TypedDict):
    """Per-pass seconds of a lowering (``passlog.PassLog.timings``): ``slowest`` holds
    ``[name, self seconds, runs]``."""

    passes: int
    total_s: float
    slowest: list[list[str | float | int]]


class TunedDict(TypedDict):
    """An ``@autotune`` kernel's tuning as the run saw it: the first config stands in."""

    configs: int
    config: Kwargs  # the tiling values, handed to the kernel as keyword arguments


class FileRunDict(TypedDict):
    """How the file's own run (or an importing file's) went: the detail's ``file_run``."""

    entries: list[str]
    seconds: float
    file: NotRequired[str]  # an importing file's run
    faked_ops: NotRequired[int]
    checks_let_pass: NotRequired[int]


class ImporterTried(TypedDict):
    """A file importing the kernel's library module, whose run was tried."""

    file: str
    ended: str
    gpu_needed: str | None


#: What built the kernel the cell examines: the detail's ``built_by``.
BuiltByDict = TypedDict("BuiltByDict", {
    "entry": str, "site": str | None, "target": Described, "builds": int, "tuned": TunedDict,
    "globals": Globals, "file": str, "data dtype": str, "raised": str, "file_run": str,
}, total=False)


class CellArtifacts(TypedDict, total=False):
    """Files a failed cell leaves (``passlog.write_failure_artifacts`` and ``repro.py``)."""

    ir_before: str
    ir_before_pass: str
    last_pass_diff: str
    last_pass: str
    pass_timing_report: str
    repro: str


class CellExtra(CellArtifacts, total=False):
    """What the stages add to a cell's detail (``CellState.extra``); keys starting with
    ``_`` stay out of the detail."""

    definition: SiteDict
    args: KernelArgs
    arg_sources: dict[str, str]
    out_idx: OutIdx  # as the file gave it to TileLang (an int or a list of them)
    tool_session: str
    file_run: FileRunDict
    built_by: BuiltByDict
    importers_tried: list[ImporterTried]
    pass_configs: dict[str, bool | int | float | str]  # the JSON-able ones
    _pass_configs_all: PassConfigs
    _passlog: "PassLog"
    execution_backend: str
    generated_source: str
    passes: PassTimings
    build_skipped: str
    build_cached: bool
    command: str
    command_note: str
    wrapped_source: str
    built_with: str
    linked: bool
    run_skipped: str
    not_run: str
    checks: dict[str, CheckDict]
    reference: str
    pass_bisection: BisectionDict


class CellKwargs(TypedDict, total=False):
    """A TileLang cell's parameters as discovery finds them: the keyword arguments of
    ``cell.run_cell`` (a lowering cell) or ``agree.run_agreement`` (an agreement cell)."""

    kernel: str
    file: str
    kind: str  # "factory" | "jit" | "maker" | "primfunc" | "nested" | "account"
    target: str
    dtype: str
    spec: str | None
    factory: str | None
    line: int | None
    obj: str | None
    args: KernelArgs
    arg_sources: dict[str, str]
    missing: list[str] | None
    key: str | None
    dtype_arg: str | None
    pass_configs: PassConfigs | None
    called: bool
    tuned: bool
    execution_backend: str | None
    note: str | None


class CellDict(TypedDict):
    """One cell of a TileLang probe as discovery gives it to ``laya_tui.api.param``."""

    id: str
    name: str
    deps: list[str]
    kwargs: CellKwargs


class Example(Protocol):
    """What a cell's run compares with: a factory's ``example()`` (``kernels.common.Example``)
    or a plain file's ``ref_program`` (``reference.RefExample``)."""

    @property
    def outputs(self) -> Iterable[str]: ...  # the checked outputs' names

    @property
    def masks(self) -> Mapping[str, "torch.Tensor"]: ...  # output -> mask of valid positions

    @property
    def rounded(self) -> tuple[str, ...]: ...  # outputs stored in the I/O dtype

    def materialize(self, dtype: str = ..., device: "str | torch.device" = ...
                    ) -> tuple[Tensors, Tensors]:
        """``(tensors, promoted)``: the kernel's arguments on ``device``, their fp32 copies."""
        ...

    def expected(self, promoted: Tensors, dtype: str = ...) -> Tensors:
        """The reference's outputs on the fp32 copies."""
        ...

    def actual(self, tensors: Tensors) -> Tensors:
        """The kernel's outputs among its arguments, fp32 on the CPU."""
        ...

    def tolerance(self, name: str, *, dtype: str, cpu: bool) -> float:
        """The limit of output ``name``'s max |diff|."""
        ...


class FactoryExample(Example, Protocol):
    """A factory's ``example()`` (``kernels.common.Example``): it also names the factory's
    arguments (shapes), which the trace stage calls the factory with."""

    @property
    def args(self) -> tuple[object, ...]: ...

    @property
    def kwargs(self) -> Mapping[str, object]: ...


#: The probe's ``ctx`` as every family uses it (one protocol: families/probe_context.py).
ProbeContext = _ProbeContext
