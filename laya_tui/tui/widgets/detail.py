"""The detail of one signal (or one probe): reason, call site with its source, fix,
tolerance numbers, generated source or package path, and the probe's log tail."""

from __future__ import annotations

import io
import json
import os
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from laya_tui.core.files import source_excerpt
from laya_tui.core.signals import format_site
from laya_tui.tui.format import human_bytes, human_seconds, number
from laya_tui.tui.model import ProbeState, SignalRow

#: Detail keys shown in their own sections (the rest go to "more detail").
_SHOWN = {"diagnostic", "source_excerpt", "generated_source", "path", "package",
          "argmax_match", "rows", "top2_gap_min", "mismatch_rows", "mismatch_top2_gaps",
          "stack", "kernel", "target", "dtype", "spec", "outcome", "seconds", "stage", "pass",
          "exception", "run_skipped", "build_cached", "kernel_site", "checks", "buffers",
          "command", "wrapped_source", "file", "drift"}
#: TileLang cell keys shown by :func:`render_tilelang`.
_SHOWN_TILELANG = {"args", "arg_sources", "passes", "ir_before", "ir_before_pass", "last_pass",
                   "last_pass_diff", "repro", "pass_timing_report", "pass_configs",
                   "built_by", "file_run", "execution_backend", "built_with", "out_idx",
                   "reference"}
_SHOWN |= _SHOWN_TILELANG
#: Detail keys shown as one-line facts, in this order.
_FACTS = (("stage", "stage"), ("pass", "pass"), ("exception", "exception"),
          ("run_skipped", "run"), ("build_cached", "build cached"))
_LEXERS = {".py": "python", ".c": "c", ".cc": "cpp", ".cpp": "cpp", ".cu": "cuda",
           ".h": "c", ".mlir": "text", ".ll": "llvm"}


def Syntax(code: str, lexer: str, **kwargs: Any) -> RenderableType:  # noqa: N802
    """rich's Syntax, imported on first use (pygments costs ~10 ms at start-up)."""
    from rich.syntax import Syntax as RichSyntax

    return RichSyntax(code, lexer, **kwargs)


def resolve_path(path: str, workspace: str | None) -> str:
    """A site or probe path made absolute against the workspace."""
    if os.path.isabs(path) or not workspace:
        return path
    return os.path.join(workspace, path)



def _section(title: str) -> Text:
    return Text(title, style="bold underline")


