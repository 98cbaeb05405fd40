"""The environment comparison (report/envcompare.py) and its views: what counts as a
difference, what does not (where an environment lives), and how it is shown (stderr,
markdown, HTML, the dashboard's ``v`` screen over a real two-environment run)."""

from __future__ import annotations

import json
import sys

import pytest

from laya_tui.core.report_types import EnvComparisonDict, EnvInfoDict, ResultDict, SignalDict
from laya_tui.core.results import make_result
from laya_tui.report.baseline import parse_baseline
from laya_tui.report.document import build_report, validate_report
from laya_tui.report.envcompare import compare_envs, env_change_gate
from laya_tui.report.envview import env_html, env_markdown, env_summary_lines, env_text
from laya_tui.report.gates import GateSettings, evaluate_all
from tests._envs import bare_env, workspace
from tests._util import run_cli

ENVS: dict[str, EnvInfoDict] = {
    "old": {"python": "/w/.venv-014/bin/python", "versions": {"tilelang": "0.1.14"}},
    "new": {"python": "/w/.venv/bin/python", "versions": {"tilelang": "0.1.15"}}}


def cell(base: str, env: str, status: str = "ok", reason: str | None = None,
         signals: list[SignalDict] | None = None, seconds: float = 1.0) -> ResultDict:
    pid = f"{base}@{env}"
    sigs: list[SignalDict] = [{**s, "probe": pid} for s in signals or []]
    return make_result({"id": pid, "family": base.split("/")[0], "env": env}, status, reason,
                       seconds=seconds, deps=[], signals=sigs)


def lowering(reason: str | None) -> SignalDict:  # its probe: the cell's (cell() sets it)
    sig: SignalDict = {"kind": "lowering", "probe": "", "subject": "k[c,bf16,gpu]",
                       "passed": reason is None}
    if reason:
        sig["reason"] = reason
    return sig


def compared(probes: list[ResultDict]) -> EnvComparisonDict:
    """compare_envs over ENVS, asserted to find two environments to compare."""
    section = compare_envs(probes, ENVS)
    assert section is not None
    return section


def test_where_an_environment_lives_is_not_a_difference():
    old = ("lowering k: /w/.venv-014/lib/python3.11/site-packages/tilelang/engine.py:12: "
           "bad cast at 0x7f00deadbeef in /tmp/tmpab12cd/kernel.cpp")
    new = ("lowering k: /w/.venv/lib/python3.11/site-packages/tilelang/engine.py:12: "
           "bad cast at 0x7f11cafef00d in /tmp/tmpzz99yy/kernel.cpp")
    probes = [cell("t/k", "old", "failed", old, [lowering(old)]),
              cell("t/k", "new", "failed", new, [lowering(new)])]
    cand = compared(probes)["candidates"][0]
    assert cand["diagnostics"] == [] and cand["notes"] == [] and cand["regressions"] == []
    # the cell's own id (which carries @env) in its reason is no difference either
    probes = [cell("t/k", e, "failed", f"t/k@{e} is no longer produced") for e in ENVS]
    assert compared(probes)["candidates"][0]["diagnostics"] == []


def test_a_first_diagnostic_that_changed_is_found():
    probes = [cell("t/k", "old", "failed", "lowering k: Cannot convert type bfloat16 to C type",
                   [lowering("Cannot convert type bfloat16 to C type")]),
              cell("t/k", "new", "failed", "lowering k: Check failed: undefined.size() == 0",
                   [lowering("Check failed: undefined.size() == 0")]),
              cell("t/same", "old", "failed", "x"), cell("t/same", "new", "failed", "x")]
    section = compared(probes)
    assert section["base"] == "old" and section["envs"] == ["old", "new"]
    cand = section["candidates"][0]
    assert cand["versions"] == {"tilelang": {"before": "0.1.14", "after": "0.1.15"}}
    assert [d["probe"] for d in cand["diagnostics"]] == ["t/k"]
    assert cand["diagnostics"][0]["after"]["reason"] is not None
    assert cand["diagnostics"][0]["after"]["reason"].endswith("undefined.size() == 0")
    assert [(n["change"], n["kind"]) for n in cand["notes"]] == [("diagnostic-changed",
                                                                 "lowering")]
    assert cand["statuses"] == [] and not cand["worse"]
    assert env_change_gate(section)["passed"]
    text = env_text(section, ENVS)
    assert "* tilelang       0.1.14  0.1.15" in text
    assert ("diagnostic  t/k: failed: lowering k: Cannot convert type bfloat16 to C type -> "
            "failed: lowering k: Check failed: undefined.size() == 0\n") in text
    assert "timing" not in text  # 1 s and 1 s: no timing delta worth a line


