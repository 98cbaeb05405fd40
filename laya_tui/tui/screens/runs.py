"""Runs over time for one probe: tolerance deltas and timings across re-runs (plotext)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from laya_tui.report.views.text import human_seconds, number
from laya_tui.tui.model import Changes, RunPoint
from laya_tui.tui.widgets.footer import KeyFooter

if TYPE_CHECKING:
    from laya_tui.tui.app import LayaApp


def tolerance_series(runs: list[RunPoint]) -> dict[str, list[tuple[int, float]]]:
    """``{subject: [(run, value)]}`` over runs (non-finite values left out)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for rp in runs:
        for subject, (value, _limit, _passed) in rp.tolerances.items():
            if value is not None and math.isfinite(value):
                out.setdefault(subject, []).append((rp.run, float(value)))
    return out


def timing_series(runs: list[RunPoint]) -> dict[str, list[tuple[int, float]]]:
    """``{"probe": [(run, seconds)], subject: [...]}`` (cached runs left out)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for rp in runs:
        if rp.cached:
            continue
        if rp.seconds is not None:
            out.setdefault("probe", []).append((rp.run, float(rp.seconds)))
        for subject, s in rp.timings.items():
            out.setdefault(subject, []).append((rp.run, s))
    return out


class RunsScreen(Screen[None]):
    """A regression while editing is seen, not read: one point per run of the probe."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,h", "back", "Back"),
    ]

    def __init__(self, probe_id: str) -> None:
        super().__init__()
        self.probe_id = probe_id

    @property
    def laya(self) -> LayaApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Static(f"runs over time  ›  {self.probe_id}   (r re-runs it; w watches)",
                     id="crumbs")
        with Horizontal(id="plots"):
            yield PlotextPlot(id="tolerance-plot")
            yield PlotextPlot(id="timing-plot")
        yield Static(id="runs-table")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.redraw()

    def apply_changes(self, changes: Changes) -> None:
        if self.probe_id in changes.finished:
            self.redraw()

    def redraw(self) -> None:
        st = self.laya.model.probes.get(self.probe_id)
        runs = st.runs if st else []
        self._plot("#tolerance-plot", tolerance_series(runs), "tolerance delta per run",
                   "max |diff|", limits=_limits(runs))
        self._plot("#timing-plot", timing_series(runs), "seconds per run", "seconds")
        table = Table(box=None, padding=(0, 2), header_style="bold")
        for col in ("run", "status", "seconds", "tolerances"):
            table.add_column(col)
        for rp in runs[-12:]:
            tol = ", ".join(f"{s} {number(v)}{' ✗' if p is False else ''}"
                            for s, (v, _l, p) in rp.tolerances.items())
            table.add_row(str(rp.run), rp.status,
                          "cached" if rp.cached else human_seconds(rp.seconds), tol or "-")
        if not runs:
            table.add_row("-", "no finished run yet", "", "")
        self.query_one("#runs-table", Static).update(table)

    def _plot(self, selector: str, series: dict[str, list[tuple[int, float]]], title: str,
              ylabel: str, limits: dict[str, float] | None = None) -> None:
        widget = self.query_one(selector, PlotextPlot)
        plt = widget.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(title)
        plt.xlabel("run")
        plt.ylabel(ylabel)
        runs = sorted({r for pts in series.values() for r, _ in pts})
        for subject, pts in series.items():
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            plt.plot(xs, ys, label=subject[:30], marker="braille")
            plt.scatter(xs, ys, marker="dot")
        if runs and limits:
            plt.horizontal_line(min(limits.values()))  # the tightest limit
        if runs:
            plt.xticks([float(r) for r in runs])
        widget.refresh()

    def rerun_targets(self) -> list[str]:
        """``r`` here re-runs the plotted probe."""
        return [self.probe_id]

    def action_back(self) -> None:
        self.app.pop_screen()


def _limits(runs: list[RunPoint]) -> dict[str, float]:
    out: dict[str, float] = {}
    for rp in runs:
        for subject, (_v, limit, _p) in rp.tolerances.items():
            if isinstance(limit, (int, float)):
                out[subject] = float(limit)
    return out
