"""The sections a detail is made of (facts, a source excerpt, a text block, a log tail, a
file's head, a drift plot, a sortable table) and the detail itself (a head over its
sections): the typed shapes ``views/detail.py`` fills and the renderers draw.
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["Block", "Detail", "Facts", "FileHead", "Head", "Plot", "ProbeLog", "Section",
           "SortValue", "Source", "Table", "lexer_for", "sort_table"]

#: A table cell's sort value: a number or a text, None when absent.
SortValue: TypeAlias = float | str | None

_LEXERS = {".py": "python", ".c": "c", ".cc": "cpp", ".cpp": "cpp", ".cu": "cuda",
           ".h": "c", ".mlir": "text", ".ll": "llvm"}


def lexer_for(path: str, default: str = "text") -> str:
    """The syntax a source excerpt of ``path`` is highlighted as."""
    dot = path.rfind(".")
    return _LEXERS.get(path[dot:], default) if dot >= 0 else default


@dataclass(slots=True)
class Facts:
    """Label -> value pairs (a value may span lines: a diagnostic keeps its own)."""

    title: str | None
    rows: tuple[tuple[str, str], ...]


@dataclass(slots=True)
class Source:
    """The lines around ``line`` of a source file (read by the renderer)."""

    title: str
    where: str
    file: str
    line: int
    context: int


@dataclass(slots=True)
class Block:
    """Preformatted text: a stack, a traceback, a log tail (``lang``: highlight it)."""

    title: str
    text: str
    lang: str | None = None
    dim: bool = False


@dataclass(slots=True)
class ProbeLog:
    """The log tail of cell ``probe`` (its text is the probe's: the renderer takes it from
    there, so a probe's 100,000 signals do not each carry a copy); ``lines``: the last
    lines only (None: all of it)."""

    title: str
    probe: str
    lines: int | None


@dataclass(slots=True)
class FileHead:
    """The first ``lines`` lines of a file a probe wrote (the IR before the failing pass, a
    pass's diff), read by the renderer; lines binding one of ``names`` are highlighted."""

    title: str
    path: str
    lines: int
    lang: str
    names: tuple[str, ...] = ()
    note: str = ""


@dataclass(slots=True)
class Plot:
    """max |diff| and limit per module call (``points``: ``(x, max_diff, limit)``), and
    where the drift starts (``first``: an x, or None)."""

    title: str
    points: tuple[tuple[int, float, float], ...]
    first: int | None
    height: int


@dataclass(slots=True)
class Table:
    """Rows under column headers, sortable by any column (``keys``: each row's sort values,
    numbers or text, None when absent); rows come in their first order (the gap table's:
    local error against its limit, largest first)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    keys: tuple[tuple[SortValue, ...], ...]


Section = Facts | Source | Block | ProbeLog | FileHead | Plot | Table


def sort_table(table: Table, column: int | None) -> Table:
    """``table`` ordered by ``column`` (None: its own order): numbers largest first, text
    A to Z, absent values last; equal keys keep their order (what the page's first click
    on a header does)."""
    if column is None or not 0 <= column < len(table.columns):
        return table
    keys = [k[column] if column < len(k) else None for k in table.keys]
    numeric = any(isinstance(k, (int, float)) for k in keys)

    def key(i: int) -> tuple[int, float | str]:
        k = keys[i]
        if k is None:
            return (1, 0)
        if numeric and isinstance(k, (int, float)):
            return (0, -k)
        return (0, str(k).lower()) if not numeric else (1, 0)

    order = sorted(range(len(table.rows)), key=key)
    return Table(table.title, table.columns, tuple(table.rows[i] for i in order),
                 tuple(table.keys[i] for i in order))


@dataclass(slots=True)
class Head:
    """The detail's first line: a badge (the signal's kind or the probe's status), the
    subject, the probe, and whether it fails."""

    badge: str
    title: str
    probe: str
    failing: bool


@dataclass(slots=True)
class Detail:
    head: Head
    sections: tuple[Section, ...]
