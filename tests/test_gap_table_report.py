"""The numerics of a cell (gap table, precision plan) in every output: the report/4
``numerics`` field, the drill-down (dashboard and page), markdown and SARIF; a saved
report/3 (``tests/fixtures/report_v3``, written before the field) reads the same way.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from laya_tui.core.report_types import ReportDict, SignalDict
from laya_tui.core.signals import READABLE_SCHEMAS, SCHEMA_ID
from laya_tui.report.views import numerics as nv
from laya_tui.report.views.detail import Table, probe_detail, signal_detail
from laya_tui.tui.widgets.detail import DetailPane

ROOT = Path(__file__).resolve().parents[1]
V3 = ROOT / "tests" / "fixtures" / "report_v3" / "report.json"
MODEL = ROOT / "tests" / "fixtures" / "report_v3" / "numerics_model.py"


def _v3() -> ReportDict:
    return json.loads(V3.read_text())


def _class_line() -> int:
    lines = MODEL.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith("class Cancel("))


def test_the_fixture_is_report_3_without_the_field_and_still_readable():
    doc = _v3()
    assert doc["schema"] == "laya-tui.report/3" != SCHEMA_ID == "laya-tui.report/5"
    assert "laya-tui.report/3" in READABLE_SCHEMAS
    (probe,) = doc["probes"]
    assert "numerics" not in probe
    (entry,) = nv.numerics_of(probe)  # derived from its signals
    assert entry["subject"] == "bfloat16 vs fp32 cpu output"
    plan = entry["precision_plan"]
    assert plan["status"] == "found" and plan["fp32_modules"] == ["1"]
    assert plan["verified_error"] is not None and plan["limit"] is not None
    assert plan["verified_error"] <= plan["limit"] == 0.05
    assert "gap_table" not in entry


def test_markdown_and_page_show_the_plan_of_a_report_3():
    from laya_tui.report.markdown import build_markdown
    from laya_tui.report.views.page import page_data

    md = build_markdown(_v3())
    assert "### Numerics" in md
    assert "- precision plan: keep 1 in fp32: verified max|diff| 0.002306 <= 0.05 " \
           "(was 0.3369), 6 forwards" in md
    data = page_data(_v3())
    assert any("keep 1 in fp32: verified max|diff| 0.002306" in s for s in data["strings"])


def _fixture_with_class_sites() -> ReportDict:
    """The report/3 fixture with its plan's class line (report/4 workers record it)."""
    doc = _v3()
    for sig in doc["probes"][0]["signals"]:
        plan = (sig.get("detail") or {}).get("precision_plan")
        if plan:  # the JSON's dict: the fixture is edited in place
            plan["class_sites"] = {"1": {"file": str(MODEL), "line": _class_line(),
                                         "func": "Cancel"}}
    return doc


def test_sarif_carries_the_plan_as_a_fix_at_the_class_line():
    pytest.importorskip("jsonschema")
    from laya_tui.report.sarif import build_sarif, validate_sarif
    from laya_tui.report.sources import Sources

    doc = build_sarif(_fixture_with_class_sites(), Sources(str(ROOT), env={}))
    validate_sarif(doc)
    run = doc["runs"][0]
    (res,) = [r for r in run["results"] if r["ruleId"] == nv.PLAN_RULE_ID]
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == nv.PLAN_RULE_ID
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "tests/fixtures/report_v3/numerics_model.py"
    assert loc["region"]["startLine"] == _class_line()
    (change,) = res["fixes"][0]["artifactChanges"]
    rep = change["replacements"][0]
    assert rep["deletedRegion"]["startLine"] == _class_line()
    assert "keep 1 in fp32" in rep["insertedContent"]["text"]
    assert "verified max|diff| 0.002306 <= 0.05" in res["message"]["text"]
    # without a class line in the source tree: no plan result (and no unused rule)
    plain = build_sarif(_v3(), Sources(str(ROOT), env={}))
    assert not [r for r in plain["runs"][0]["results"] if r["ruleId"] == nv.PLAN_RULE_ID]
    assert nv.PLAN_RULE_ID not in [r["id"] for r in plain["runs"][0]["tool"]["driver"]["rules"]]


