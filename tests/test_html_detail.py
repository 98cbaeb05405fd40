"""The page's detail panels are the dashboard's: every detail the page packs (a string
table, shared shapes: ``report/views/packed.py``) unpacks in Chromium to exactly the
sections of ``report/views/detail.py``, and the text a reader sees in the page's panel and
in the dashboard's full-screen detail (``tui/widgets/detail.py``) carries the same facts,
titles and blocks for the same signal. A 20,000-signal page stays within a size per row.

Needs Chromium (``apt-get install -y chromium``); skipped with that hint without it.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import ReportDict
from laya_tui.report.html import build_html
from laya_tui.report.views.detail import (
    Block,
    Detail,
    Facts,
    FileHead,
    ProbeLog,
    Source,
    probe_detail,
    signal_detail,
)
from laya_tui.report.views.packed import sections, unpack
from laya_tui.report.views.page import page_data
from tests._browser import INSTALL_HINT, Browser, find_chromium
from tests._tui import DEMO_REPORT, DEMO_WS, RECORDED, REPO, TILELANG_REPORT

CHROMIUM = find_chromium()
REPORTS = [p for p in sorted(RECORDED.glob("*_report.json"))]


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    with Browser(CHROMIUM) as b:
        yield b


def _lowering_cell(tmp_path: Path) -> dict[str, Any]:
    """A failing TileLang cell with every section a lowering signal can have: the IR before
    the failing pass (a file head with a buffer highlighted), the last pass's diff, a
    generated-source block, kernel arguments, the slowest passes and repro.py."""
    ir = tmp_path / "ir_before.py"
    ir.write_text("def main(A):\n    acc = T.alloc_fragment((16,), 'float32')\n    A[0] = acc[0]\n")
    diff = tmp_path / "last.diff"
    diff.write_text("--- a\n+++ b\n-x\n+y\n")
    sig = {"kind": "lowering", "subject": "gemm/lower", "passed": False,
           "reason": "lowering failed", "site": {"file": "kernels/gemm.py", "line": 3},
           "detail": {"kernel": "gemm", "target": "c", "dtype": "fp32", "spec": "cpu",
                      "outcome": "lower-failed", "diagnostic": "bad\x00 fill\nsecond line",
                      "buffers": [{"name": "acc", "scope": "local.fragment",
                                   "dtype": "float32"}],
                      "args": {"M": 16}, "arg_sources": {"M": "the file's run"},
                      "passes": {"passes": 3, "total_s": 0.5,
                                 "slowest": [["tl.LowerTileOp", 0.4, 1]]},
                      "ir_before": str(ir), "ir_before_pass": "tl.LowerTileOp",
                      "last_pass_diff": str(diff), "last_pass": "tl.Simplify",
                      "repro": str(tmp_path / "repro.py"), "generated_source": "k.c",
                      "source_excerpt": "  1 int main() {}", "stage": "lower",
                      "seconds": {"trace": 0.1, "lower": 0.4}, "extra": {"k": [1, 2]}}}
    drift = {"kind": "tolerance", "subject": "logits", "value": 0.2, "limit": 1e-3,
             "passed": False, "detail": {"argmax_match": 5, "rows": 7, "top2_gap_min": 0.01,
                                         "drift": {"curve": [["a", 1e-5, 1e-3],
                                                             ["b", 2e-2, 1e-3]],
                                                   "first_past_limit": {"module": "b",
                                                                        "type": "Linear",
                                                                        "max_diff": 2e-2,
                                                                        "limit": 1e-3},
                                                   "curve_first": 1}}}
    return {"id": "tilelang/gemm[c,fp32,cpu]", "family": "tilelang", "status": "failed",
            "reason": "lowering failed", "seconds": 0.5, "cached": False, "deps": [],
            "signals": [sig, drift], "log_tail": "tail line\n", "file": "probes/t.py",
            "params": {}}


def _reports(tmp_path: Path) -> list[tuple[ReportDict, str]]:
    out = [(json.loads(p.read_text()), str(DEMO_WS if p == DEMO_REPORT else REPO))
           for p in REPORTS]
    demo = json.loads(DEMO_REPORT.read_text())
    demo["probes"].append(_lowering_cell(tmp_path))
    out.append((demo, str(DEMO_WS)))
    return out


def _expected(report: ReportDict) -> tuple[list[Any], list[Any]]:
    """The view model's sections of every probe and signal, as the page draws them."""
    probes = [p for p in report["probes"] if isinstance(p, dict)]
    index = {str(p.get("id", "")): pi for pi, p in enumerate(probes)}
    of_probes, of_signals = [], []
    for p in probes:
        pid = str(p.get("id", ""))
        sigs = p.get("signals") or []
        of_probes.append(sections(probe_detail(p, signals=len(sigs)), index))
        has_log = bool(str(p.get("log_tail") or "").strip())
        of_signals += [sections(signal_detail(s, pid, has_log=has_log), index)
                       for s in sigs if isinstance(s, dict)]
    return json.loads(json.dumps(of_probes)), json.loads(json.dumps(of_signals))


