"""A section's *shape* in the page's packed details (``views/packed.py``): its type, title
and the parts that rows alike share, as a hashable tuple whose first item names the type;
the texts that fill it are packed apart. The page's script reads these as JSON arrays.
Standard library only.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from laya_tui.report.views.sections import SortValue

#: Facts: the title and the fact labels.
FactsShape: TypeAlias = tuple[Literal["f"], str | None, tuple[str, ...]]
#: A call site's excerpt: the title (the place and the excerpt's key are texts).
SourceShape: TypeAlias = tuple[Literal["src"], str]
#: A text block: the title, its syntax and whether it is drawn dim.
BlockShape: TypeAlias = tuple[Literal["b"], str, str | None, bool]
#: A probe's log tail: the title and the probe's index in the page's probe table.
LogShape: TypeAlias = tuple[Literal["log"], str, int]
#: A file's head: the title and the note under it.
FileShape: TypeAlias = tuple[Literal["file"], str, str]
#: A drift plot: the title, its points and the first diverging one.
PlotShape: TypeAlias = tuple[Literal["plot"], str, tuple[tuple[int, float, float], ...],
                             int | None]
#: A table: the title, its columns, rows and sort keys.
TableShape: TypeAlias = tuple[Literal["table"], str, tuple[str, ...],
                              tuple[tuple[str, ...], ...], tuple[tuple[SortValue, ...], ...]]
Shape: TypeAlias = (FactsShape | SourceShape | BlockShape | LogShape | FileShape | PlotShape
                    | TableShape)