def _gap_signal(tmp_path: Path) -> SignalDict:
    """A real gap table signal from the Cancel model (tests/test_gap_table.py's)."""
    pytest.importorskip("torch")
    import torch

    from laya_tui.families.explain import gap_table as g
    from tests.test_gap_table import Ctx, build

    model, ref, x = build("scss")
    ctx = Ctx(tmp_path)
    g.table_after_verdict(ctx, "out", {"passed": False}, model=model, reference=ref,
                          forward=lambda m: m(x.to(torch.bfloat16)),
                          forward_reference=lambda m: m(x))
    (sig,) = ctx.sigs
    return {**sig, "kind": "log", "probe": "explain/model:x[eager]"}


def test_a_report_4_cell_carries_numerics_and_validates(tmp_path):
    from laya_tui.report.document import build_report, validate_report
    from laya_tui.report.markdown import build_markdown

    probe = copy.deepcopy(_v3()["probes"][0])
    probe.pop("state", None)
    sig = _gap_signal(tmp_path)
    sig["subject"] = "bfloat16 vs fp32 cpu output gap table"  # the plan's output
    at = next(i for i, s in enumerate(probe["signals"])
              if "precision_plan" in (s.get("detail") or {}))
    probe["signals"].insert(at, sig)  # before its plan, as a cell emits them
    report = build_report([probe], seconds=1.0, gates=[])
    validate_report(report)
    assert report["schema"] == "laya-tui.report/5"
    (entry,) = report["probes"][0]["numerics"]  # one output: its table and its plan
    assert entry["subject"] == "bfloat16 vs fp32 cpu output"
    assert entry["precision_plan"]["fp32_modules"] == ["1"]
    gap = entry["gap_table"]
    assert gap["rows"][0]["module"] == "blocks.1" and len(gap["rows"]) == 9  # root aside
    assert gap["peak_bytes"] == gap["activation_bytes"] == 9472
    md = build_markdown(report)
    assert "| module | type | error | local error | limit | local/limit | share |" in md
    assert "| blocks.1 | Cancel |" in md
    facts = probe_detail(report["probes"][0], signals=1).sections
    assert any(getattr(s, "title", None) == "numerics" for s in facts)


def test_the_drill_down_table_is_ranked_and_sortable_keys_are_numbers(tmp_path):
    from laya_tui.report.views.packed import Packer, Strings, sections, unpack

    sig = _gap_signal(tmp_path)
    detail = signal_detail(sig, "explain/model:x[eager]")
    (table,) = [s for s in detail.sections if isinstance(s, Table)]
    assert table.columns[:4] == ("module", "type", "error", "local error")
    assert table.rows[0][:2] == ("blocks.1", "Cancel")
    local = [k[3] for k in table.keys if isinstance(k[3], float)]
    assert len(local) == len(table.keys)
    assert local == sorted(local, reverse=True)  # ranked by local/limit (same limits here)
    assert all(isinstance(k[2], float) for k in table.keys)
    pack = Packer(Strings())
    packed = pack.detail(detail, {})
    assert unpack(packed, pack.shapes, pack.strings.table) == sections(detail, {})
    (drawn,) = [s for s in sections(detail, {}) if s[0] == "table"]
    assert drawn[3][0][0] == "blocks.1" and len(drawn[4]) == len(drawn[3])


def test_the_dashboard_draws_the_table(tmp_path):
    from rich.console import Console

    from laya_tui.tui.widgets.detail import Renderer

    sig = _gap_signal(tmp_path)
    console = Console(width=140, record=True, color_system=None)
    console.print(Renderer(None).detail(signal_detail(sig, "p")))
    text = console.export_text()
    assert "local error" in text and "blocks.1" in text and "Cancel" in text
    assert text.index("blocks.1 ") < text.index("head ")  # ranked: the culprit first


FINE_MODEL = '''
import torch


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    return model.eval().to(torch.bfloat16), torch.randn(8, 16).to(torch.bfloat16)
'''


