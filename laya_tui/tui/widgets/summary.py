"""The header of the overview: probe counts per status, signal counts per kind, gate verdict
and a progress bar while probes run."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from laya_tui.core.logtext import printable
from laya_tui.core.signals import KINDS
from laya_tui.report.verdict import not_run, ungated, ungated_text
from laya_tui.report.views.legend import status_word
from laya_tui.tui.model import RunModel

#: The statuses the first line counts, in order (ok and failed always, the rest when > 0).
STATUS_ORDER = ("ok", "failed", "error", "skipped", "crashed", "timeout", "running", "queued")
_BAD = frozenset(("failed", "error", "crashed", "timeout"))


def status_counts(model: RunModel, *, loading: bool) -> list[tuple[str, int, bool]]:
    """``(label, count, bad)`` for the first line, in order: what a front end adds to the
    header (a new count) goes here. Loading a saved report, its probes not yet read are
    one "loading" count, not "running" and "queued" ones."""
    counts = model.status_counts()
    out: list[tuple[str, int, bool]] = []
    for status in STATUS_ORDER:
        n = counts.get(status, 0)
        if loading and status in ("running", "queued"):
            continue
        if n or status in ("ok", "failed"):
            out.append((status_word(status), n, status in _BAD and n > 0))
    if loading:
        waiting = sum(counts.get(s, 0) for s in ("running", "queued", "pending"))
        if waiting:
            out.append(("loading", waiting, False))
    return out


class SummaryText(Static):
    """Three lines of counts (status, kinds, gates); restyled by component classes."""

    lines: tuple[Text, Text, Text] = (Text(), Text(), Text())

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "summary--label", "summary--pass", "summary--fail", "summary--dim",
        "summary--count", "summary--bad",
    }

    def _s(self, name: str) -> Style:
        return self.get_component_rich_style(f"summary--{name}", partial=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._not_run: dict[str, tuple[int, str | None]] = {}  # id -> (result's id(), why)

    def _built_not_run(self, model: RunModel, results: list[dict[str, Any]]) -> dict[str, int]:
        """``{cause: cells}`` built but not run (report.verdict), each result read once."""
        out: dict[str, int] = {}
        for r in results:
            hit = self._not_run.get(r["id"])
            if hit is None or hit[0] != id(r):
                hit = self._not_run[r["id"]] = (id(r), _not_run(model, r))
            if hit[1]:
                out[hit[1]] = out.get(hit[1], 0) + 1
        return out

    def show(self, model: RunModel, *, watching: bool, running: bool) -> None:
        """Re-render from the model (cheap: a few counters)."""
        loading = model.replay and (running or not model.discovered)
        results = model.results()
        built = self._built_not_run(model, results)
        label, dim, cnt, bad = self._s("label"), self._s("dim"), self._s("count"), self._s("bad")
        line = Text()
        line.append("probes ", style=label)
        line.append(str(len(model.probes)), style=cnt)
        for word, n, is_bad in status_counts(model, loading=loading):
            line.append(f"  {word} ", style=dim)
            line.append(str(n), style=bad if is_bad else cnt)
        if built:  # counted apart (they passed what they reached, but never ran); last, so
            # a narrow terminal cuts this and not the failed count
            why = next(iter(built)) if len(built) == 1 else "; ".join(built)
            n_built = str(sum(built.values()))
            word = f"built, not run ({why})"
            if self.size.width and line.cell_len + len(word) + len(n_built) + 3 > \
                    self.size.width:
                word = "not run"  # 80 columns: the short word, never cut mid-word
            line.append(f"  {word} ", style=dim)
            line.append(n_built, style=cnt)
        if watching:
            line.append("   ◉ watching", style=label)
        kinds = Text()
        kinds.append("signals", style=label)
        shown = 0
        for kind in KINDS:
            n = model.kind_counts.get(kind, 0)
            if n:
                kinds.append(f"  {kind} ", style=dim)
                kinds.append(f"{n:,}", style=cnt)
                shown += 1
        if not shown:
            kinds.append("  loading…" if loading else "  none yet", style=dim)
        gates = Text()
        gates.append("gates ", style=label)
        if loading:
            gates.append("loading report…", style=dim)
        elif not model.discovered:
            gates.append("discovering probes…", style=dim)
        elif not results:
            gates.append("waiting for results", style=dim)
        elif (evaluated := model.gates_ready()) is None:
            gates.append("evaluating…", style=dim)  # off the loop: the app shows it next
        else:
            failed = [g for g in evaluated if not g["passed"]]
            if failed:
                gates.append(" FAIL ", style=self._s("fail"))
                gates.append("  " + ", ".join(
                    f"{g['name']} ({len(g.get('failures', []))})" for g in failed), style=dim)
            else:
                gates.append(" PASS ", style=self._s("pass"))
                gates.append(f"  {len(evaluated)} gates hold", style=dim)
            kinds_left = ungated([r for r in results if r.get("status") == "failed"],
                                 evaluated)
            if kinds_left:
                gates.append(f"  ·  {ungated_text(kinds_left)} (--fail-on failed or a "
                             "baseline gates them)", style=dim)
            if running:
                gates.append("  (partial: probes still running)", style=dim)
        if model.errors:
            gates.append(f"  {len(model.errors)} probe file error(s)", style=bad)
        if model.source:
            gates.append(f"   ·  {printable(model.source)}  (i: details)", style=dim)
        self.lines = (line, kinds, gates)


class RunProgress(Static):
    """A one-line progress bar for the current run (no timers, nothing animates)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "run-progress--done", "run-progress--active", "run-progress--todo"}
    WIDTH = 22

    def show(self, done: int, total: int, label: str = "") -> None:
        text = Text(label)
        if total:
            counts = f" {done}/{total} {100 * done // total:3d}%"
            room = self.size.width - len(label) - len(counts) if self.size.width else 0
            width = max(4, min(self.WIDTH, room)) if room else self.WIDTH
            filled = round(width * done / total)
            # the colour is chosen here, not by a class on the widget: a class change is
            # styled only on a later refresh, which left a finished bar in the running colour
            part = "run-progress--active" if done < total else "run-progress--done"
            text.append("━" * filled, style=self.get_component_rich_style(part, partial=True))
            text.append("━" * (width - filled), style=self.get_component_rich_style(
                "run-progress--todo", partial=True))
            text.append(counts)
        self.update(text, layout=False)


