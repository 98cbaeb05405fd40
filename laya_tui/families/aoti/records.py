"""The records the AOTInductor modules hand each other, named for what they hold.

The input spec (what export fixed and let vary, per flat input) travels from the export
step to the shape checks, the targets' extra shapes, results.json and the fresh loader; a
mixed-dtype matmul from the exported graph to its ``log`` signal. The open mappings keep a
name that says whose they are: results.json (built step by step, validated against
``results.SCHEMA`` and read back as JSON), its schema and a target's build config; an
Inductor config and a call's keyword arguments are the explain family's aliases.
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from typing import TYPE_CHECKING, NotRequired, TypeAlias, TypedDict

from laya_tui.core.open_types import JsonObject
from laya_tui.core.report_types import SiteDict
from laya_tui.families.explain.records import InductorConfig, Kwargs

if TYPE_CHECKING:
    import torch

__all__ = ["BuildConfig", "DimRange", "EagerReference", "FlatOutputs", "HeadDeltas", "HeadResult",
           "InductorConfig", "InputEntry", "InputSpec", "JsonSchema", "KeyParts", "Kwargs",
           "LatencyDetail", "LoadError", "LoadResult", "MixedMatmul", "ResultsDoc", "ShapeResult",
           "SiteDict", "StepBox", "Toolchain"]

#: results.json: built step by step, validated against ``results.SCHEMA`` when written and
#: read back as JSON from a previous run (an open JSON object).
ResultsDoc: TypeAlias = JsonObject
#: One call's outputs: the tensor leaves of what the model returned, in pytree order.
FlatOutputs: TypeAlias = list["torch.Tensor"]
#: The fp32 eager reference of one input set: its flat outputs and the heads' names.
EagerReference: TypeAlias = tuple[FlatOutputs, list[str]]


class DimRange(TypedDict):
    """One dim of an exported input: its range, the symbol it shares, its step."""

    name: str
    min: int
    max: int
    symbol: NotRequired[str]  # dims with one symbol must be equal
    multiple: NotRequired[int]


class InputEntry(TypedDict):
    """One flat tensor input of the exported program."""

    name: str
    dtype: str
    dims: list[DimRange]


class InputSpec(TypedDict):
    """The exported ranges per flat input; ``constants``: the non-tensor inputs the
    program holds fixed (path -> repr)."""

    inputs: list[InputEntry]
    constants: NotRequired[dict[str, str]]
    unreadable: NotRequired[bool]  # export's ranges could not be read: no shape checks


class MixedMatmul(TypedDict):
    """Matmul-like nodes whose floating inputs disagree in dtype, with their source site."""

    op: str
    nodes: list[str]
    dtypes: list[str]
    site: SiteDict | None
    trace: str


class StepBox(TypedDict):
    """What ``Pipeline.step`` yields: whether the block ran through, and its seconds
    (set when the block ends)."""

    ok: bool
    seconds: NotRequired[float]


class HeadDeltas(TypedDict):
    """One head against its reference (``measure.head_deltas``)."""

    logit: float  # max |logit delta|
    prob: float  # max |softmax delta| over the last axis
    agree: list[bool]  # argmax agreement per row
    ref_absmax: float


class HeadResult(TypedDict):
    """One head on one shape in results.json (``$.shapes[].heads``, ``results._HEAD``)."""

    max_logit_delta: float
    max_prob_delta: float
    limit: float
    prob_limit: float
    argmax_agree: list[bool]
    passed: bool
    vs_same_dtype_eager: float | None
    fresh_vs_warm: float | None
    vs_compiled: float | None
    compiled_vs_reference: float | None


class ShapeResult(TypedDict):
    """One input set in results.json (``$.shapes[]``): its heads and latencies."""

    name: str
    dims: dict[str, int]
    heads: dict[str, HeadResult]
    latency: dict[str, float]  # variant (eager, compiled, aoti) -> median seconds
    ratios: dict[str, float]  # "<variant>_speedup_vs_eager" -> ratio


class LatencyDetail(TypedDict):
    """How a median latency was measured (a ``timing`` signal's detail)."""

    warmup: int
    groups: int
    reps: int
    min: float
    max: float
    speedup_vs_eager: NotRequired[float]


#: A JSON Schema document (results.json's, ``results.SCHEMA``), handed to jsonschema.
JsonSchema: TypeAlias = JsonObject
#: What distinguishes one target's build beyond its sources (``Target.config``: the model
#: spec, the pipeline version, the device), hashed into the cache key as it is.
BuildConfig: TypeAlias = dict[str, object]


class Toolchain(TypedDict):
    """Facts about the AOTInductor toolchain (results.json's ``environment``)."""

    python: str
    torch: str
    transformers: str | None
    platform: str
    machine: str
    cpu: str
    cores: int | None
    threads: int
    compiler: str
    compiler_version: str
    native_bf16: bool
    loadavg: list[float] | None


class KeyParts(TypedDict):
    """What the package cache key hashes (``toolchain.cache_key``)."""

    sources: dict[str, str]  # file name -> digest
    weights: str
    config: BuildConfig
    dtype: str
    torch: str
    transformers: str | None
    machine: str
    python: str  # major.minor


class LoadError(TypedDict):
    """The fresh loader's error: the step that failed and the exception."""

    step: str
    type: str
    message: str
    traceback: str
    shape: NotRequired[str]


class LoadResult(TypedDict):
    """What the fresh loader saves (``load.run``): times, outputs per shape, the error."""

    import_seconds: float
    outputs: dict[str, FlatOutputs]  # shape name -> flat output tensors
    first_run_seconds: dict[str, float]
    error: LoadError | None
    metadata: dict[str, str]  # the package's metadata
    threads: int
    loader_import_seconds: NotRequired[float]
    isa_probe_seconds: NotRequired[float]
    load_seconds: NotRequired[float]
    forbidden_imported: NotRequired[list[str]]
