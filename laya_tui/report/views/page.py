"""What the HTML page shows, as data its script only draws (``report/page.js``): the header,
the gates, a diff's changes, the lowering matrix with its legend, the probes, the signals
(each row's cells, sort values and failing flag, a column at a time), every detail panel
(packed: ``views/packed.py``), the source excerpts and files those point at (read now, where
the page is written), the tolerance checks and the environment. Every text is formatted and
printable here. Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import cast

from laya_tui.core.files import source_excerpt
from laya_tui.core.open_types import JsonObject
from laya_tui.core.report_types import ReportDict, ResultDict, SignalDict
from laya_tui.core.results import failing
from laya_tui.core.shapes import as_dict, as_list
from laya_tui.core.signals import FAILING_STATUSES, KINDS
from laya_tui.report.baseline import regressed
from laya_tui.report.verdict import describe_failure, findings_not_gated, verdict_notes
from laya_tui.report.views.detail import (
    Detail,
    FileHead,
    Source,
    buffer_lines,
    log_text,
    probe_detail,
    signal_detail,
)
from laya_tui.report.views.legend import (
    MATRIX_LEGEND,
    STATE_LEGEND,
    STATE_MARKS,
    cell_state,
    outcome_mark,
    state_counts,
    state_mark,
    state_word,
)
from laya_tui.report.views.matrix import build_matrix
from laya_tui.report.views.packed import (
    Packer,
    PlainDetails,
    Strings,
    excerpt_key,
    file_key,
)
from laya_tui.report.views.page_types import (
    EnvironmentRow,
    Excerpt,
    FileText,
    GateRow,
    Header,
    Matrix,
    MatrixCellRow,
    PageData,
    ProbeRow,
    SignalTable,
)
from laya_tui.report.views.sections import SortValue
from laya_tui.report.views.signals import (
    COLUMNS,
    SORT_KEYS,
    ColumnValue,
    column_needs,
    column_widths,
    signal_cells,
)
from laya_tui.report.views.text import human_seconds, number, one_line, plain, printable

#: Call-site excerpts embedded at most (the failing signals' sites first).
MAX_EXCERPTS = 2_000
#: Files a detail shows the head of (the IR before a failing pass), embedded at most.
MAX_FILES = 200
#: Gate failures listed per gate (the rest are counted).
MAX_FAILURES = 200
#: The signal table's width in characters (1400 px of 13 px text), shared by its columns.
PAGE_CHARS = 170
#: A table cell's padding, in characters.
CELL_PADDING = 3
#: Columns of the signal table whose rows sort on a value rather than their text.
_SORTED_BY_VALUE = ("kind", "count", "bytes", "value")


class _Reader:
    """Source excerpts and file heads, read once each, within the caps: the excerpts once
    every detail is packed, the failing signals' sites (and where probes raised) first, so
    the cap leaves out only passing ones."""

    def __init__(self, workspace: str | None) -> None:
        self.workspace = os.path.abspath(workspace or ".")
        self.excerpts: dict[str, Excerpt | None] = {}
        self.files: dict[str, FileText | None] = {}
        self._first: dict[str, Source] = {}
        self._rest: dict[str, Source] = {}

    def _path(self, file: str) -> str:
        return file if os.path.isabs(file) else os.path.join(self.workspace, file)

    def note(self, detail: Detail, first: bool) -> None:
        """Read what ``detail``'s sections point at (``first``: before the others)."""
        for sec in detail.sections:
            if isinstance(sec, Source):
                key = excerpt_key(sec)
                if key not in self._first:
                    (self._first if first else self._rest).setdefault(key, sec)
            elif isinstance(sec, FileHead):
                self._file(sec)

    def read_excerpts(self) -> None:
        """Read the noted excerpts, failing sites first, up to :data:`MAX_EXCERPTS`."""
        for key, src in [*self._first.items(), *(
                (k, v) for k, v in self._rest.items() if k not in self._first)]:
            if len(self.excerpts) >= MAX_EXCERPTS:
                break
            found = source_excerpt(self._path(src.file), src.line, src.context)
            self.excerpts[key] = None if found is None else {
                "start": found[1], "line": src.line, "text": printable(found[0])}

    def _file(self, head: FileHead) -> None:
        key = file_key(head)
        if key not in self.files and len(self.files) < MAX_FILES:
            try:
                with open(self._path(head.path), encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().splitlines()
            except OSError:
                self.files[key] = None
            else:
                text = "\n".join(lines[: head.lines])
                self.files[key] = {"text": printable(text), "total": len(lines),
                                   "hl": sorted(buffer_lines(text, head.names))}


def _gates(report: ReportDict) -> list[GateRow]:
    out: list[GateRow] = []
    for g in as_list(report.get("gates")):
        if not isinstance(g, dict):
            continue
        fails = [f for f in as_list(g.get("failures")) if isinstance(f, dict)]
        passed = bool(g.get("passed"))
        out.append({"name": printable(g.get("name")), "passed": passed,
                    "description": printable(g.get("description") or ""),
                    "result": "pass" if passed else f"FAIL ({len(fails)})",
                    "failures": [[printable(f.get("probe") or ""),
                                  printable(describe_failure(str(g.get("name")), f))]
                                 for f in fails[:MAX_FAILURES]],
                    "more": f"… and {len(fails) - MAX_FAILURES} more"
                    if len(fails) > MAX_FAILURES else ""})
    return out


def _header(report: ReportDict, title: str, n_probes: int) -> Header:
    s = as_dict(report.get("summary"))
    env = as_dict(report.get("environment"))
    host, versions, tool = as_dict(env.get("host")), as_dict(env.get("versions")), as_dict(
        report.get("tool"))
    counts = [[f"{s.get('probes', n_probes)} probes", ""]]
    given = s.get("states")  # report/3 writes them; a report/2 is counted here
    states: Mapping[str, object] = given if isinstance(given, Mapping) else state_counts(
        as_list(report.get("probes")))
    for state, n in states.items():
        if n:
            counts.append([f"{state_word(state)} {n}", f"st-{state_mark(state).css}"])
    if isinstance(s.get("seconds"), (int, float)):
        counts.append([human_seconds(s["seconds"]), "dim"])
    kinds = [f"{k} {n:,}" for k, n in as_dict(s.get("signals")).items()
             if isinstance(n, int) and n]
    line = [f"written {report['created']}" if report.get("created") else "",
            f"on {host['hostname']}" if host.get("hostname") else "", host.get("machine"),
            f"python {versions['python']}" if versions.get("python") else "",
            f"torch {versions['torch']}" if versions.get("torch") else "",
            " ".join(str(tool[k]) for k in ("name", "version") if tool.get(k)),
            report.get("schema")]
    passed = bool(s.get("passed"))
    return {"title": printable(title), "verdict": "PASS" if passed else "FAIL",
            "passed": passed, "warn": passed and findings_not_gated(report) > 0,
            "line": printable(" · ".join(str(b) for b in line if b)),
            "counts": counts, "kinds": "signals: " + ("  ".join(kinds) or "none"),
            # beside the verdict: cells built but not run, findings no gate reads
            "notes": [printable(t) for t in verdict_notes(report)]}


def _scalar(key: ColumnValue) -> SortValue:
    """A sort value the script compares: a number (a whole one as an int: shorter), a
    string or null (absent, first)."""
    value: SortValue
    if isinstance(key, tuple):  # the value column: (rank, number, text)
        value = None if key[0] == 0 else key[1] if key[0] == 1 else key[2]
    else:
        value = key
    if type(value) is float:
        if value == float("-inf"):
            return None
        if value.is_integer() and -_EXACT < value < _EXACT:
            return int(value)
    return value


_ROW_CLASSES = {"regression": "reg", "improvement": "imp", "note": "note"}
#: Whole numbers below this are exact as floats (the script's numbers).
_EXACT = 2 ** 53


def _rows(probes: list[ResultDict]) -> Iterator[tuple[ResultDict, SignalDict, int]]:
    """``(probe, signal, row)`` of each signal (a dict), the row its table gives it."""
    row = 0
    for p in probes:
        for sig in cast(list[SignalDict], _objects(p.get("signals"))):
            yield p, sig, row
            row += 1


def _objects(value: object) -> list[JsonObject]:
    """The items of a JSON list that are objects, in order (the caller casts them to the
    report's type: they are the report's cells and signals)."""
    return [v for v in as_list(value) if isinstance(v, dict)]


def _table(probes: list[ResultDict], pack: Packer, read: _Reader) -> SignalTable:
    """The signal table, a column at a time (``cells[c][row]``: a string id), and each
    row's detail packed; row ``n`` is the ``n``-th signal of :func:`_rows`."""
    text, add = pack.strings, pack.strings.add
    flat: list[int] = []  # the rows' cells one row after another, cut in columns at the end
    flat_sort: list[SortValue] = []
    sort_by = [(c, SORT_KEYS[c]) for c in _SORTED_BY_VALUE]
    fails: list[int] = []
    css: list[int] = []
    details: list[list[int]] = []
    per_probe: list[int] = []
    index = {str(p.get("id", "")): pi for pi, p in enumerate(probes)}
    plain = PlainDetails(pack)
    no_class = text("")
    for p in probes:
        pid = str(p.get("id", ""))
        has_log = bool(str(p.get("log_tail") or "").strip())
        before = len(fails)
        for sig in as_list(p.get("signals")):
            if not isinstance(sig, dict):
                continue
            add(flat, signal_cells(sig, pid))
            for field, key in sort_by:  # a whole number sorts as itself: no call for it
                value = sig.get(field)
                flat_sort.append(value if type(value) is int and -_EXACT < value < _EXACT
                                 else _scalar(key(sig, pid)))
            bad = failing(sig)
            fails.append(int(bad))
            d = sig.get("detail")
            css.append(text(_ROW_CLASSES.get(str(d.get("class")), ""))
                       if isinstance(d, dict) else no_class)
            fast = plain.detail(sig, pid, has_log, index)
            if fast is None:
                detail = signal_detail(sig, pid, has_log=has_log)
                read.note(detail, bad)
                details.append(pack.detail(detail, index))
            else:
                packed, like, new = fast
                details.append(packed)
                if new or bad:  # what it points at: once per kind, first when failing
                    read.note(like, bad)
        per_probe.append(len(fails) - before)
    ncol, nsort = len(COLUMNS), len(sort_by)
    cells = [flat[c::ncol] for c in range(ncol)]
    sort = [flat_sort[c::nsort] for c in range(nsort)]
    table = pack.strings.table
    kinds = {table[i] for i in cells[0]}
    needs = column_needs(list(zip(*([table[i] for i in c] for c in cells), strict=True))
                         if fails else [])
    shown = sum(1 for n in needs if n)
    widths = [w + CELL_PADDING if w else 0
              for w in column_widths(needs, PAGE_CHARS - CELL_PADDING * shown)]
    total = sum(widths) or 1
    return {"columns": [{"key": c.key, "label": c.label, "numeric": c.numeric, "wide": c.wide,
                         "used": widths[i] > 0, "width": round(100 * widths[i] / total, 1),
                         "sort": _SORTED_BY_VALUE.index(c.key)
                         if c.key in _SORTED_BY_VALUE else None}
                        for i, c in enumerate(COLUMNS)],
            "kinds": [k for k in KINDS if k in kinds], "probe_rows": per_probe,
            "cells": cells, "sort": sort, "failing": fails, "css": css, "details": details,
            "order": _severity_order(probes)}


def _severity_order(probes: list[ResultDict]) -> list[int]:
    """The rows of :func:`_rows` most important first (report.severity: the dashboard's
    table, markdown and SARIF order): findings, then passed checks and facts, the
    environment last; report order within a band."""
    from laya_tui.report.severity import signal_severity

    return [row for _, row in sorted((signal_severity(sig), row) for _, sig, row in
                                     _rows(probes))]


def _probe_order(probes: list[ResultDict]) -> list[int]:
    """The probes' indices the way the summary lists cells: the worst state first
    (views.legend), the most severe within a state, report order within that."""
    from laya_tui.report.severity import probe_severity

    rank = {k: i for i, k in enumerate(STATE_MARKS)}
    return sorted(range(len(probes)), key=lambda i: (
        rank.get(cell_state(probes[i]), len(rank)), probe_severity(probes[i]), i))


def _probes(probes: list[ResultDict], pack: Packer, read: _Reader) -> list[ProbeRow]:
    """``[id, family, status word, css, seconds text, seconds, signals, reason, failing,
    packed detail]``."""
    out = []
    index = {str(p.get("id", "")): pi for pi, p in enumerate(probes)}
    for p in probes:
        sigs = as_list(p.get("signals"))
        seconds = p.get("seconds") if isinstance(p.get("seconds"), (int, float)) else None
        status = str(p.get("status") or "")
        mark = state_mark(cell_state(p))  # the word every output uses (views.legend)
        detail = probe_detail(p, signals=len(sigs))
        read.note(detail, True)
        out.append((printable(p.get("id")), printable(p.get("family")), mark.word,
                    f"st-{mark.css}", (human_seconds(seconds) + ("  cached" if p.get("cached")
                                                               else "")) if seconds is not None
                    else "", seconds, len(sigs), one_line(p.get("reason"), 300),
                    int(status in FAILING_STATUSES), pack.detail(detail, index)))
    return out


def _matrix(probes: list[ResultDict]) -> Matrix | None:
    """Kernels x columns; a cell opens its signal's row (a number) or its probe (``p3``)."""
    lowering = ((sig, str(p.get("id")), str(p.get("family")), row)
                for p, sig, row in _rows(probes))
    index = {str(p.get("id")): pi for pi, p in enumerate(probes)}
    view = build_matrix(lowering, ((str(p.get("id")), str(p.get("family")),
                                    str(p.get("status"))) for p in probes))
    if not view:
        return None
    rows: list[tuple[str, list[MatrixCellRow | None]]] = []
    for kernel in view.kernels:
        cells: list[MatrixCellRow | None] = []
        for col in view.columns:
            cell = view.cell(kernel, col)
            if cell is None:
                cells.append(None)
                continue
            mark = outcome_mark(cell.outcome)
            opens = cell.signal if cell.opens_signal else f"p{index.get(cell.probe, 0)}"
            cells.append([mark.label, f"o-{mark.css}", printable(cell.probe), opens,
                          "|".join((kernel, col.target, col.dtype, col.spec))])
        rows.append((printable(kernel), cells))
    return {"columns": [[c.head, c.sub] for c in view.columns], "rows": rows,
            "legend": [list(x) for x in MATRIX_LEGEND]}


def _tolerance(probes: list[ResultDict]) -> list[list[str | int]]:
    """``[signal row, failing, probe, check, value, limit, passed, argmax, top-2 gap]``."""
    out: list[list[str | int]] = []
    for p, s, row in _rows(probes):
        if s.get("kind") == "tolerance":
            d = as_dict(s.get("detail"))
            argmax = "" if d.get("argmax_match") is None else (
                f"{d['argmax_match']}" + (f" / {d['rows']}" if d.get("rows") is not None else ""))
            out.append([row, int(s.get("passed") is False), printable(p.get("id")),
                        one_line(s.get("subject")), number(s.get("value")),
                        number(s.get("limit")), "NO" if s.get("passed") is False else
                        "yes" if s.get("passed") is True else "", argmax,
                        number(d.get("top2_gap_min"))])
    return out


def _environment(report: ReportDict) -> list[EnvironmentRow]:
    env = as_dict(report.get("environment"))
    out: list[EnvironmentRow] = []
    for key, title in (("host", "machine"), ("versions", "library versions"),
                       ("probed", "probed environment")):
        sec = env.get(key)
        if isinstance(sec, dict) and sec:
            out.append((title, [[printable(k), "—" if v is None else plain(v)
                                 if not isinstance(v, (dict, list)) else printable(v)]
                                for k, v in sec.items()]))
    return out


def page_data(report: ReportDict, *, diff: ReportDict | None = None,
              title: str = "laya-tui report", workspace: str | None = None) -> PageData:
    """Everything the page's script draws, formatted; the texts of the signal tables and
    the details in one string table (``strings``), details packed (``views/packed.py``)."""
    read = _Reader(workspace)
    pack = Packer(Strings())
    probes = cast(list[ResultDict], _objects(report.get("probes")))
    data: PageData = {
        "header": _header(report, title, len(probes)),
        "gates": _gates(report),
        "probes": _probes(probes, pack, read),
        "probe_order": _probe_order(probes),
        "logs": [log_text(str(p.get("log_tail") or ""), None) for p in probes],
        "signals": _table(probes, pack, read),
        "matrix": _matrix(probes),
        "tolerance": _tolerance(probes),
        "environment": _environment(report),
        "errors": [[printable(f"{e.get('file')}:{e['line']}" if e.get("line") else
                              e.get("file")), printable(e.get("error"))]
                   for e in as_list(report.get("errors")) if isinstance(e, dict)],
        "status_legend": [list(x) for x in STATE_LEGEND],
    }
    if diff is not None:
        dprobes = cast(list[ResultDict], _objects(diff.get("probes")))
        sec = as_dict(diff.get("diff"))
        pr = as_dict(sec.get("probes"))
        versions = ", ".join(f"{k} {v.get('before')} → {v.get('after')}" for k, v in
                             as_dict(sec.get("environment")).items() if isinstance(v, dict))
        data["diff"] = {
            "counts": [f"{regressed(as_list(sec.get('regressions')))} regression(s)",
                       f"{len(as_list(sec.get('improvements')))} improvement(s)",
                       f"{len(as_list(sec.get('notes')))} note(s)",
                       f"; {pr.get('compared', '?')} probe(s) compared ({pr.get('before', '?')}"
                       f" before, {pr.get('after', '?')} after)"],
            "versions": printable(versions), "gates": _gates(diff),
            "signals": _table(dprobes, pack, read),
            "probes": [printable(p.get("id")) for p in dprobes],
            "logs": [log_text(str(p.get("log_tail") or ""), None) for p in dprobes]}
    read.read_excerpts()
    data["strings"] = pack.strings.table
    data["shapes"] = pack.shapes
    data["excerpts"] = read.excerpts
    data["files"] = read.files
    return data
