"""The detail of one signal (or one probe), drawn with rich from the view's sections
(``report/views/detail.py``: what each section says and in which order, the same for the
HTML page): facts, call-site source, blocks, the log tail, file heads and the drift plot."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from laya_tui.core.files import source_excerpt
from laya_tui.report.views.detail import (
    Block,
    Detail,
    Facts,
    FileHead,
    Plot,
    ProbeLog,
    Section,
    Source,
    buffer_lines,
    drift_sections,
    lexer_for,
    log_text,
    probe_detail,
    signal_detail,
    sort_table,
)
from laya_tui.report.views.detail import (
    Table as TableSection,
)
from laya_tui.report.views.text import printable
from laya_tui.tui.model import ProbeState, SignalRow
from laya_tui.tui.widgets.probe_tree import probe_state

#: The column a detail's table is sorted by (None: its own order, the gap table's ranking);
#: ``s`` on the signal screen moves it to the next column.
TABLE_SORT: list[int | None] = [None]


def Syntax(code: str, lexer: str, *, line_numbers: bool = False,  # noqa: N802
           start_line: int = 1, highlight_lines: set[int] | None = None,
           word_wrap: bool = False) -> RenderableType:
    """rich's Syntax in the ``ansi_dark`` theme, imported on first use (pygments costs
    ~10 ms at start-up)."""
    from rich.syntax import Syntax as RichSyntax

    return RichSyntax(code, lexer, theme="ansi_dark", line_numbers=line_numbers,
                      start_line=start_line, highlight_lines=highlight_lines,
                      word_wrap=word_wrap)


def resolve_path(path: str, workspace: str | None) -> str:
    """A site or probe path made absolute against the workspace."""
    if os.path.isabs(path) or not workspace:
        return path
    return os.path.join(workspace, path)


def _section_title(title: str) -> Text:
    return Text(title, style="bold underline")


def _kv_table(rows: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    for k, v in rows:  # Text: a value such as "[tool.laya-tui...]" is not markup
        table.add_row(Text(k), Text(v))
    return table


def _read_lines(path: str, limit: int) -> tuple[str, int] | None:
    """The first ``limit`` lines of ``path`` and how many it has; None when unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    return "\n".join(lines[:limit]), len(lines)


class Renderer:
    """Draws sections; ``workspace`` resolves relative paths, ``log_of`` gives a probe's
    log tail."""

    def __init__(self, workspace: str | None,
                 log_of: Callable[[str], str] | None = None) -> None:
        self.workspace = workspace
        self.log_of = log_of or (lambda probe: "")

    def section(self, sec: Section) -> list[RenderableType]:
        if isinstance(sec, Facts):
            head = [_section_title(sec.title)] if sec.title else []
            return [*head, _kv_table(sec.rows)]
        if isinstance(sec, Source):
            return self._source(sec)
        if isinstance(sec, Block):
            body: RenderableType = Syntax(sec.text, sec.lang, line_numbers=True) \
                if sec.lang else Text(sec.text, style="dim" if sec.dim else "")
            return [_section_title(sec.title), body]
        if isinstance(sec, ProbeLog):
            text = self.log_of(sec.probe)
            if not text.strip():
                return []
            return [_section_title(sec.title), Text(log_text(text, sec.lines), style="dim")]
        if isinstance(sec, FileHead):
            return self._file(sec)
        if isinstance(sec, Plot):
            plot = drift_plot(sec)
            return [plot] if plot is not None else []
        if isinstance(sec, TableSection):  # the gap table: ranked, or sorted with s
            col = TABLE_SORT[0]
            sec = sort_table(sec, col)
            by = "ranked" if col is None or col >= len(sec.columns) else \
                f"sorted by {sec.columns[col]}"
            table = Table(*sec.columns, box=None, header_style="bold", padding=(0, 1))
            for row in sec.rows:
                table.add_row(*(Text(c) for c in row))
            return [_section_title(sec.title), Text(f"{by} (s: sort by the next column)",
                                                    style="dim"), table]
        return []

    def _source(self, sec: Source) -> list[RenderableType]:
        parts: list[RenderableType] = [_section_title(sec.title), Text(sec.where)]
        path = resolve_path(sec.file, self.workspace)
        excerpt = source_excerpt(path, sec.line, sec.context)
        if excerpt is None:
            # the site as recorded, not where it was looked for: a report read on another
            # machine or checkout must render the same
            parts.append(Text(f"(source not readable here: {printable(sec.file)})",
                              style="dim"))
        else:
            code, start = excerpt
            parts.append(Syntax(printable(code), lexer_for(path), line_numbers=True,
                                start_line=start, highlight_lines={sec.line},
                                word_wrap=False))
        return parts

    def _file(self, sec: FileHead) -> list[RenderableType]:
        note = f"   ({sec.note})" if sec.note else ""
        parts: list[RenderableType] = [_section_title(sec.title),
                                       Text(printable(sec.path) + note, style="dim")]
        got = _read_lines(sec.path, sec.lines)
        if got is None:
            parts.append(Text(f"(not readable here: {printable(sec.path)})", style="dim"))
            return parts
        text, total = got
        parts.append(Syntax(printable(text), sec.lang, line_numbers=sec.lang != "diff",
                            highlight_lines=buffer_lines(text, sec.names), word_wrap=False))
        shown = text.count("\n") + 1
        if total > shown:
            parts.append(Text(f"… {total - shown} more lines in the file", style="dim"))
        return parts

    def detail(self, detail: Detail, *, probe_head: bool = False) -> RenderableType:
        head = Text()
        head.append(f" {detail.head.badge} ", style="reverse bold")
        head.append(f"  {detail.head.title}", style="bold")
        if not probe_head:
            head.append(f"   {detail.head.probe}", style="dim")
            if detail.head.failing:
                head.append("   failing", style="bold red")
        parts: list[RenderableType] = [head]
        for sec in detail.sections:
            parts += self.section(sec)
        return Group(*parts)


