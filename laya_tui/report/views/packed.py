"""The HTML page's data in its compact form (``report/views/page.py`` builds it, page.js's
``unpack`` reads it): every text once in a string table that the rows and details point
into, and a detail as a *shape* (its sections' types, titles and fact labels, shared by
every row that looks alike) plus the ids of the texts that fill it. A 100,000-signal
page then carries each row's own texts and a handful of integers, not 100,000 copies of
the same section titles and labels.

The packed form holds exactly what :func:`sections` gives for a detail of
``views/detail.py`` (the sections as the page's script draws them); ``page.js`` turns a
packed detail back into that, so the page and the dashboard show one model (tested in
tests/test_html_detail.py). Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from laya_tui.core.results import SignalLike
from laya_tui.report.views.detail import (
    OWN_FACTS,
    Block,
    Detail,
    Facts,
    FileHead,
    Plot,
    ProbeLog,
    Section,
    Source,
    Table,
    own_fact,
    plain_signal,
    signal_detail,
)
from laya_tui.report.views.section_shapes import Shape
from laya_tui.report.views.text import printable, site_key


def excerpt_key(sec: Source) -> str:
    """The key of a call site's excerpt in the page's excerpt table."""
    return f"{sec.file}:{sec.line}"


def file_key(sec: FileHead) -> str:
    """The key of a file head in the page's file table."""
    return f"{sec.path}:{sec.lines}"


def sections(detail: Detail, probe_index: Mapping[str, int]) -> list[list[Any]]:
    """A detail's sections as the page's script draws them, each ``[type, title, ...]``:
    ``["f", title, [[label, value], ...]]``, ``["src", title, where, excerpt key]``,
    ``["b", title, text, lang, dim]``, ``["log", title, probe index]``,
    ``["file", title, path, file key, note]``, ``["plot", title, points, first]``,
    ``["table", title, columns, rows, sort keys]``."""
    out: list[list[Any]] = []
    for sec in detail.sections:
        shape, texts = _split(sec, probe_index)
        out.append(_join(shape, iter(texts)))
    return out


def _split(sec: Section, probe_index: Mapping[str, int]) -> tuple[Shape, list[str]]:
    """A section as its shape (hashable: what rows share) and its texts (in order)."""
    if type(sec) is Facts:
        return ("f", sec.title, tuple(label for label, _ in sec.rows)), [
            value for _, value in sec.rows]
    if type(sec) is Source:
        return ("src", sec.title), [sec.where, excerpt_key(sec)]
    if type(sec) is Block:
        return ("b", sec.title, sec.lang, sec.dim), [sec.text]
    if type(sec) is ProbeLog:
        return ("log", sec.title, probe_index.get(sec.probe, -1)), []
    if type(sec) is FileHead:
        return ("file", sec.title, sec.note), [printable(sec.path), file_key(sec)]
    if type(sec) is Plot:
        return ("plot", sec.title, sec.points, sec.first), []
    if type(sec) is Table:
        return ("table", sec.title, sec.columns, sec.rows, sec.keys), []
    raise TypeError(f"unknown section {sec!r}")


def _join(shape: Shape, texts: Iterator[str]) -> list[Any]:
    """A section from its shape and texts (what page.js's ``unpack`` does, in Python): the
    JSON array the page's script draws (mixed items, read by position)."""
    title = shape[1]
    if shape[0] == "f":
        return ["f", title, [[label, next(texts)] for label in shape[2]]]
    if shape[0] == "src":
        return ["src", title, next(texts), next(texts)]
    if shape[0] == "b":
        return ["b", title, next(texts), shape[2], shape[3]]
    if shape[0] == "file":
        return ["file", title, next(texts), next(texts), shape[2]]
    if shape[0] == "plot":
        return ["plot", title, [list(p) for p in shape[2]], shape[3]]
    if shape[0] == "table":
        return ["table", title, list(shape[2]), [list(r) for r in shape[3]],
                [list(k) for k in shape[4]]]
    return list(shape)  # log


