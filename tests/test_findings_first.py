"""Issue 42 item 3, findings first: one severity order (report.severity) for the signal
table's default order, the markdown summary, the annotations and SARIF. The table opens on
findings at 80x24 and 160x45 (not the environment, not a cast note, not a host bounce that
did not occur), and at 80 columns the reason column is readable."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.report_types import ReportDict, ResultDict, SignalDict
from laya_tui.report.annotations import annotation_lines
from laya_tui.report.findings import collect_findings, prioritised
from laya_tui.report.markdown import build_markdown
from laya_tui.report.severity import (
    Severity,
    is_finding,
    probe_severity,
    rule_severity,
    signal_severity,
)
from laya_tui.report.sources import Sources
from laya_tui.report.views.signals import COLUMN_KEYS
from laya_tui.tui.widgets.table_bands import row_band
from tests._signals import partial_result, partial_signal, row_at, rows_of
from tests._tui import DEMO_REPORT, DEMO_WS, recorded_app

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 45), id="160x45")]


def _sig(kind: str, probe: str, **fields: Any) -> SignalDict:
    return partial_signal({"kind": kind, "probe": probe, **fields})


def noisy_report() -> ReportDict:
    """The demo report with the noise a user met first in the table (issue 42): more
    environment facts, a ``cast int64->bool`` and a zero-count host bounce, put first in the
    report."""
    report: ReportDict = copy.deepcopy(json.loads(DEMO_REPORT.read_text()))
    facts = next(p for p in report["probes"] if p["id"] == "env/demo_facts")
    facts["signals"][:0] = [_sig("environment", facts["id"], subject=f"lib{i}",
                                 value=f"1.{i}") for i in range(6)]
    llama = next(p for p in report["probes"] if p["id"] == "explain/tiny_llama_forward")
    llama["signals"][:0] = [
        _sig("host_bounce", llama["id"], subject="region forward", count=0, bytes=0,
             reason="no device in region"),
        _sig("cast", llama["id"], subject="aten::_to_copy", count=2, reason="int64->bool",
             site={"file": "model.py", "line": 7}),
    ]
    return report


def test_the_bands_order_findings_by_severity():
    order = [
        _sig("tolerance", "p", subject="y", value=0.2, limit=0.05, passed=False),
        _sig("fallback", "p", subject="aten::neg", count=2),
        _sig("recompile", "p", subject="f", count=1),
        _sig("host_bounce", "p", subject="d2h", count=3),
        _sig("cast", "p", subject="aten::_to_copy", count=1, reason="int64->bool"),
        _sig("tolerance", "p", subject="y", value=0.01, limit=0.05, passed=True),
        _sig("timing", "p", subject="run", seconds=0.1),
        _sig("host_bounce", "p", subject="region forward", count=0),
        _sig("environment", "p", subject="torch", value="2.5"),
    ]
    bands = [signal_severity(s) for s in order]
    assert bands == sorted(bands) and len(set(bands)) == len(bands)
    assert [is_finding(b) for b in bands] == [True] * 5 + [False] * 4
    # a probe: could not be examined first, a failed one at least a finding
    def probe(status: str, signals: list[SignalDict]) -> ResultDict:
        return partial_result({"status": status, "signals": signals})

    assert probe_severity(probe("error", [])) == Severity.NOT_EXAMINED
    assert probe_severity(probe("failed", [order[-1]])) == Severity.OTHER
    assert probe_severity(probe("ok", order[3:])) == Severity.HOST_BOUNCE
    # a passing check a baseline gate fails on is a finding of its kind, not a fact
    assert rule_severity("laya/tolerance", order[5]) == Severity.FAILED_CHECK
    assert rule_severity("laya/not-examined", None) == Severity.NOT_EXAMINED


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES)
async def test_the_table_opens_on_findings(size, tmp_path: Path):
    path = tmp_path / "noisy.json"
    path.write_text(json.dumps(noisy_report()))
    app = recorded_app(report=path, workspace=str(DEMO_WS))
    async with app.run_test(size=size) as pilot:
        await app.settled()
        await pilot.pause()
        table = app.main_screen.table
        lines = [table.render_line(y).text for y in range(table.size.height)]
        rows = [table.row_at(int(table.scroll_y) + i) for i in range(len(lines) - 1)]
        shown = [(r, line) for r, line in zip(rows, lines[1:], strict=True) if r is not None]
        assert len(shown) >= 8, lines
        bands = [row_band(row_at(table, i)) for i in range(table.row_count)]
        assert bands == sorted(bands)  # every row, most severe first
        findings = sum(1 for b in bands if is_finding(b))
        first = shown[:min(findings, len(shown))]
        assert all(is_finding(row_band(r)) for r, _ in first), [r.sig.kind for r, _ in first]
        top, top_line = shown[0]
        assert top.failing and top.sig.kind == "tolerance"  # the failing check, at the top
        kinds = [r.sig.kind for r, _ in shown]
        assert kinds.index("fallback") < kinds.index("recompile") < kinds.index("cast")
        for r, _ in first:
            assert r.sig.kind != "environment" and not (r.sig.kind == "host_bounce"
                                                       and r.sig.count == 0)
        # not findings: the environment and the host bounce that did not occur come last
        last = [row_at(table, i) for i in range(table.row_count - 7, table.row_count)]
        assert {r.sig.kind for r in last} == {"environment"}
        zero = next(i for i in range(table.row_count)
                    if row_at(table, i).sig.get("count") == 0)
        assert zero > findings - 1
        # the reason is readable: its start shows on the first row, at 80 columns too
        reason = str(top.sig.get("reason"))
        assert reason[:12] in top_line, top_line
        widths = dict(zip(COLUMN_KEYS, table.layout_cols.fit(table.size.width), strict=True))
        assert widths["reason"] >= 13 and widths["subject"] >= 11, widths
        assert sum(w + 1 for w in widths.values() if w) + 1 <= table.size.width


def test_markdown_and_annotations_follow_the_same_order():
    report = noisy_report()
    # the findings no gate reads: a fallback probe and a failed lowering, in that report order
    for p in report["probes"]:
        if p["id"] == "explain/tiny_llama_forward":
            p["status"] = "failed"
    report["probes"].append(partial_result({
        **{k: report["probes"][1].get(k) for k in ("family", "cached", "params", "file",
                                                   "seconds", "deps", "log_tail")},
        "id": "explain/late_kernel", "status": "failed", "reason": "does not lower",
        "signals": [_sig("lowering", "explain/late_kernel", subject="k[c,fp32,gpu]",
                         passed=False, reason="Cannot find a layout")]}))
    report["gates"] = [g for g in report["gates"] if g["name"] != "tolerance"]
    text = build_markdown(report)
    table = text.split("findings no gate reads", 1)[1] if "findings no gate reads" in text \
        else text.split("no gate reads", 1)[1]
    rows = [ln for ln in table.split("\n\n", 2)[1].splitlines() if ln.startswith("| ")][2:]
    ids = [ln.split("`")[1] for ln in rows if "`" in ln]
    by_id = {p["id"]: p for p in report["probes"]}
    assert "explain/late_kernel" in ids and "explain/tiny_llama_forward" in ids
    assert ids.index("explain/late_kernel") < ids.index("explain/tiny_llama_forward")
    assert [probe_severity(by_id[i]) for i in ids] == sorted(
        probe_severity(by_id[i]) for i in ids)
    # annotations and SARIF: within each level, most severe first
    findings = collect_findings(report, Sources(str(DEMO_WS), env={}))
    ranked = prioritised(findings)
    for level in ("error", "warning", "note"):
        bands = [rule_severity(f.rule.id, f.sig) for f in ranked if f.level == level]
        assert bands == sorted(bands), level
    lines = annotation_lines(findings)
    warnings = [ln for ln in lines if ln.startswith("::warning")]
    # the failed checks (the ungated tolerance, the kernel that does not lower) before the
    # fallbacks that come first in the report
    assert "Output outside its tolerance" in warnings[0], warnings[0]
    assert "late_kernel" in warnings[1] and "fallback" not in warnings[1].lower(), warnings[1]
    assert all("late_kernel" not in w for w in warnings[2:])
    notes = [ln for ln in lines if ln.startswith("::notice")]
    assert notes and "int64->bool" in "".join(notes)  # the cast is a note, after them
    assert "no device in region" not in "".join(lines)  # a bounce that did not occur


def test_a_rerun_moves_rows_between_bands_in_place():
    """A re-run that makes a zero-count bounce occur (and a fallback stop) moves each row to
    its band's place, without splitting the probe again; a row gone leaves the order."""
    from laya_tui.tui.model import RunModel
    from tests.test_tui_model import _table, fb, run

    model = RunModel()
    bounce = partial_signal({"kind": "host_bounce", "subject": "region forward", "count": 0,
                             "reason": "no device in region"})
    env = partial_signal({"kind": "environment", "subject": "torch", "value": "2.5"})
    first = [env, bounce, fb("aten::neg"), fb("aten::mul", count=2), fb("aten::gelu")]
    run(model, "fam/p", first)
    table = _table(model)
    table.rebuild()
    assert [r.sig.subject for r in rows_of(table)] == [
        "aten::neg", "aten::mul", "aten::gelu", "region forward", "torch"]
    split = table.bands._splits["fam/p"]
    second = [env, partial_signal({**bounce, "count": 3}), fb("aten::neg"),
              fb("aten::mul", count=0),
              fb("aten::gelu")]
    changes = run(model, "fam/p", second)
    assert len(changes.updated) == 2 and not changes.removed
    table.apply(changes.added, changes.updated, changes.removed)

    def subjects() -> list[str | None]:
        return [r.sig.subject for r in rows_of(table)]

    assert subjects() == ["aten::neg", "aten::gelu", "region forward", "aten::mul", "torch"]
    assert table.bands._splits["fam/p"] is split  # moved in place, not ranked again
    assert all(table.index_of(row_at(table, i)) == i for i in range(table.row_count))
    changes = run(model, "fam/p", second[:4])  # gelu gone: the model's list is a new one
    table.apply(changes.added, changes.updated, changes.removed)
    assert subjects() == ["aten::neg", "region forward", "aten::mul", "torch"]
    assert table.bands._splits["fam/p"] is split and split.src is model.probes["fam/p"].rows
    # a probe of one band: the model's own list, kept through a removal too
    run(model, "fam/q", [fb(f"op{i}") for i in range(5)])
    table.apply([], [], [], structure=True)
    q = table.bands._splits["fam/q"]
    assert q.single is not None and any(seg is model.probes["fam/q"].rows
                                        for seg in table.order.segments)
    changes = run(model, "fam/q", [fb(f"op{i}") for i in (0, 2, 4)])
    table.apply(changes.added, changes.updated, changes.removed)
    assert table.bands._splits["fam/q"] is q and q.src is model.probes["fam/q"].rows
    assert [r.sig.subject for r in rows_of(table)
            if r.probe == "fam/q"] == ["op0", "op2", "op4"]
    # many rows gone at once (one pass over the lists) from a probe of every band
    big = [fb(f"b{i}", count=i % 2) for i in range(600)]
    run(model, "fam/r", big)
    table.apply([], [], [], structure=True)
    changes = run(model, "fam/r", big[::3])
    assert len(changes.removed) == 400
    table.apply(changes.added, changes.updated, changes.removed)
    r_rows = [r for r in rows_of(table) if r.probe == "fam/r"]
    assert [r.sig.subject for r in r_rows] == [
        s["subject"] for s in big[::3] if s["count"]] + [
        s["subject"] for s in big[::3] if not s["count"]]
    assert all(table.index_of(row_at(table, i)) == i for i in range(table.row_count))
    # filtered: the same order
    from laya_tui.tui.widgets.table_rows import TableFilter

    table.filter = TableFilter(text="aten::")
    table.rebuild()
    assert subjects() == ["aten::neg", "aten::mul"]


def test_rows_streamed_in_while_sorted_are_split_as_they_come():
    """A sort shown while rows stream in: the split by band keeps up, so clearing the sort
    does not rank a whole probe in one pass."""
    from laya_tui.tui.model import RunModel
    from tests.test_tui_model import _table, fb, run

    model = RunModel()
    run(model, "fam/p", [fb("a", count=0), fb("b")])
    table = _table(model)
    table.sort_column = "count"
    table.rebuild()
    changes = run(model, "fam/p", [fb("a", count=0), fb("b"), *(fb(f"c{i}") for i in range(50))])
    table.apply(changes.added, changes.updated, changes.removed)
    split = table.bands._splits["fam/p"]
    assert split.done == len(model.probes["fam/p"].rows) == 52
    table.sort_column = None
    table.rebuild()
    assert table.bands._splits["fam/p"] is split
    subjects = [r.sig.subject for r in rows_of(table)]
    assert subjects == ["b", *(f"c{i}" for i in range(50)), "a"]