def _odd_signals() -> dict[str, Any]:
    """Plain signals whose values differ only in type, repeat, hold lists or NaN, or whose
    sites are odd: the page packs them from each distinct value once."""
    site = {"file": "probes/flood.py", "line": 5, "func": "forward"}
    sigs = [{"kind": "fallback", "subject": f"op{i}", "count": c, "bytes": b, "site": s,
             "reason": r, "fix": f, "value": v}
            for i, (c, b, s, r, f, v) in enumerate([
                (1, 1024, site, "r", "pad", None), (True, 1024.0, site, "r", "pad", None),
                (1.0, 1024, {**site, "line": 5.0}, "r", "pad", None),
                (True, 1024.0, site, "r", "", None),
                (1.0, 1024, {**site, "line": True}, "r\nsecond", "pad", None),
                (None, None, {**site, "line": 5.0}, "", None, 0.5),
                (2, 3, {"file": "a.py"}, "x" * 400, "pad", float("nan")),
                (2, 3, {"file": ["a.py"]}, "r", "pad", [1, 2]), (2, 3, "site", 7, 0, "v"),
                (2, 3, None, "r\x00", "pad", {"a": 1}), (1, 1024, site, "r", "pad", None)])]
    probe = {"id": "flood/odd", "family": "flood", "status": "ok", "seconds": 1.0,
             "signals": sigs, "log_tail": "x"}
    other = {"id": "flood/other", "family": "flood", "status": "ok", "seconds": 1.0,
             "signals": [dict(s) for s in sigs], "log_tail": ""}
    return {"probes": [probe, other]}


def test_the_packed_rows_are_the_view_models_sections(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_show import big_report

    reports = [r for r, _ in _reports(tmp_path)] + [big_report(3000), _odd_signals()]
    for report in reports:
        data = page_data(report)
        _, of_signals = _expected(report)
        got = [unpack(p, data["shapes"], data["strings"]) for p in data["signals"]["details"]]
        assert json.loads(json.dumps(got)) == of_signals


def test_every_packed_detail_unpacks_to_the_view_models_sections(browser, tmp_path):
    kinds: set[str] = set()
    for n, (report, ws) in enumerate(_reports(tmp_path)):
        page = tmp_path / f"p{n}.html"
        page.write_text(build_html(report, workspace=ws), encoding="utf-8")
        browser.open(page.as_uri())
        assert browser.console_errors() == []
        of_probes, of_signals = _expected(report)
        got = browser.eval("JSON.stringify([D.probes.map(p => unpack(p[9])),"
                           " MAIN.table.details.map(unpack)])")
        assert json.loads(got) == [of_probes, of_signals], report["probes"][0]["id"]
        kinds |= {sec[0] for detail in of_probes + of_signals for sec in detail}
    assert kinds == {"f", "src", "b", "log", "file", "plot"}  # every section type seen


def _tui_text(detail: Detail, workspace: str, log: str) -> str:
    """The dashboard's full-screen detail of ``detail``, as plain text (wide: no wrap)."""
    from rich.console import Console

    from laya_tui.tui.widgets.detail import Renderer

    console = Console(width=400, file=io.StringIO(), record=True, color_system=None)
    console.print(Renderer(workspace, lambda probe: log).detail(detail))
    return console.export_text()


def _fragments(detail: Detail, log: str) -> list[str]:
    """What both drawings must show, in order: titles, each fact's label and value, the
    call site, plain blocks, file heads and the log tail."""
    out: list[str] = []
    for sec in detail.sections:
        if isinstance(sec, Facts):
            out += [sec.title] if sec.title else []
            out += [f"{label} {value}" for label, value in sec.rows]
        elif isinstance(sec, Source):
            out.append(f"{sec.title} {sec.where}")
        elif isinstance(sec, Block):
            out += [sec.title] + ([sec.text] if sec.lang is None else [])
        elif isinstance(sec, ProbeLog):
            out += [sec.title, log] if log.strip() else []
        elif isinstance(sec, FileHead):
            out.append(sec.title)  # (a plot is drawn, not written: plotext, an SVG)
    return [" ".join(f.split()) for f in out if f.strip()]


def _in_order(text: str, fragments: list[str]) -> list[str]:
    """The fragments not found in ``text`` (whitespace-normalised) one after another."""
    flat, at, missing = " ".join(text.split()), 0, []
    for f in fragments:
        found = flat.find(f, at)
        if found < 0:
            missing.append(f)
        else:
            at = found + len(f)
    return missing


@pytest.mark.parametrize("report_path", [DEMO_REPORT, TILELANG_REPORT],
                         ids=lambda p: p.stem)
def test_the_page_and_the_dashboard_show_the_same_detail_text(browser, tmp_path,
                                                              report_path):
    report = json.loads(report_path.read_text())
    if report_path == DEMO_REPORT:
        report["probes"].append(_lowering_cell(tmp_path))
    ws = str(DEMO_WS if report_path == DEMO_REPORT else REPO)
    page = tmp_path / "page.html"
    page.write_text(build_html(report, workspace=ws), encoding="utf-8")
    browser.open(page.as_uri())
    row = 0
    checked = 0
    for p in report["probes"]:
        log = str(p.get("log_tail") or "")
        for sig in p.get("signals") or []:
            detail = signal_detail(sig, p["id"], has_log=bool(log.strip()))
            wanted = _fragments(detail, log)
            if row < 40 or sig.get("passed") is False:  # the failing ones, and a sample
                browser.eval(f"openSignal(MAIN, {row})")
                shown = browser.eval("document.querySelector('#detail').innerText")
                assert _in_order(shown, wanted) == [], (p["id"], sig.get("subject"))
                assert _in_order(_tui_text(detail, ws, log), wanted) == [], sig.get("subject")
                checked += 1
            row += 1
    assert checked >= 10


def test_a_large_pages_size_is_bounded_per_row(tmp_path):
    """The flood of bench_show (distinct subjects, counts, bytes, reasons, sites): the page
    carries each row's own texts and ids, not its detail's titles and labels again."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_show import big_report

    n = 20_000
    page = build_html(big_report(n), workspace=str(REPO)).encode()
    per_row = len(page) / n
    assert per_row < 130, per_row  # 33 MB / 100,000 rows before packing: 330 per row
