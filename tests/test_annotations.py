"""``--annotations``: GitHub workflow commands, most important first, capped at GitHub's 10
per level with one closing notice, paths relative to the repository, escaped by GitHub's
rules."""

from __future__ import annotations

import copy
import json
import re

from laya_tui.core.report_types import ReportDict
from laya_tui.report.annotations import PER_LEVEL, annotation_lines, escape_data, escape_property
from laya_tui.report.findings import collect_findings
from laya_tui.report.sources import Sources
from tests._ci_reports import FLAGS, REGRESS, ci_workspace, run_ci
from tests._tui import DEMO_REPORT, DEMO_WS

#: ``::level key=value,key=value::message`` (GitHub's workflow-command syntax)
COMMAND = re.compile(r"^::(?P<level>error|warning|notice)(?: (?P<props>[^:]*))?::(?P<msg>.*)$")


def _unescape(text: str) -> str:
    return (text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":")
            .replace("%2C", ",").replace("%25", "%"))


def parse(line: str) -> dict:
    """A workflow command as GitHub reads it: level, properties, message."""
    m = COMMAND.match(line)
    assert m, line
    props = {}
    for part in (m.group("props") or "").split(","):
        if part:
            key, _, value = part.partition("=")
            props[key] = _unescape(value)
    return {"level": m.group("level"), **props, "message": _unescape(m.group("msg"))}


def many_findings() -> ReportDict:
    """The demo report with 30 more fallbacks (warnings) and 15 more casts (notes)."""
    report: ReportDict = copy.deepcopy(json.loads(DEMO_REPORT.read_text()))
    llama = next(p for p in report["probes"] if p["id"] == "explain/tiny_llama_forward")
    for i in range(30):
        llama["signals"].append({"kind": "fallback", "probe": llama["id"],
                                 "subject": f"aten::op{i}", "count": 1,
                                 "reason": "no kernel, 100%: a,b", "site": {
                                     "file": "model.py", "line": 8, "func": "rms_norm"}})
    for i in range(15):
        llama["signals"].append({"kind": "cast", "probe": llama["id"],
                                 "subject": f"aten::_to_copy#{i}", "count": 1,
                                 "reason": "float16 -> float32",
                                 "site": {"file": "model.py", "line": 7}})
    return report


def test_escaping_follows_github_rules():
    assert escape_data("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    for text in ("x: 1, y: 2 %0A", "two\nlines\r"):
        assert _unescape(escape_property(text)) == text
        assert _unescape(escape_data(text)) == text


def test_capped_per_level_most_important_first_with_one_closing_notice():
    report = many_findings()
    findings = collect_findings(report, Sources(str(DEMO_WS), env={}))
    lines = annotation_lines(findings, files=["laya.sarif"], step_summary=True)
    cmds = [parse(ln) for ln in lines]
    per = {lvl: [c for c in cmds if c["level"] == lvl] for lvl in ("error", "warning", "notice")}
    assert len(per["error"]) == 4  # every gated one: tolerance, crash, timeout, raise
    assert len(per["warning"]) == PER_LEVEL
    assert len(per["notice"]) == PER_LEVEL  # 9 casts and the closing notice
    closing = cmds[-1]
    assert closing["level"] == "notice" and "file" not in closing
    n_warn = sum(1 for f in findings if f.level == "warning")
    n_note = sum(1 for f in findings if f.level == "note")
    left = (n_warn - PER_LEVEL) + (n_note - (PER_LEVEL - 1))
    assert closing["message"].startswith(f"{left} more laya-tui finding(s)")
    assert f"{n_warn - PER_LEVEL} warnings" in closing["message"]
    assert "laya.sarif" in closing["message"] and "step summary" in closing["message"]
    # errors first, and the gated tolerance check at its line
    assert [c["level"] for c in cmds[:4]] == ["error"] * 4
    tol = next(c for c in cmds if "tolerance hidden_states" in c["message"])
    assert (tol["file"], tol["line"]) == ("model.py", "24")
    assert tol["title"] == "laya-tui: Output outside its tolerance"
    # a comma, colon and percent in the text survive the escaping
    odd = next(c for c in cmds if "aten::op0 " in c["message"])
    assert "no kernel, 100%: a,b" in odd["message"]


def test_nothing_left_out_means_no_closing_notice():
    report = json.loads(DEMO_REPORT.read_text())
    findings = collect_findings(report, Sources(str(DEMO_WS), env={}))
    cmds = [parse(ln) for ln in annotation_lines(findings)]
    assert len(cmds) == sum(1 for f in findings if f.state != "absent")
    assert not any("more laya-tui finding" in c["message"] for c in cmds)


def test_stack_frames_are_listed_in_the_message():
    from tests.test_sarif import GB_REPORT, GB_WS

    findings = collect_findings(json.loads(GB_REPORT.read_text()), Sources(str(GB_WS), env={}))
    cmds = [parse(ln) for ln in annotation_lines(findings)]
    gb = next(c for c in cmds if "GB0059" in c["message"])
    assert gb["file"] == "gbmodel.py" and gb["message"].splitlines()[1].startswith(
        "called from: gbmodel.py:")


def test_cli_prints_commands_relative_to_github_workspace(tmp_path):
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    ws = ci_workspace(repo / "sub")  # repo/sub/ws
    base = run_ci(ws, "--json", str(tmp_path / "base.json"))
    assert base.returncode == 0, base.stderr
    (ws / "scenario.json").write_text(json.dumps(REGRESS))
    summary = tmp_path / "summary.md"
    proc = run_ci(ws, "--json", str(tmp_path / "now.json"), "--baseline",
                  str(tmp_path / "base.json"), "--annotations", *FLAGS,
                  env={"GITHUB_WORKSPACE": str(repo), "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 1, proc.stderr
    cmds = [parse(ln) for ln in proc.stdout.splitlines()]
    assert cmds and all(c.get("file", "").startswith("sub/ws/") for c in cmds)
    errors = [c for c in cmds if c["level"] == "error"]
    assert any("aten::neg" in c["message"] and "new fallback" in c["message"] for c in errors)
    # the gone recompile (fixed) is not annotated; the report on --json is untouched
    assert not any("aten::add.Tensor" in c["message"] for c in cmds)
    json.loads((tmp_path / "now.json").read_text())
