"""A cell that compares two outputs keeps one ``numerics`` entry per output (issue 43).

``explain/<preset>[<dtype>,compile-padded]`` pads its two batches (rows 7,5 and 9,6) to one
width and used to compare both under one subject (``width=16 last_hidden_state``), so the
cell's ``numerics`` kept only the second gap table. Each output is now named by its rows,
and the report never writes one output's entry over another's. A report saved before
(``tests/fixtures/numerics_one_name``) reads both tables back from its signals.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import pytest

from laya_tui.report.views import numerics as nv
from laya_tui.report.views.detail import probe_detail, signal_detail
from laya_tui.report.views.sections import Facts, Table
from tests._signals import partial_result

ROOT = Path(__file__).resolve().parents[1]
OLD = ROOT / "tests" / "fixtures" / "numerics_one_name" / "report.json"
V3 = ROOT / "tests" / "fixtures" / "report_v3" / "report.json"
CELL = "explain/tiny_modernbert[bf16,compile-padded]"


def _tables(probe: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in probe["signals"] if "gap_table" in (s.get("detail") or {})]


def test_a_report_saved_with_one_entry_for_two_outputs_reads_both_back():
    doc = json.loads(OLD.read_text())
    (probe,) = doc["probes"]
    assert doc["schema"] == "laya-tui.report/5" and len(probe["numerics"]) == 1  # as saved
    first, second = _tables(probe)
    assert first["subject"] == second["subject"] == "width=16 last_hidden_state gap table"
    entries = nv.numerics_of(probe)
    assert [e["subject"] for e in entries] == ["width=16 last_hidden_state"] * 2
    for entry, sig in zip(entries, (first, second), strict=True):
        gap = sig["detail"]["gap_table"]
        assert entry["gap_table"]["output"] == gap["output"]
        assert entry["gap_table"]["rows"] == gap["rows"][:nv.TOP_ROWS]
        assert entry["gap_table"]["artifact"] == gap["artifact"]
    assert entries[0]["gap_table"]["output"] != entries[1]["gap_table"]["output"]
    # the cell's own facts, the markdown and the page: two tables
    facts = [f for s in probe_detail(probe, signals=len(probe["signals"])).sections
             if isinstance(s, Facts | Table) and s.title == "numerics" for f in s.rows]
    assert len(facts) == 2
    from laya_tui.report.markdown import build_markdown

    md = build_markdown(doc)
    assert md.count("- gap table (compile, 44 module calls;") == 2


def _plan_cell() -> dict[str, Any]:
    """The report/3 fixture's cell with its table-less plan output compared twice under one
    subject (a gap table, then the plan, each time)."""
    probe = copy.deepcopy(json.loads(V3.read_text())["probes"][0])
    plan_sig = next(s for s in probe["signals"] if "precision_plan" in (s.get("detail") or {}))
    subject = plan_sig["subject"].removesuffix(nv.PLAN_SUFFIX)
    gap = {"path": "eager", "modules": 3, "rows": [{"module": "1", "type": "Linear",
                                                    "error": 0.3, "local": 0.3,
                                                    "limit": 0.05, "share": 1.0}]}
    first = {"kind": "log", "subject": subject + nv.GAP_SUFFIX, "detail": {"gap_table": gap}}
    second = copy.deepcopy(first)
    second["detail"]["gap_table"]["rows"][0]["error"] = 0.4
    plan2 = copy.deepcopy(plan_sig)
    plan2["detail"]["precision_plan"]["verified_error"] = 0.001
    rest = [s for s in probe["signals"] if s is not plan_sig]
    probe["signals"] = rest + [first, plan_sig, second, plan2]
    return probe


def test_each_output_keeps_its_own_table_and_plan_under_one_subject():
    probe = _plan_cell()
    saved = next(s for s in probe["signals"] if "precision_plan" in (s.get("detail") or {}))
    entries = nv.cell_numerics(probe)
    assert len(entries) == 2 and entries[0]["subject"] == entries[1]["subject"]
    assert [e["gap_table"]["rows"][0]["error"] for e in entries] == [0.3, 0.4]
    assert [e["precision_plan"]["verified_error"] for e in entries] == [
        saved["detail"]["precision_plan"]["verified_error"], 0.001]


def test_sarif_gives_each_output_its_plan(tmp_path):
    pytest.importorskip("jsonschema")
    from laya_tui.report.document import build_report
    from laya_tui.report.sarif import build_sarif, validate_sarif
    from laya_tui.report.sources import Sources

    probe = _plan_cell()
    probe.pop("state", None)
    model = ROOT / "tests" / "fixtures" / "report_v3" / "numerics_model.py"
    line = next(i for i, s in enumerate(model.read_text().splitlines(), 1)
                if s.startswith("class Cancel("))
    for sig in probe["signals"]:
        plan = (sig.get("detail") or {}).get("precision_plan")
        if plan:
            plan["class_sites"] = {"1": {"file": str(model), "line": line, "func": "Cancel"}}
    report = build_report([partial_result(probe)], seconds=1.0, gates=[])
    assert len(report["probes"][0]["numerics"]) == 2
    doc = build_sarif(report, Sources(str(ROOT), env={}))
    validate_sarif(doc)
    results = [r for r in doc["runs"][0]["results"] if r["ruleId"] == nv.PLAN_RULE_ID]
    assert [r["properties"]["gap_table"][0]["error"] for r in results] == [0.3, 0.4]


@pytest.mark.slow
def test_the_padded_scenario_keeps_both_tables_as_a_direct_comparison_gives(tmp_path):
    pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from laya_tui.report.document import validate_report
    from tests._util import run_cli

    out, md, page = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.html"
    proc = run_cli("--headless", "--json", str(out), "--markdown", str(md), "--html",
                   str(page), "--no-cache", "--device", "cpu", "--only", CELL, "--numerics",
                   timeout=600)
    report = json.loads(out.read_text())
    validate_report(report)
    (probe,) = report["probes"]
    assert probe["status"] == "ok", (proc.stderr[-2000:], probe.get("reason"))
    entries = probe["numerics"]
    assert [e["subject"] for e in entries] == ["width=16 rows=7,5 last_hidden_state",
                                               "width=16 rows=9,6 last_hidden_state"]
    assert len({e["gap_table"]["artifact"] for e in entries}) == 2  # no file written over

    # the same tables computed here, batch by batch
    from laya_tui.families import presets
    from laya_tui.families.explain import gap_table as g
    from laya_tui.families.explain.gap_rows import rounded

    model, reference = presets.tiny_modernbert(torch.bfloat16), presets.tiny_modernbert(None)
    for entry, rows in zip(entries, ([7, 5], [9, 6]), strict=True):
        batch = presets.token_batch(rows, pad_to=16)
        torch._dynamo.reset()
        with g.leaves_compiled(model):
            t = g.gap_table(model, reference, functools.partial(model, **batch),
                            functools.partial(reference, **batch),
                            mask=batch["attention_mask"].bool())
        got = entry["gap_table"]
        assert got["modules"] == len(t.rows)
        direct = [(r.module, rounded(r.error), rounded(r.local)) for r in t.ranked()]
        shown = [(r["module"], r["error"], r["local"]) for r in got["rows"]]
        assert [m for m, *_ in shown] == [m for m, *_ in direct[:len(shown)]]
        for (_, e, lo), (_, de, dlo) in zip(shown, direct, strict=False):
            assert e == pytest.approx(de, rel=0.02, abs=1e-4)
            assert lo == pytest.approx(dlo, rel=0.02, abs=1e-4)
        assert got["output"]["error"] == pytest.approx(
            rounded(next(r.error for r in t.rows if r.module == g.ROOT)), rel=0.02)
    first, second = (e["gap_table"]["output"]["error"] for e in entries)
    assert first != second  # two batches, two tables
    text = md.read_text()
    assert text.count("- gap table (compile, 44 module calls;") == 2
    assert "width=16 rows=7,5 last_hidden_state" in text
    html = page.read_text()
    assert "width=16 rows=7,5 last_hidden_state gap table" in html
    assert "width=16 rows=9,6 last_hidden_state gap table" in html
    tables = [s for s in probe["signals"] if "gap_table" in (s.get("detail") or {})]
    for sig in tables:  # the drill-down of each table signal: its own table
        (tab,) = [s for s in signal_detail(sig, probe["id"]).sections
                  if getattr(s, "columns", None)]
        assert isinstance(tab, Table)
        assert tab.rows[0][0] == sig["detail"]["gap_table"]["rows"][0]["module"]
