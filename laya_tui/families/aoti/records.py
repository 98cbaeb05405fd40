"""The records the AOTInductor modules hand each other, named for what they hold.

The input spec (what export fixed and let vary, per flat input) travels from the export
step to the shape checks, the targets' extra shapes, results.json and the fresh loader; a
mixed-dtype matmul from the exported graph to its ``log`` signal. The open mappings keep a
name that says whose they are: results.json (built step by step, validated against
``results.SCHEMA`` and read back as JSON), a step's detail and a call's keyword arguments.
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from typing import Any, NotRequired, TypeAlias, TypedDict

from laya_tui.core.report_types import SiteDict

__all__ = ["DimRange", "InputEntry", "InputSpec", "Kwargs", "MixedMatmul", "ResultsDoc",
           "SiteDict", "StepDetail"]

#: results.json: built step by step, validated against ``results.SCHEMA`` when written and
#: read back as JSON from a previous run (an open JSON object).
ResultsDoc: TypeAlias = dict[str, Any]
#: A step's own detail (its ``log``/``timing`` signal's detail, an open JSON object).
StepDetail: TypeAlias = dict[str, Any]
#: A call's keyword arguments as the model takes them (handed on as they are).
Kwargs: TypeAlias = dict[str, Any]


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
