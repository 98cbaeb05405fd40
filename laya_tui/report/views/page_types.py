"""What the HTML page's script draws (:func:`laya_tui.report.views.page.page_data`), as
typed dicts: the data embedded in the page, formatted in Python, read by ``page.js`` by
these names. Rows the script indexes by position stay lists."""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from typing import NotRequired, TypedDict

from laya_tui.report.views.section_shapes import Shape
from laya_tui.report.views.sections import SortValue

#: A probe's row: ``(id, family, state word, css, seconds text, seconds, signals, reason,
#: failing, packed detail)``.
ProbeRow = tuple[str, str, str, str, str, float | None, int, str, int, list[int]]
#: A matrix cell: ``[label, css, probe, what it opens (a signal row or "p<probe>"), key]``.
MatrixCellRow = list[str | int]
#: An environment section: its title and its ``[name, value]`` facts.
EnvironmentRow = tuple[str, list[list[str]]]


class Excerpt(TypedDict):
    """Source lines around a call site (``start``: the first one's number)."""

    start: int
    line: int
    text: str


class FileText(TypedDict):
    """The head of a file a detail shows (``hl``: the 1-based lines to highlight)."""

    text: str
    total: int
    hl: list[int]


class GateRow(TypedDict):
    """A gate and its failures (``[probe, what failed]``, the first ``MAX_FAILURES``)."""

    name: str
    passed: bool
    description: str
    result: str
    failures: list[list[str]]
    more: str


class Header(TypedDict):
    """The verdict, the counts beside it and the line under the title."""

    title: str
    verdict: str
    passed: bool
    warn: bool
    line: str
    counts: list[list[str]]  # [text, css class]
    kinds: str
    notes: list[str]


class Column(TypedDict):
    """A column of the signal table (``width``: percent; ``sort``: its sort column)."""

    key: str
    label: str
    numeric: bool
    wide: bool
    used: bool
    width: float
    sort: int | None


class SignalTable(TypedDict):
    """The signal table a column at a time (``cells[c][row]``: a string id), each row's
    sort values, failing flag, css, packed detail, and the rows most important first."""

    columns: list[Column]
    kinds: list[str]
    probe_rows: list[int]
    cells: list[list[int]]
    sort: list[list[SortValue]]  # per sort column
    failing: list[int]
    css: list[int]
    details: list[list[int]]
    order: list[int]


class Matrix(TypedDict):
    """Kernels x columns (``rows``: ``[kernel, [cell or null, ...]]``)."""

    columns: list[list[str]]
    rows: list[tuple[str, list[MatrixCellRow | None]]]  # a kernel and its cells
    legend: list[list[str]]


class DiffView(TypedDict):
    """``--diff``: the other report's counts, gates and signal table."""

    counts: list[str]
    versions: str
    gates: list[GateRow]
    signals: SignalTable
    probes: list[str]
    logs: list[str]


class PageData(TypedDict):
    """Everything the page's script draws."""

    header: Header
    gates: list[GateRow]
    probes: list[ProbeRow]
    probe_order: list[int]
    logs: list[str]
    signals: SignalTable
    matrix: Matrix | None
    tolerance: list[list[str | int]]  # [row, failing, probe, check, value, limit, ...]
    environment: list[EnvironmentRow]
    errors: list[list[str]]
    status_legend: list[list[str]]
    diff: NotRequired[DiffView]
    # set last, once every detail is packed and the excerpts are read
    strings: NotRequired[list[str]]
    shapes: NotRequired[list[tuple[Shape, ...]]]
    excerpts: NotRequired[dict[str, Excerpt | None]]
    files: NotRequired[dict[str, FileText | None]]
