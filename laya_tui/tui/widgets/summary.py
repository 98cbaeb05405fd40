"""The header of the overview: probe counts per status, signal counts per kind, gate verdict
and a progress bar while probes run."""

from __future__ import annotations

import re
from collections import Counter
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from laya_tui.core.logtext import printable
from laya_tui.core.signals import KINDS
from laya_tui.report.verdict import ungated, verdict_parts
from laya_tui.report.views.legend import State, not_run, state_word
from laya_tui.tui.model import ProbeState, RunModel
from laya_tui.tui.widgets.probe_tree import probe_state

#: The states the first line counts, in order (ok and finding always, the rest when > 0).
STATE_ORDER = (State.OK, State.FINDING, State.CRASHED, State.TIMEOUT, State.NOT_EXAMINED,
               State.NOT_RUN, State.NOT_COMPARED, State.SKIPPED, "running", "queued")
_BAD = frozenset((State.FINDING, State.NOT_EXAMINED, State.CRASHED, State.TIMEOUT))
#: States that keep a passing verdict from being plain green (the warning colour).
_WARN = frozenset((State.FINDING, State.NOT_EXAMINED, State.CRASHED, State.TIMEOUT))


def state_counts_of(model: RunModel) -> Counter[str]:
    """Probes per state (report.views.legend; live statuses as they are)."""
    return Counter(probe_state(st) for st in model.probes.values())


def status_counts(model: RunModel, *, loading: bool,
                  counts: Counter[str] | None = None) -> list[tuple[str, int, bool]]:
    """``(label, count, bad)`` for the first line, in order: what a front end adds to the
    header (a new count) goes here. Loading a saved report, its probes not yet read are
    one "loading" count, not "running" and "queued" ones."""
    if counts is None:
        counts = state_counts_of(model)
    out: list[tuple[str, int, bool]] = []
    for state in STATE_ORDER:
        n = counts.get(state, 0)
        if loading and state in ("running", "queued"):
            continue
        if n or state in (State.OK, State.FINDING):
            out.append((state_word(state) if state not in ("running", "queued") else state,
                        n, state in _BAD and n > 0))
    if loading:
        waiting = sum(counts.get(s, 0) for s in ("running", "queued", "pending"))
        if waiting:
            out.append(("loading", waiting, False))
    return out


def _causes(states: list[ProbeState]) -> dict[str, int]:
    """``{why: cells}`` of the cells built but not run or not compared."""
    out: Counter[str] = Counter()
    for st in states:
        if st.report_entry is not None and probe_state(st) in (State.NOT_RUN,
                                                               State.NOT_COMPARED):
            out[not_run(st.report_entry) or "not run"] += 1
    return dict(out.most_common())


class SummaryText(Static):
    """Three lines of counts (status, kinds, gates); restyled by component classes."""

    lines: tuple[Text, Text, Text] = (Text(), Text(), Text())

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "summary--label", "summary--pass", "summary--fail", "summary--dim",
        "summary--count", "summary--bad", "summary--warn",
    }

    def _s(self, name: str) -> Style:
        return self.get_component_rich_style(f"summary--{name}", partial=True)

    def show(self, model: RunModel, *, watching: bool, running: bool) -> None:
        """Re-render from the model (cheap: a few counters)."""
        loading = model.replay and (running or not model.discovered)
        results = model.results()
        counts = state_counts_of(model)
        label, dim, cnt, bad = self._s("label"), self._s("dim"), self._s("count"), self._s("bad")
        line = Text()
        line.append("probes ", style=label)
        line.append(str(len(model.probes)), style=cnt)
        for word, n, is_bad in status_counts(model, loading=loading, counts=counts):
            line.append(f"  {word} ", style=dim)
            line.append(str(n), style=bad if is_bad else cnt)
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
            loose = sum(ungated([r for r in results if r.get("status") == "failed"],
                                evaluated).values())
            parts = verdict_parts(not failed, counts, loose, _causes(
                list(model.probes.values())))
            names = ", ".join(f"{g['name']} ({len(g.get('failures', []))})" for g in failed)
            rest = " · ".join(parts[1:])
            # too wide for the screen: the label and the causes go, so the counts show
            narrow = len(f"gates  PASS    {names}  ·  {rest}") > self.app.size.width - 2
            if narrow:
                gates = Text()
                rest = " · ".join(re.sub(r" \(.*\)$", "", p) for p in parts[1:])
            if failed:
                gates.append(" FAIL ", style=self._s("fail"))
                gates.append(("" if narrow else " ") + " " + names, style=dim)
            else:  # not plain green while a finding or an unexamined cell is there
                warn = any(counts.get(k) for k in _WARN)
                gates.append(" PASS ", style=self._s("warn" if warn else "pass"))
            gates.append((" · " if narrow else "  ·  ") + rest, style=dim)
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


