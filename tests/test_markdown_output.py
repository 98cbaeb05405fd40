"""``--markdown`` and GITHUB_STEP_SUMMARY: golden summaries of real runs."""

from __future__ import annotations

import copy

import pytest

from laya_tui.baseline import Baseline
from laya_tui.gates import GateSettings, evaluate_all
from laya_tui.markdown import ROWS, build_markdown
from laya_tui.report import build_report, validate_report
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


def test_cli_file_matches_the_report(runs):
    d, _, base, now = runs
    assert (d / "base.md").read_text() == build_markdown(base)
    text = (d / "now.md").read_text()
    assert text == build_markdown(now)
    assert text.startswith("## laya-tui: ❌ FAIL\n")
    assert "| `baseline` | ❌ 5 |" in text and "| `max:cast` | ✅ pass | |" in text


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
    assert text.startswith("earlier step\n## laya-tui: ❌ FAIL\n")
    proc = run_ci(ws, "--markdown", str(tmp_path / "pr.md"),
                  env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text().count("## laya-tui:") == 2
    assert (tmp_path / "pr.md").read_text() in summary.read_text()


def test_unwritable_step_summary_warns_but_keeps_the_verdict(runs, tmp_path):
    _, ws, _, _ = runs
    proc = run_ci(ws, env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "dir" / "s.md")})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "warning: cannot append to GITHUB_STEP_SUMMARY" in proc.stderr
