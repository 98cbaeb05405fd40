"""The drift curve in the detail pane: the first module past its limit, and the plot."""

from __future__ import annotations

import io

from rich.console import Console

from laya_tui.core.results import Signal
from laya_tui.tui.model import SignalRow
from laya_tui.tui.widgets.detail import drift_section, render_signal

DRIFT = {
    "first_past_limit": {"module": "cancel", "type": "Cancel", "call": 0, "dtype": "bfloat16",
                         "max_diff": 3.2, "limit": 0.15},
    "index": 2, "curve_first": 2, "compared": 4,
    "curve": [["pair.a", 0.004, 0.05], ["pair", 0.004, 0.05], ["cancel", 3.2, 0.15],
              ["head", 1.1, 0.07]],
    "skipped": [{"module": "path", "reason": "output structure differs"}],
    "artifact": "/tmp/x.drift.json",
}


def _text(renderable, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_tolerance_detail_shows_where_the_drift_starts_with_a_plot():
    sig = Signal(kind="tolerance", probe="explain/m[eager]", subject="out", value=1.1,
                 limit=0.05, passed=False, detail={"drift": DRIFT})
    row = SignalRow(key="k", probe=sig.probe, family="explain", sig=sig, seq=0,
                    failing=True)
    text = _text(render_signal(row, None, None))
    assert "where the drift starts" in text
    assert "cancel (Cancel): max|diff| 3.2 > limit 0.15" in text
    assert "path: output structure differs" in text and "/tmp/x.drift.json" in text
    assert "module call (execution order)" in text  # the plot's axis label
    assert "max|diff|" in text and "limit" in text
    assert "more detail" not in text  # the drift entry is not dumped as raw JSON


def test_no_drift_entry_no_section_and_no_past_module():
    assert drift_section(None) == []
    calm = dict(DRIFT, first_past_limit=None, curve_first=None, skipped=[])
    text = _text(drift_section(calm)[1])
    assert "no module past its limit" in text