def unpack(packed: list[int], shapes: list[tuple[Shape, ...]], strings: list[str]
           ) -> list[list[Any]]:
    """A packed detail's sections (page.js's ``unpack``, in Python)."""
    texts = iter([strings[i] for i in packed[1:]])
    return [_join(part, texts) for part in shapes[packed[0]]]


class Strings:
    """The page's string table: ``strings(text)`` is the id of ``text``, added once."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.table: list[str] = []

    def __call__(self, text: str) -> int:
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.table)
            self.table.append(text)
        return found

    def add(self, out: list[int], texts: Iterable[str]) -> None:
        """Append the ids of ``texts`` to ``out`` (one call for a row's texts)."""
        get, ids, table = self.ids.get, self.ids, self.table
        for text in texts:
            found = get(text)
            if found is None:
                found = ids[text] = len(table)
                table.append(text)
            out.append(found)


class Packer:
    """Details packed as ``[shape id, text id, ...]``; ``shapes`` is the shape table."""

    def __init__(self, strings: Strings) -> None:
        self.strings = strings
        self._ids: dict[tuple[Shape, ...], int] = {}
        self.shapes: list[tuple[Shape, ...]] = []

    def detail(self, detail: Detail, probe_index: Mapping[str, int]) -> list[int]:
        """``detail`` packed; :func:`sections` of it is what page.js unpacks it to."""
        shape: list[Shape] = []
        texts: list[str] = []
        for sec in detail.sections:
            part, more = _split(sec, probe_index)
            shape.append(part)
            texts += more
        key = tuple(shape)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.shapes)
            self.shapes.append(key)
        out = [found]
        self.strings.add(out, texts)
        return out


class PlainDetails:
    """Packed details of plain signals (``views.detail.plain_signal``: their own facts,
    their call site, the log tail) from each distinct value once: a fact's text is
    ``own_fact``'s, kept by (field, value); the shape and the call site's texts are those
    of ``signal_detail`` on the first row of their kind (the same facts, site, probe and
    log), which that row's packing checks."""

    def __init__(self, pack: Packer) -> None:
        self.pack = pack
        #: (field, value, the value's type) -> the text id of its fact (-1: none shown)
        self._texts: dict[tuple[str, object, type], int] = {}
        #: (facts shown, site key, probe, has log) -> (shape, call-site text ids, Detail)
        self._kinds: dict[tuple[tuple[str, ...], tuple[object, ...] | None, str, bool],
                          tuple[int, list[int], Detail]] = {}

    def detail(self, sig: SignalLike, probe: str, has_log: bool,
               probe_index: Mapping[str, int]) -> tuple[list[int], Detail, bool] | None:
        """``sig``'s packed detail, the ``Detail`` of the first row of its kind (what it
        points at is the same) and whether this is that row; None when it is not plain or
        holds a value that is not hashable (then pack ``signal_detail``)."""
        if not plain_signal(sig):
            return None
        ids: list[int] = []
        shown: list[str] = []
        texts, strings = self._texts, self.pack.strings
        for field in OWN_FACTS:
            value = sig.get(field)
            if value is None:
                continue
            key = (field, value, type(value))
            try:
                found = texts.get(key)
            except TypeError:
                return None
            if found is None:
                text = own_fact(field, value)
                found = texts[key] = strings(text) if text else -1
            if found >= 0:
                ids.append(found)
                shown.append(field)
        site = sig.get("site")
        where = site_key(site)
        if where is None and site is not None:
            return None
        kind = (tuple(shown), where, probe, has_log)
        known = self._kinds.get(kind)
        if known is not None:
            return [known[0], *ids, *known[1]], known[2], False
        detail = signal_detail(sig, probe, has_log=has_log)
        packed = self.pack.detail(detail, probe_index)
        if packed[1:1 + len(ids)] == ids:  # its facts first, then the call site's texts
            self._kinds[kind] = (packed[0], packed[1 + len(ids):], detail)
        return packed, detail, True