@pytest.mark.parametrize("flag", [None, "--numerics"])
def test_cli_numerics_flag_gives_a_passing_cell_its_gap_table(tmp_path, flag):
    pytest.importorskip("torch")
    from laya_tui.report.document import validate_report
    from tests._util import run_cli

    (tmp_path / "gt_fine_model.py").write_text(FINE_MODEL)
    out = tmp_path / "r.json"
    proc = run_cli("--headless", "--json", str(out), "--no-cache", "--device", "cpu",
                   "--only", "explain/model:*[eager]", "--model", "gt_fine_model:build",
                   "--workspace", str(tmp_path), *([flag] if flag else []),
                   env={"PYTHONPATH": str(tmp_path)})
    report = json.loads(out.read_text())
    validate_report(report)
    (probe,) = report["probes"]
    assert probe["status"] == "ok", (proc.stderr[-2000:], probe.get("reason"))
    tables = [s for s in probe["signals"] if "gap_table" in (s.get("detail") or {})]
    if not flag:
        assert tables == [] and "numerics" not in probe
        return
    (sig,) = tables
    gap = sig["detail"]["gap_table"]
    assert sig["kind"] == "log" and gap["modules"] == 4 and len(gap["rows"]) == 3
    assert all(r["local"] <= r["limit"] for r in gap["rows"])
    assert probe["numerics"][0]["gap_table"]["rows"] == gap["rows"]


