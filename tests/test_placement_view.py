"""Placement text in the headless summary, the drill-down and markdown (report side, no torch)."""

from __future__ import annotations

from typing import Any

from laya_tui.core.report_types import ResultDict
from laya_tui.report.markdown import build_markdown
from laya_tui.report.views.detail import signal_detail
from laya_tui.report.views.placement import placement_lines, placement_text
from tests._signals import partial_report, partial_result, partial_signal

FIELD = {"on_device": 41, "fallback": 3, "share": 3 / 44, "unit": "generated-kernel placement",
         "graphs": 2, "outside": {"extern": 2, "fallback": 0, "custom": 1}}
NONE = {"on_device": None, "fallback": None, "share": None, "unit": None,
        "note": "eager on the CPU: no device or compiler placement to report"}


def _probe(field: dict[str, Any]) -> ResultDict:  # partial: what the placement views read
    return partial_result({"id": "explain/m[fp32,compile]", "status": "ok", "signals": [
        {"kind": "timing", "subject": "fwd: region wall", "value": 0.1,
         "detail": {"region": "fwd", "phase": "cold", "placement": field}}]})


def test_placement_text() -> None:
    assert placement_text(FIELD) == ("generated kernels 41 ops · outside 3 (6.82%) "
                                     "[extern 2, custom 1]")
    dev = {"on_device": 1233, "fallback": 2, "share": 2 / 1235, "unit": "device placement"}
    assert placement_text(dev) == "on device 1,233 ops · CPU 2 (0.162%)"
    assert placement_text(NONE) == NONE["note"]
    assert placement_text("junk") is None


def test_summary_line_lists_counted_placements_only() -> None:
    assert placement_lines([_probe(FIELD), _probe(NONE)]) == [
        "  placement: explain/m[fp32,compile] [fwd cold]: generated kernels 41 ops · outside 3 "
        "(6.82%) [extern 2, custom 1]"]


def test_drill_down_and_markdown_show_it() -> None:
    probe = _probe(FIELD)
    detail = signal_detail(probe["signals"][0], probe["id"])
    text = repr(detail)
    assert "generated kernels 41 ops · outside 3" in text
    assert "on_device" not in text  # shown once, as text, not dumped raw
    eager = repr(signal_detail(_probe(NONE)["signals"][0], "x"))
    assert "no device or compiler placement" in eager
    report = partial_report({"summary": {"probes": 1, "seconds": 1.0, "passed": True, "signals": {},
                          "gates": []}, "probes": [probe], "gates": []})
    md = build_markdown(report)
    row = "| `explain/m[fp32,compile]` | fwd cold | 41 | 3 | 6.82% | generated-kernel placement |"
    assert row in md


def test_phases_with_one_placement_share_a_line() -> None:
    probe = _probe(FIELD)
    warm = partial_signal({"kind": "timing", "subject": "fwd: region wall", "value": 0.1,
                           "detail": {"region": "fwd", "phase": "warm", "placement": FIELD}})
    probe["signals"].append(warm)
    assert len(placement_lines([probe])) == 1
    assert "[fwd cold, fwd warm]" in placement_lines([probe])[0]