class SummaryBar(Vertical):
    """Status counts and progress, signal kinds, gate verdict: three lines."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="summary-top"):
            yield SummaryText(id="summary-status")
            yield RunProgress(id="progress")
        yield Static(id="summary-kinds")
        yield Static(id="summary-gates")

    def show(self, model: RunModel, *, watching: bool = False) -> None:
        done, total = model.progress()
        running = done < total
        text = self.query_one(SummaryText)
        text.show(model, watching=watching, running=running)
        status, kinds, gates = text.lines
        text.update(status, layout=False)  # fixed one-line widgets: no reflow per update
        self.query_one("#summary-kinds", Static).update(kinds, layout=False)
        self.query_one("#summary-gates", Static).update(gates, layout=False)
        bar = self.query_one(RunProgress)
        bar.show(done, total, "read " if model.replay else "")


def _not_run(model: RunModel, result: dict[str, Any]) -> str | None:
    """:func:`report.verdict.not_run`, without its pass over every signal when the model
    knows the answer: the probe's rows are the result's signals, and none is a lowering
    (the only kind that says why a cell was not run). A flood of 200,000 signals made
    that pass one stall of ~40 ms as its result came in."""
    st = model.probes.get(result.get("id", ""))
    sigs = result.get("signals")
    if st is not None and st.report_entry is result and isinstance(sigs, list) \
            and len(sigs) == len(st.rows) and not st.kinds.get("lowering"):
        return None
    return not_run(result)