def test_signals_added_and_removed_and_values_that_moved():
    # their probe: the cell's (cell() sets it)
    fb: SignalDict = {"kind": "fallback", "probe": "", "subject": "aten::add", "count": 2,
                      "reason": "dtype-not-fp16"}
    rc: SignalDict = {"kind": "recompile", "probe": "", "subject": "forward", "count": 1,
                      "reason": "shape changed"}
    tol: SignalDict = {"kind": "tolerance", "probe": "", "subject": "logits", "limit": 0.05}
    tm: SignalDict = {"kind": "timing", "probe": "", "subject": "lower"}
    probes = [cell("e/m", "old", signals=[fb, {**tol, "value": 0.01, "passed": True},
                                          {**tm, "seconds": 1.0}], seconds=2.0),
              cell("e/m", "new", "failed", "tolerance logits: 0.09 > limit 0.05",
                   signals=[rc, {**tol, "value": 0.09, "passed": False}, {**tm, "seconds": 3.0}],
                   seconds=4.0)]
    section = compared(probes)
    cand = section["candidates"][0]
    regs = {(i["change"], i["kind"]) for i in cand["regressions"]}
    assert regs == {("new", "recompile"), ("now-failing", "tolerance"), ("status", "probe")}
    assert {(i["change"], i["kind"]) for i in cand["improvements"]} == {("gone", "fallback")}
    assert cand["tolerance"] == [{"probe": "e/m", "subject": "logits", "before": 0.01,
                                  "after": 0.09, "limit": 0.05, "passed_before": True,
                                  "passed_after": False}]
    assert [(t["subject"], t["ratio"]) for t in cand["timing"]] == [("lower", 3.0),
                                                                    ("(cell)", 2.0)]
    gate = env_change_gate(section)
    assert not gate["passed"] and {f["probe"] for f in gate["failures"]} == {"e/m@new"}
    assert all(f["message"].startswith("@new vs @old: ") for f in gate["failures"])
    lines = env_summary_lines(section)
    assert lines[0] == ("  environments @new vs @old: 3 regression(s), 1 improvement(s), 1 "
                        "status change(s), 1 first diagnostic(s) changed; 1 cell(s) compared")
    assert "    regression  e/m: new recompile forward (shape changed): 1x" in lines
    md = "\n".join(env_markdown(section, ENVS))
    assert "| `e/m` | logits | 0.01 | 0.09 | 0.05 |" in md


def test_the_report_carries_both_and_stays_readable():
    probes = [cell("t/k", "old", "failed", "a <script>__DATA__</script>"),
              cell("t/k", "new", "failed", "b")]
    gates, extra = evaluate_all(probes, GateSettings(envs=ENVS, fail_on_env_change=True))
    report = build_report(probes, seconds=1.0, gates=gates, extra=extra)
    validate_report(report)
    assert set(report["envs"]) == {"old", "new"} and report["env_comparison"]["base"] == "old"
    assert next(g for g in report["gates"] if g["name"] == "env-change")["passed"]
    # every reader of a report/2 reads it (show, diff, merge, --baseline)
    again = parse_baseline(json.dumps(report)).report
    assert again["probes"][0]["env"] == "old"
    from laya_tui.report.html import build_html

    page = build_html(report)
    section = page[page.index('<section id="envs"'):page.index("</section>")]
    assert "&lt;script&gt;_&#95;DATA_&#95;&lt;/script&gt;" in section
    assert page.count('id="laya-data"') == 1 and page.count('<section id="envs"') == 1
    data = page[page.index('id="laya-data">') + 15:page.index("</script>")]
    assert "a <script>__DATA__</script>" in json.loads(data)["probes"][0]  # its row
    # one environment, or a report without any: no comparison, no env sections
    assert compare_envs(probes[:1], ENVS) is None
    _, plain = evaluate_all([make_result({"id": "t/k", "family": "t"}, "ok", None,
                                         seconds=0.1, deps=[], signals=[])])
    assert plain == {}
    assert env_html(None, None) == ""


@pytest.fixture(scope="module")
def two_env_report(tmp_path_factory) -> dict:
    ws = workspace(tmp_path_factory.mktemp("envs"))
    out = ws / "r.json"
    proc = run_cli("--headless", "--no-cache", "--workspace", str(ws), "--json", str(out),
                   "--env", f"bare={bare_env()}", "--env", f"main={sys.executable}", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


@pytest.mark.asyncio
async def test_the_dashboard_screen_shows_the_differences(two_env_report):
    from laya_tui.cli.show import build_saved_app
    from laya_tui.tui.screens.envs import EnvScreen
    from tests._tui import SIZE

    app = build_saved_app(two_env_report, label="two envs", workspace=".")
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(40):
            await pilot.pause(0.05)
            if len(app.model.results()) == 4:
                break
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, EnvScreen)
        from textual.widgets import DataTable, Static

        table = app.screen.query_one("#env-changes", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert ["where/where[a]@main", "status",
                "failed: lowering torch: torch is not installed in <env>", "ok"] in rows
        assert any(r[1] == "new fallback" and "op-1" in r[3] for r in rows)
        crumbs = str(app.screen.query_one("#crumbs", Static).render())
        assert "@main vs @bare: 2 regression(s), 4 improvement(s)" in crumbs
        # Enter on a row: that cell in the probe tree
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is app.main_screen