def test_cli_failing_cell_has_table_plan_and_sarif_fix(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("jsonschema")
    from laya_tui.report.sarif import validate_sarif
    from tests._util import run_cli

    (tmp_path / "gt_model.py").write_text(MODEL.read_text())
    out, sarif = tmp_path / "r.json", tmp_path / "r.sarif"
    proc = run_cli("--headless", "--json", str(out), "--sarif", str(sarif), "--no-cache",
                   "--device", "cpu", "--only", "explain/model:*", "--model",
                   "gt_model:build", "--workspace", str(tmp_path), "--out",
                   str(tmp_path / "out"), env={"PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    report = json.loads(out.read_text())
    probe, compiled = sorted(report["probes"], key=lambda p: not p["id"].endswith("[eager]"))
    assert probe["status"] == compiled["status"] == "failed", proc.stderr[-2000:]
    (centry,) = compiled["numerics"]  # the compile cell: its table, module by module
    assert centry["gap_table"]["path"] == "compile" and "precision_plan" not in centry
    assert centry["gap_table"]["rows"][0]["module"] == "1"
    (entry,) = probe["numerics"]
    assert entry["gap_table"]["rows"][0]["module"] == "1"  # Cancel: the plan's module
    assert entry["precision_plan"]["fp32_modules"] == ["1"]
    # the search starts from the table's ranking: the model, fp32, the reference, ["1"],
    # the verifying re-run (the drift's ranking tried 1.fc first: 6)
    assert entry["precision_plan"]["forwards"] == 5
    assert "most own error: 1 (Cancel)" in proc.stderr
    assert entry["precision_plan"]["class_sites"]["1"]["func"] == "Cancel"
    doc = json.loads(sarif.read_text())
    validate_sarif(doc)
    (res,) = [r for r in doc["runs"][0]["results"] if r["ruleId"] == nv.PLAN_RULE_ID]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "gt_model.py"
    lines = MODEL.read_text().splitlines()
    assert lines[loc["region"]["startLine"] - 1].startswith("class Cancel(")
    assert "gap table: most own error 1 (Cancel)" in res["message"]["text"]
    assert res["properties"]["gap_table"][0]["module"] == "1"
    assert res["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"] == "gt_model.py"
    spill = tmp_path / "out" / "numerics"
    assert [p.name for p in spill.iterdir() if p.is_dir()] == []  # no spill folder left


def test_the_whole_model_row_takes_the_tolerance_limit(tmp_path):
    """One output, one limit: an output of magnitude 40 fails its tolerance (an absolute
    limit); the gap table's whole-model row says the same limit, not the module rows'
    magnitude-scaled one (which called the failing output within its limit)."""
    pytest.importorskip("torch")
    from tests._util import run_cli

    (tmp_path / "gt_base.py").write_text(MODEL.read_text())
    (tmp_path / "gt_scaled.py").write_text(
        "import torch\nimport gt_base\n\n\nclass Scaled(torch.nn.Module):\n"
        "    def __init__(self, m):\n        super().__init__()\n        self.m = m\n\n"
        "    def forward(self, x):\n        return self.m(x) * 40.0\n\n\n"
        "def build():\n    m, x = gt_base.build()\n    return Scaled(m).eval(), x\n")
    out = tmp_path / "r.json"
    proc = run_cli("--headless", "--json", str(out), "--no-cache", "--device", "cpu",
                   "--only", "explain/model:*[eager]", "--model", "gt_scaled:build",
                   "--workspace", str(tmp_path), "--out", str(tmp_path / "out"),
                   env={"PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    (probe,) = json.loads(out.read_text())["probes"]
    (tol,) = [s for s in probe["signals"] if s["kind"] == "tolerance" and not s["passed"]]
    (entry,) = probe["numerics"]
    output = entry["gap_table"]["output"]
    assert output["limit"] == tol["limit"] < output["error"], proc.stderr[-2000:]
    assert output["error"] == pytest.approx(tol["value"], rel=1e-3)
    assert entry["precision_plan"]["limit"] == tol["limit"]


def test_sort_table_orders_by_a_column_absent_last():
    t = Table("t", ("module", "local"), (("b", "2"), ("a", "—"), ("c", "3")),
              (("b", 2.0), ("a", None), ("c", 3.0)))
    from laya_tui.report.views.detail import sort_table

    assert [r[0] for r in sort_table(t, 1).rows] == ["c", "b", "a"]
    assert [r[0] for r in sort_table(t, 0).rows] == ["a", "b", "c"]
    assert sort_table(t, None) is t


@pytest.mark.asyncio
async def test_the_signal_screen_sorts_the_gap_table_with_s(tmp_path):
    from laya_tui.report.document import build_report
    from laya_tui.tui.screens.signal import SignalScreen
    from laya_tui.tui.widgets.detail import TABLE_SORT
    from tests._tui import SIZE, recorded_app

    probe = copy.deepcopy(_v3()["probes"][0])
    probe.pop("state", None)
    probe["signals"].append({**_gap_signal(tmp_path), "probe": probe["id"]})
    path = tmp_path / "report.json"
    path.write_text(json.dumps(build_report([probe], seconds=1.0, gates=[])))
    app = recorded_app(report=path, workspace=str(tmp_path))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            key = next(k for k, r in app.model.rows.items()
                       if "gap_table" in (r.sig.detail or {}))
            app.push_screen(SignalScreen(key))
            await pilot.pause()
            text = app.screen.query_one("#full-detail", DetailPane).plain_text()
            assert "ranked (s: sort by the next column)" in text
            text = text[text.index("local/limit"):]  # the table
            assert text.index("blocks.1 ") < text.index("blocks.0 ")  # the culprit first
            await pilot.press("s")  # by module, A to Z
            await pilot.pause()
            assert TABLE_SORT[0] == 0, (type(app.screen).__name__, app.focused)
            text = app.screen.query_one("#full-detail", DetailPane).plain_text()
            assert "sorted by module" in text
            text = text[text.index("local/limit"):]
            assert text.index("blocks.0 ") < text.index("blocks.1 ") < text.index("head ")
    finally:
        TABLE_SORT[0] = None


def test_the_page_draws_the_gap_table_sortable_by_a_click(tmp_path):
    from laya_tui.cli.main import main
    from laya_tui.report.document import build_report
    from tests._browser import INSTALL_HINT, Browser, find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    probe = copy.deepcopy(_v3()["probes"][0])
    probe.pop("state", None)
    probe["signals"].append({**_gap_signal(tmp_path), "probe": probe["id"]})
    report = tmp_path / "report.json"
    report.write_text(json.dumps(build_report([probe], seconds=1.0, gates=[])))
    page = tmp_path / "page.html"
    assert main(["show", str(report), "--html", str(page), "--workspace", str(tmp_path)]) == 0
    column = ("[...document.querySelectorAll('#detail table.sortable tbody tr')]"
              ".map(tr => tr.children[0].innerText)")
    with Browser(chromium) as b:
        b.open(page.as_uri())
        assert b.console_errors() == []
        b.click("#signals-text")
        b.call("Input.insertText", session=True, text="out gap table")
        b.click("#signals tbody tr:nth-child(1)")
        ranked = b.eval(column)
        assert ranked[0] == "blocks.1" and len(ranked) == 9
        b.eval("document.querySelectorAll('#detail table.sortable th')[0].click()")
        assert b.eval(column) == sorted(ranked)  # by module, A to Z
        b.eval("document.querySelectorAll('#detail table.sortable th')[2].click()")
        errors = b.eval("[...document.querySelectorAll('#detail table.sortable tbody tr')]"
                        ".map(tr => parseFloat(tr.children[2].innerText))")
        assert errors == sorted(errors, reverse=True)  # by error, largest first
        text = b.eval("document.querySelector('#detail').innerText")
        assert "gap table" in text and "peak 9.2 KiB in memory" in text
        assert b.console_errors() == []