def _kv_table(pairs: list[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    for k, v in pairs:  # Text: a value such as "[tool.laya-tui...]" is not markup
        table.add_row(Text(k), Text(v))
    return table


def _tail(text: str, lines: int | None) -> str:
    rows = text.rstrip().splitlines()
    if lines is not None and len(rows) > lines:
        rows = ["…"] + rows[-lines:]
    return "\n".join(rows)


def render_signal(row: SignalRow, st: ProbeState | None, workspace: str | None, *,
                  full: bool = False) -> RenderableType:
    """Everything known about one signal, top to bottom."""
    sig = row.sig
    detail = sig.get("detail") if isinstance(sig.get("detail"), dict) else {}
    parts: list[RenderableType] = []
    head = Text()
    head.append(f" {sig.get('kind', '?')} ", style="reverse bold")
    head.append(f"  {sig.get('subject', '')}", style="bold")
    head.append(f"   {row.probe}", style="dim")
    if row.failing:
        head.append("   failing", style="bold red")
    parts.append(head)

    facts: list[tuple[str, str]] = []
    if sig.get("reason"):
        facts.append(("reason", str(sig["reason"])))
    if detail.get("diagnostic") and detail.get("diagnostic") != sig.get("reason"):
        facts.append(("diagnostic", str(detail["diagnostic"])))
    if detail.get("outcome"):
        cell = ", ".join(str(detail[k]) for k in ("kernel", "target", "dtype", "spec")
                         if detail.get(k))
        facts.append(("outcome", f"{detail['outcome']}  ({cell})" if cell else
                      str(detail["outcome"])))
    if sig.get("value") is not None and "limit" not in sig:
        facts.append(("value", str(sig["value"])))
    if sig.get("count") is not None:
        facts.append(("count", str(sig["count"])))
    if sig.get("bytes") is not None:
        facts.append(("bytes", f"{human_bytes(sig['bytes'])}  ({sig['bytes']:,} B)"))
    if sig.get("seconds") is not None:
        facts.append(("seconds", human_seconds(sig["seconds"])))
    if isinstance(detail.get("seconds"), dict):
        stages = ", ".join(f"{k} {human_seconds(v)}" for k, v in detail["seconds"].items()
                           if isinstance(v, (int, float)))
        if stages:
            facts.append(("stages", stages))
    for key, label in _FACTS:
        if detail.get(key) is not None:
            facts.append((label, str(detail[key])))
    if sig.get("fix"):
        facts.append(("fix", str(sig["fix"])))
    if facts:
        parts.append(_kv_table(facts))
    checks = detail.get("checks")
    if isinstance(checks, dict) and checks:
        rows = []
        for name, c in checks.items():
            if isinstance(c, dict):
                mark = "" if c.get("passed") is None else ("  ok" if c.get("passed") else "  FAIL")
                rows.append((str(name), f"{number(c.get('value'))} vs limit "
                                        f"{number(c.get('limit'))}{mark}"))
        parts += [_section("checks"), _kv_table(rows)]

    if sig.get("kind") == "tolerance" or "limit" in sig:
        tol: list[tuple[str, str]] = [
            ("value", number(sig.get("value"))), ("limit", number(sig.get("limit"))),
            ("passed", "yes" if sig.get("passed") else "no" if sig.get("passed") is False
             else "")]
        if "argmax_match" in detail:
            rows = detail.get("rows")
            tol.append(("argmax", f"{detail['argmax_match']} / {rows} rows match"
                        if rows is not None else str(detail["argmax_match"])))
        if "top2_gap_min" in detail:
            tol.append(("top-2 gap", f"min {number(detail['top2_gap_min'])}"))
        if detail.get("mismatch_rows"):
            gaps = detail.get("mismatch_top2_gaps") or []
            pairs = ", ".join(f"row {r}" + (f" (gap {number(g)})" if g is not None else "")
                              for r, g in zip(detail["mismatch_rows"],
                                              list(gaps) + [None] * len(detail["mismatch_rows"]),
                                              strict=False))
            tol.append(("mismatches", pairs))
        parts += [_section("tolerance"), _kv_table([t for t in tol if t[1]])]
        parts += drift_section(detail.get("drift"), full=full)

    site = sig.get("site")
    if isinstance(site, dict) and site.get("file"):
        parts.append(_section("call site"))
        parts.append(Text(format_site(site)))
        if site.get("line"):
            path = resolve_path(str(site["file"]), workspace)
            excerpt = source_excerpt(path, int(site["line"]), 12 if full else 4)
            if excerpt is None:
                # the site as recorded, not where it was looked for: a report read on
                # another machine or checkout must render the same
                parts.append(Text(f"(source not readable here: {site['file']})",
                                  style="dim"))
            else:
                code, start = excerpt
                parts.append(Syntax(code, _LEXERS.get(os.path.splitext(path)[1], "text"),
                                    line_numbers=True, start_line=start,
                                    highlight_lines={int(site["line"])}, theme="ansi_dark",
                                    word_wrap=False))
    ksite = detail.get("kernel_site")
    same_as_site = isinstance(site, dict) and isinstance(ksite, dict) and (
        site.get("file"), site.get("line")) == (ksite.get("file"), ksite.get("line"))
    if isinstance(ksite, dict) and ksite.get("file") and not same_as_site:
        parts += [_section("kernel site"), Text(format_site(ksite))]
        if ksite.get("line"):
            path = resolve_path(str(ksite["file"]), workspace)
            excerpt = source_excerpt(path, int(ksite["line"]), 8 if full else 3)
            if excerpt is not None:
                parts.append(Syntax(excerpt[0], _LEXERS.get(os.path.splitext(path)[1], "text"),
                                    line_numbers=True, start_line=excerpt[1],
                                    highlight_lines={int(ksite["line"])}, theme="ansi_dark"))
    buffers = detail.get("buffers")
    if isinstance(buffers, list) and buffers:
        rows = [(str(b.get("name", "?")), " ".join(str(b[k]) for k in ("scope", "dtype")
                                                   if b.get(k)) +
                 (f"  {b['file']}:{b.get('line')}" if b.get("file") else ""))
                for b in buffers if isinstance(b, dict)]
        parts += [_section("buffers"), _kv_table(rows)]
    if detail.get("stack"):
        parts += [_section("stack"), Text("\n".join(map(str, detail["stack"]))[:4000])]

    paths = [(k.replace("_", " "), str(detail[k]))
             for k in ("generated_source", "wrapped_source", "path", "package", "command")
             if detail.get(k)]
    if paths:
        parts += [_section("files"), _kv_table(paths)]
    if detail.get("source_excerpt"):
        gen = str(detail.get("generated_source") or "")
        if gen:
            parts.append(_section("generated source"))
            parts.append(Syntax(str(detail["source_excerpt"]),
                                _LEXERS.get(os.path.splitext(gen)[1], "c"), line_numbers=True,
                                theme="ansi_dark"))
        elif str(detail["source_excerpt"]).strip() not in str(detail.get("diagnostic") or ""):
            # a diagnostic's own excerpt (already numbered), unless the diagnostic has it
            parts += [_section("excerpt"), Text(str(detail["source_excerpt"]))]
    if sig.get("kind") == "lowering":
        parts += render_tilelang(detail, full=full)
    rest = {k: v for k, v in detail.items() if k not in _SHOWN}
    if rest:
        limit = 4000 if full else 300
        parts += [_section("more detail"), _kv_table(
            [(k, json.dumps(v, default=repr)[:limit]) for k, v in rest.items()])]
    if st is not None and st.log_tail.strip():
        parts += [_section(f"log tail of {st.id}"),
                  Text(_tail(st.log_tail, None if full else 8), style="dim")]
    return Group(*parts)


# -- TileLang cells: arguments, pass timing, the IR before the failing pass, repro.py --------


def _read_lines(path: str, limit: int) -> tuple[str, int] | None:
    """The first ``limit`` lines of ``path`` and how many it has; None when unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    return "\n".join(lines[:limit]), len(lines)


def _buffer_lines(text: str, names: list[str]) -> set[int]:
    """1-based lines of ``text`` that allocate or bind one of the buffers ``names``."""
    hits = set()
    for n, line in enumerate(text.splitlines(), 1):
        head = line.strip().split("=", 1)[0].strip()
        if head in names:
            hits.add(n)
    return hits


def _pass_seconds(sec: Any) -> str:
    """A pass's seconds: milliseconds below one second (most passes take a few)."""
    if not isinstance(sec, (int, float)):
        return str(sec)
    return f"{sec * 1000:.1f} ms" if sec < 1 else human_seconds(sec)


def render_tilelang(detail: dict[str, Any], *, full: bool = False) -> list[RenderableType]:
    """Sections of a TileLang lowering cell: the kernel's arguments and where each came
    from, the slowest passes, the IR the failing pass received (implicated buffers
    highlighted), the diff made by the last pass that completed, and ``repro.py``."""
    parts: list[RenderableType] = []
    args = detail.get("args")
    if isinstance(args, dict) and args:
        sources = detail.get("arg_sources") if isinstance(detail.get("arg_sources"), dict) \
            else {}
        parts += [_section("kernel arguments"), _kv_table(
            [(str(k), f"{v!r}" + (f"   from {sources[k]}" if sources.get(k) else ""))
             for k, v in args.items()])]
    how = [(k, str(detail[k])) for k in ("execution_backend", "out_idx", "reference")
           if detail.get(k) is not None]
    built_by = detail.get("built_by")
    if isinstance(built_by, dict):
        how.insert(0, ("built by", ", ".join(f"{k} {v}" for k, v in built_by.items())))
    run = detail.get("file_run")
    if isinstance(run, dict) and run.get("entries"):
        how.append(("the file's run", "; ".join(map(str, run["entries"]))))
    if how:
        parts += [_section("as the file builds it"), _kv_table(how)]
    passes = detail.get("passes")
    if isinstance(passes, dict) and passes.get("slowest"):
        rows = [(str(name), _pass_seconds(sec) + (f"  ({runs} runs)" if runs != 1 else ""))
                for name, sec, runs in passes["slowest"]]
        head = f"slowest passes ({passes.get('passes')} passes, " \
               f"{human_seconds(passes.get('total_s'))} in all)"
        parts += [_section(head), _kv_table(rows)]
    buffers = [str(b.get("name")) for b in detail.get("buffers") or [] if isinstance(b, dict)]
    ir = detail.get("ir_before")
    if isinstance(ir, str):
        got = _read_lines(ir, 400 if full else 60)
        title = f"IR before {detail.get('ir_before_pass') or 'the failing pass'}"
        parts += [_section(title), Text(f"{ir}   (o: open in $EDITOR)", style="dim")]
        if got is None:
            parts.append(Text(f"(not readable here: {ir})", style="dim"))
        else:
            text, total = got
            parts.append(Syntax(text, "python", line_numbers=True, theme="ansi_dark",
                                highlight_lines=_buffer_lines(text, buffers), word_wrap=False))
            if total > text.count("\n") + 1:
                parts.append(Text(f"… {total - text.count(chr(10)) - 1} more lines in the file",
                                  style="dim"))
    diff = detail.get("last_pass_diff")
    if isinstance(diff, str):
        got = _read_lines(diff, 200 if full else 30)
        parts += [_section(f"diff made by the last pass that changed the IR: "
                           f"{detail.get('last_pass') or '?'}"), Text(diff, style="dim")]
        if got is not None:
            parts.append(Syntax(got[0], "diff", theme="ansi_dark", word_wrap=False))
    repro = detail.get("repro")
    if isinstance(repro, str):
        parts += [_section("reproduce"), Text(f"python {repro}")]
    return parts


def tilelang_editor_target(detail: dict[str, Any]) -> tuple[str, int | None] | None:
    """What ``o`` opens for a failing TileLang cell: the IR before the failing pass, at the
    first line allocating an implicated buffer; None when the cell has no such artifact."""
    ir = detail.get("ir_before") if isinstance(detail, dict) else None
    if not isinstance(ir, str) or not os.path.isfile(ir):
        return None
    buffers = [str(b.get("name")) for b in detail.get("buffers") or [] if isinstance(b, dict)]
    got = _read_lines(ir, 100_000)
    lines = sorted(_buffer_lines(got[0], buffers)) if got else []
    return ir, (lines[0] if lines else None)
def drift_section(drift: Any, *, full: bool = False) -> list[RenderableType]:
    """Where the drift starts: the first module past its limit, and the per-module max |diff|
    along the model (execution order) as a plot with the limits."""
    if not isinstance(drift, dict) or not isinstance(drift.get("curve"), list):
        return []
    curve = [c for c in drift["curve"] if isinstance(c, list) and len(c) == 3]
    first = drift.get("first_past_limit")
    facts: list[tuple[str, str]] = []
    if isinstance(first, dict):
        facts.append(("starts at", f"{first.get('module')} ({first.get('type')}): max|diff| "
                                   f"{number(first.get('max_diff'))} > limit "
                                   f"{number(first.get('limit'))}"))
    else:
        facts.append(("starts at", "no module past its limit"))
    worst = drift.get("worst")
    if isinstance(worst, dict) and worst.get("ratio") is not None:
        facts.append(("closest", f"{worst.get('module')} ({worst.get('type')}): "
                                 f"{number(worst.get('ratio'))} of its limit"))
    facts.append(("modules", f"{drift.get('compared', len(curve))} module call(s) compared"
                  + (f", every {drift['curve_every']}th plotted" if drift.get("curve_every")
                     else "")))
    skipped = drift.get("skipped") or []
    if skipped:
        facts.append(("skipped", "; ".join(f"{s.get('module')}: {s.get('reason')}"
                                           for s in skipped[:4] if isinstance(s, dict))))
    if drift.get("artifact"):
        facts.append(("curve", str(drift["artifact"])))
    parts: list[RenderableType] = [_section("where the drift starts"), _kv_table(facts)]
    plot = drift_plot(curve, drift.get("curve_first") if isinstance(first, dict) else None,
                      height=16 if full else 12)
    if plot is not None:
        parts.append(plot)
    return parts


class DriftPlot:
    """max |diff| and limit per module call (log scale), a vertical line where the drift
    starts (``first_index``: its position in ``curve``); drawn at the pane's width."""

    def __init__(self, curve: list[list[Any]], first_index: Any, *, height: int) -> None:
        self.points = [(i + 1, c[1], c[2]) for i, c in enumerate(curve)
                       if isinstance(c[1], (int, float)) and isinstance(c[2], (int, float))]
        self.first = first_index if isinstance(first_index, int) and \
            0 <= first_index < len(curve) else None
        self.height = height

    def __rich_console__(self, console: Any, options: Any) -> Any:
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
            fig.vertical_line(self.first + 1)
        fig.xlabel("module call (execution order)")
        yield Text.from_ansi(fig.build(), no_wrap=True, overflow="crop")


def drift_plot(curve: list[list[Any]], first_index: Any, *,
               height: int) -> RenderableType | None:
    """A :class:`DriftPlot` when there are two points or more and plotext is installed."""
    plot = DriftPlot(curve, first_index, height=height)
    if len(plot.points) < 2:
        return None
    try:
        import plotext._figure  # noqa: F401
    except ImportError:
        return None
    return plot


def render_probe(st: ProbeState, workspace: str | None, *, full: bool = False) -> RenderableType:
    """A probe without a selected signal: status, reason, error and log tail."""
    head = Text()
    head.append(f" {st.status} ", style="reverse bold")
    head.append(f"  {st.id}", style="bold")
    facts: list[tuple[str, str]] = []
    if st.status == "error":
        facts.append(("status", "could not be examined: the probe never reached its subject "
                                "(not a finding); fix the cause below and re-run"))
    if st.reason:
        facts.append(("reason", st.reason))
    if st.seconds is not None:
        facts.append(("seconds", human_seconds(st.seconds) + ("  (cached)" if st.cached else "")))
    if st.file:
        facts.append(("file", str(st.file)))
    deps = (st.result or {}).get("deps") or []
    if deps:
        facts.append(("deps", ", ".join(map(str, deps[:8])) + (" …" if len(deps) > 8 else "")))
    facts.append(("signals", str(len(st.keys))))
    parts: list[RenderableType] = [head, _kv_table(facts)]
    err = st.error or {}
    if isinstance(err, dict) and err.get("site"):
        site = err["site"]
        parts += [_section("raised at"), Text(format_site(site))]
        if site.get("line"):
            path = resolve_path(str(site["file"]), workspace)
            excerpt = source_excerpt(path, int(site["line"]), 8 if full else 3)
            if excerpt:
                parts.append(Syntax(excerpt[0], "python", line_numbers=True,
                                    start_line=excerpt[1], highlight_lines={int(site["line"])},
                                    theme="ansi_dark"))
    label = {"crashed": "stderr tail", "timeout": "log tail"}.get(st.status, "log tail")
    if st.log_tail.strip():
        parts += [_section(label), Text(_tail(st.log_tail, None if full else 40), style="dim")]
    elif st.status not in ("pending", "queued", "running"):
        parts.append(Text("(the probe wrote nothing to stdout or stderr)", style="dim"))
    return Group(*parts)


class DetailPane(VerticalScroll):
    """A scrolling pane showing one signal or one probe."""

    def __init__(self, *, full: bool = False, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.full = full
        self.subject: tuple[str, str] | None = None  # ("signal", key) / ("probe", id)
        self._shown: RenderableType = ""

    def compose(self):  # noqa: D102 - textual hook
        yield Static(id="detail-body", expand=True)

    def _set(self, renderable: RenderableType) -> None:
        self._shown = renderable
        self._body().update(renderable)

    def _body(self) -> Static:
        return self.query_one("#detail-body", Static)

    def show_signal(self, row: SignalRow, st: ProbeState | None, workspace: str | None) -> None:
        self.subject = ("signal", row.key)
        self._set(render_signal(row, st, workspace, full=self.full))
        self.scroll_home(animate=False)

    def show_probe(self, st: ProbeState, workspace: str | None) -> None:
        self.subject = ("probe", st.id)
        self._set(render_probe(st, workspace, full=self.full))
        self.scroll_home(animate=False)

    def show_text(self, text: str) -> None:
        if self.subject is None and isinstance(self._shown, Text) and self._shown.plain == text:
            return  # shown already: a re-render would lay the whole screen out again
        self.subject = None
        self._set(Text(text, style="dim"))

    def plain_text(self, width: int = 120) -> str:
        """What the pane shows, as plain text (tests, copy)."""
        from rich.console import Console

        console = Console(width=width, record=True, color_system=None, file=io.StringIO())
        console.print(self._shown)
        return console.export_text()