def render_signal(row: SignalRow, st: ProbeState | None, workspace: str | None, *,
                  full: bool = False) -> RenderableType:
    """Everything known about one signal, top to bottom."""
    has_log = st is not None and bool(st.log_tail.strip())
    detail = signal_detail(row.sig, row.probe, has_log=has_log, full=full)
    return Renderer(workspace, lambda probe: st.log_tail if st is not None else "").detail(
        detail)


def render_probe(st: ProbeState, workspace: str | None, *, full: bool = False) -> RenderableType:
    """A probe without a selected signal: status, reason, error and log tail."""
    result = {"id": st.id, "status": st.status, "state": probe_state(st),
              "reason": st.reason, "seconds": st.seconds,
              "cached": st.cached, "file": st.file, "log_tail": st.log_tail,
              "error": st.error, "deps": list(st.result.deps) if st.result else [],
              "node": st.result.node if st.result else None}
    detail = probe_detail(result, signals=len(st.rows), full=full)
    return Renderer(workspace).detail(detail, probe_head=True)


def drift_section(drift: object, *, full: bool = False) -> list[RenderableType]:
    """The drift sections (``views.detail.drift_sections``) drawn."""
    r = Renderer(None)
    return [part for sec in drift_sections(drift, full=full) for part in r.section(sec)]


def tilelang_editor_target(detail: Mapping[str, object]) -> tuple[str, int | None] | None:
    """What ``o`` opens for a failing TileLang cell: the IR before the failing pass, at the
    first line allocating an implicated buffer; None when the cell has no such artifact."""
    ir = detail.get("ir_before") if isinstance(detail, dict) else None
    if not isinstance(ir, str) or not os.path.isfile(ir):
        return None
    buffers = detail.get("buffers")
    names = [str(b.get("name")) for b in (buffers if isinstance(buffers, list | tuple) else ())
             if isinstance(b, dict)]
    got = _read_lines(ir, 100_000)
    lines = sorted(buffer_lines(got[0], names)) if got else []
    return ir, (lines[0] if lines else None)


class DriftPlot:
    """max |diff| and limit per module call (log scale), a vertical line where the drift
    starts; drawn at the pane's width."""

    def __init__(self, plot: Plot) -> None:
        self.points = plot.points
        self.first = plot.first
        self.height = plot.height

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from plotext._figure import _figure_class

        fig = _figure_class()
        fig.plotsize(max(30, min(options.max_width, 110)), self.height)
        fig.theme("clear")
        xs = [p[0] for p in self.points]
        floor = min((p[1] for p in self.points if p[1] > 0), default=1e-12)
        fig.yscale("log")
        fig.plot(xs, [max(p[1], floor) for p in self.points], marker="braille",
                 label="max|diff|")
        fig.plot(xs, [p[2] for p in self.points], marker="dot", label="limit")
        if self.first is not None:
            fig.vertical_line(self.first)
        fig.xlabel("module call (execution order)")
        yield Text.from_ansi(fig.build(), no_wrap=True, overflow="crop")


def drift_plot(plot: Plot) -> RenderableType | None:
    """A :class:`DriftPlot` when plotext is installed."""
    try:
        import plotext._figure  # noqa: F401
    except ImportError:
        return None
    return DriftPlot(plot)


class DetailPane(VerticalScroll):
    """A scrolling pane showing one signal or one probe."""

    def __init__(self, *, full: bool = False, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.full = full
        self.subject: tuple[str, str] | None = None  # ("signal", key) / ("probe", id)
        self._shown: RenderableType = ""
        self._token: object = None  # what is shown, to skip drawing it again

    def compose(self) -> ComposeResult:  # noqa: D102 - textual hook
        yield Static(id="detail-body", expand=True)

    def _set(self, renderable: RenderableType) -> None:
        self._shown = renderable
        self._body().update(renderable)

    def _body(self) -> Static:
        return self.query_one("#detail-body", Static)

    def show_signal(self, row: SignalRow, st: ProbeState | None, workspace: str | None) -> None:
        token = ("signal", row.key, row.sig, st.log_tail if st is not None else "",
                 TABLE_SORT[0])
        if token == self._token:
            return  # shown already (a focus move): a re-render would lay the pane out again
        self.subject, self._token = ("signal", row.key), token
        self._set(render_signal(row, st, workspace, full=self.full))
        self.scroll_home(animate=False)

    def show_probe(self, st: ProbeState, workspace: str | None) -> None:
        token = ("probe", st.id, st.status, st.reason, st.seconds, st.result, len(st.rows))
        if token == self._token:
            return
        self.subject, self._token = ("probe", st.id), token
        self._set(render_probe(st, workspace, full=self.full))
        self.scroll_home(animate=False)

    def show_text(self, text: str) -> None:
        if self.subject is None and isinstance(self._shown, Text) and self._shown.plain == text:
            return  # shown already: a re-render would lay the whole screen out again
        self.subject, self._token = None, None
        self._set(Text(text, style="dim"))

    def plain_text(self, width: int = 120) -> str:
        """What the pane shows, as plain text (tests, copy)."""
        from rich.console import Console

        console = Console(width=width, record=True, color_system=None, file=io.StringIO())
        console.print(self._shown)
        return console.export_text()
