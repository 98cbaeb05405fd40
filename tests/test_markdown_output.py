"""``--markdown`` and GITHUB_STEP_SUMMARY: golden summaries of real runs."""

from __future__ import annotations

import copy
import re

import pytest

from laya_tui.report.baseline import Baseline
from laya_tui.report.document import build_report, validate_report
from laya_tui.report.gates import GateSettings, evaluate_all
from laya_tui.report.markdown import ROWS, build_markdown
from tests._ci_reports import (
    FLAGS,
    REGRESS,
    check_golden,
    ci_workspace,
    normalized,
    real_report,
    run_ci,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("md")
    ws = ci_workspace(d)
    base = real_report(ws, d / "base.json", None, "--markdown", str(d / "base.md"))
    now = real_report(ws, d / "now.json", REGRESS, "--baseline", str(d / "base.json"),
                      "--markdown", str(d / "now.md"), *FLAGS)
    return d, ws, base, now


@pytest.mark.parametrize("which", ["base", "now"])
def test_golden(runs, which):
    _, _, base, now = runs
    check_golden(f"summary_{which}.md", build_markdown(normalized(base if which == "base"
                                                                  else now)))


def _table(text: str, header: str) -> list[list[str]]:
    """The cells of the markdown table under ``header`` (escaped pipes stay in a cell)."""
    lines = text.splitlines()
    start = lines.index(header) + 2  # the header and its |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


@pytest.mark.parametrize("which", ["base", "now"])
def test_cli_file_states_verdict_counts_and_every_gate(runs, which):
    d, _, base, now = runs
    report = base if which == "base" else now
    text = (d / f"{which}.md").read_text()  # what --markdown wrote
    lines = text.splitlines()
    from laya_tui.report.verdict import verdict_line
    from laya_tui.report.views.legend import state_mark

    # the verdict line, never a plain green tick while a finding is not gated (issue 42)
    mark = "⚠️" if which == "base" else "❌"
    assert lines[0] == f"## laya-tui: {mark} {verdict_line(report)}"
    assert lines[0].startswith(f"## laya-tui: {mark} {'PASS' if which == 'base' else 'FAIL'} · ")
    assert lines[2].startswith(f"{len(report['probes'])} probes: ")
    for state, n in report["summary"]["states"].items():
        assert (f"{n} {state_mark(state).label}" in lines[2]) == (n > 0)
    rows = _table(text, "| gate | result | details |")
    assert [r[0] for r in rows] == [f"`{g['name']}`" for g in report["gates"]]
    for row, gate in zip(rows, report["gates"], strict=True):
        assert row[1] == ("✅ pass" if gate["passed"] else f"❌ {len(gate['failures'])}")
        assert (row[2] == "") == gate["passed"]


def test_failures_occurrences_and_baseline_changes_are_spelled_out(runs):
    d, _, _, now = runs
    text = (d / "now.md").read_text()
    gates = {r[0]: r for r in _table(text, "| gate | result | details |")}
    # the regressed scenario: numerics drifts to 3e-5 (limit 2e-5), 4 fallbacks (max 3)
    assert gates["`tolerance`"][2] == ("ci/numerics: tolerance logits: 3.000e-05 > limit "
                                       "2.000e-05")  # report.views.text.number
    assert gates["`max:fallback`"][2] == "fallback: 4 occurrences > max 3"
    assert gates["`fail-on:host_bounce`"][2].startswith("ci/llama_forward: host_bounce ")
    fallbacks = sum(s.get("count", 1) for p in now["probes"] for s in p["signals"]
                    if s["kind"] == "fallback")
    # in the table's severity order: the failing check first, then the fallbacks
    assert fallbacks == 4 and \
        f"Occurrences: failing tolerance 1, fallback {fallbacks}, host_bounce 2, cast 1." in text
    section = now["baseline"]
    regs, imps = section["regressions"], section["improvements"]
    assert len(regs) == 5 and len(imps) == 4
    # the cell that broke (ok -> failed, and its tolerance past the limit) is one regression
    broken = [i for i in regs if i["change"] == "status"]
    assert len(broken) == 1 and sum(i["probe"] == broken[0]["probe"] for i in regs) == 2
    assert f"### Baseline: {len(regs) - 1} regression(s), {len(imps)} improvement(s)" in text
    for title, mark, items in (("Regressions", "❌", regs), ("Improvements", "✅", imps)):
        rows = _table(text.split(f"**{title}** ({len(items)})", 1)[1], "| | probe | change |")
        assert rows == [[mark, f"`{i['probe']}`", i["message"]] for i in items]
    assert ["❌", "`ci/llama_forward`", "new fallback aten::neg (dtype-not-fp16): 1x"] in \
        _table(text, "| | probe | change |")
    kinds = {r[0]: r[1:] for r in _table(text, "| kind | baseline | now | Δ |")}
    assert kinds["fallback"] == ["2", "4", "+2"]
    assert kinds["failing tolerance"] == ["0", "1", "+1"]


def test_long_lists_are_cut_and_cells_escaped(runs):
    _, _, base, _ = runs
    now = copy.deepcopy(base)
    llama = now["probes"][0]
    for i in range(ROWS + 5):
        llama["signals"].append({"kind": "fallback", "probe": llama["id"],
                                 "subject": f"aten::op{i:02d}|x", "reason": "a\nb"})
    gates, extra = evaluate_all(now["probes"], GateSettings(
        baseline=Baseline("/some/where/base.json", base)))
    report = build_report(now["probes"], seconds=1.0, gates=gates, extra=extra)
    validate_report(report)
    text = build_markdown(report)
    assert "| | … | 5 more in the JSON report |" in text
    assert "aten::op00\\|x (a b)" in text and "`base.json`" in text
    table_rows = [ln for ln in text.splitlines() if ln.startswith("| ❌ |")]
    assert len(table_rows) == ROWS
    assert all(ln.count(" | ") == 2 for ln in table_rows)  # no stray column separators


def test_github_step_summary_is_appended(runs, tmp_path):
    _, ws, _, _ = runs
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    proc = run_ci(ws, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 1  # REGRESS is still the scenario: tolerance fails
    text = summary.read_text()
    assert text.startswith("earlier step\n## laya-tui: ❌ FAIL · 1 finding · "
                           "0 could not be examined\n")
    proc = run_ci(ws, "--markdown", str(tmp_path / "pr.md"),
                  env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text().count("## laya-tui:") == 2
    assert (tmp_path / "pr.md").read_text() in summary.read_text()


def test_unwritable_step_summary_warns_but_keeps_the_verdict(runs, tmp_path):
    _, ws, _, _ = runs
    proc = run_ci(ws, env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "dir" / "s.md")})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "warning: cannot append to GITHUB_STEP_SUMMARY" in proc.stderr
