"""``laya-tui diff BASE NEW --pr-comment PATH``: the sticky pull-request comment of a known
pair of reports is golden; it starts with the marker, puts what got worse first, links lines
into the pull request's tree, and stays under GitHub's size limit by cutting the longest
lists with a count."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from laya_tui.cli.main import main
from laya_tui.core.report_types import ReportDict
from laya_tui.report.diff import diff_reports
from laya_tui.report.pr_comment import MARKER, MAX_CHARS, build_pr_comment, link_base
from laya_tui.report.sources import Sources
from tests._ci_reports import check_golden
from tests._tui import DEMO_REPORT, DEMO_WS, RECORDED, REPO, TILELANG_REPORT

GB_REPORT = RECORDED / "graph_break_report.json"
ENV = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "someone/port",
       "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567"}
ROPE = ("tilelang/rope_kernel[c,fp32,gpu]", "tilelang/rope_kernel[c,fp16,gpu]")


def _probes(path: Path, ids: tuple[str, ...] | None = None) -> list[dict]:
    probes = json.loads(path.read_text())["probes"]
    return [p for p in probes if ids is None or p["id"] in ids]


def known_pair() -> tuple[ReportDict, ReportDict]:
    """BASE: the recorded demo, the compiled graph-break cell and two rope cells. NEW:

    * a new graph break (GB0059, the print in log_shape, 2x) and the data-dependent branch
      breaking 3x instead of 1x;
    * host bounce d2d_copy 512 KiB -> 1 MiB; tolerance logits 0.0123 -> 0.03 (within 0.05);
    * rope_kernel[c,fp32,gpu] stops lowering (tl.LowerTileOp), rope_kernel[c,fp16,gpu]
      builds now;
    * fallback aten::neg gone, tiny_modernbert_forward failed -> ok (hidden_states
      0.231 -> 0.01); faults/hangs not in NEW.
    """
    base = json.loads(DEMO_REPORT.read_text())
    gb = [p for p in _probes(GB_REPORT) if p["id"].endswith("[compile]")]
    base["probes"] += gb + _probes(TILELANG_REPORT, ROPE)
    new = copy.deepcopy(base)
    base_gb = next(p for p in base["probes"] if p in gb)
    base_gb["signals"] = [s for s in base_gb["signals"]
                          if (s.get("detail") or {}).get("graph_break_id") != "GB0059"]
    probes = {p["id"]: p for p in new["probes"]}
    for s in probes[gb[0]["id"]]["signals"]:
        if s["kind"] == "fallback" and s["reason"].startswith("generic_jump"):
            s["count"] = 3
    llama = probes["explain/tiny_llama_forward"]
    for s in llama["signals"]:
        if s["kind"] == "host_bounce":
            s["bytes"] = 1048576
        if s["kind"] == "tolerance":
            s["value"] = 0.03
    llama["signals"] = [s for s in llama["signals"] if s.get("subject") != "aten::neg"]
    bert = probes["explain/tiny_modernbert_forward"]
    bert["status"], bert["reason"] = "ok", None
    for s in bert["signals"]:
        if s["kind"] == "tolerance":
            s["value"], s["passed"] = 0.01, True
    fp32, fp16 = probes[ROPE[0]], probes[ROPE[1]]
    fp32["status"], fp32["reason"] = "failed", "lowering rope_kernel[c,fp32,gpu]: boom"
    for s in fp32["signals"]:
        if s["kind"] == "lowering":
            s.update(passed=False, reason="Cannot find a layout for fragment `q`",
                     site={"file": "kernels/rope.py", "line": 34},
                     detail=dict(s["detail"], outcome="lower-failed", stage="lower",
                                 **{"pass": "tl.LowerTileOp"}))
    fp16["status"], fp16["reason"] = "ok", None
    for s in fp16["signals"]:
        if s["kind"] == "lowering":
            s.update(passed=True, reason=None,
                     detail=dict(s["detail"], outcome="built", stage="build"))
    new["probes"] = [p for p in new["probes"] if p["id"] != "faults/hangs"]
    return base, new


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A pull request's tree with the files the pair's sites name."""
    root = tmp_path / "repo"
    (root / "kernels").mkdir(parents=True)
    shutil.copy(DEMO_WS / "model.py", root / "model.py")
    shutil.copy(RECORDED / "gb_ws" / "gbmodel.py", root / "gbmodel.py")
    shutil.copy(REPO / "kernels" / "rope.py", root / "kernels" / "rope.py")
    return root


def _comment(base: ReportDict, new: ReportDict, tree: Path, **kw: Any) -> str:
    section = diff_reports(base, new, base_path="base.json")
    return build_pr_comment(section, base, new, base_label="base.json",
                            new_label="new.json", sources=Sources(str(tree), env={}),
                            links=link_base(ENV), **kw)


def test_known_pair_is_golden(tree):
    base, new = known_pair()
    text = _comment(base, new, tree)
    check_golden("pr_comment.md", text)
    assert text.splitlines()[0] == MARKER


def test_worse_first_with_lines_then_better(tree):
    base, new = known_pair()
    text = _comment(base, new, tree)
    worse, _, better = text.partition("### What got better")
    assert "### What got worse" in worse
    blob = f"https://github.com/someone/port/blob/{ENV['GITHUB_SHA']}/"
    gb_line = next(ln for ln in worse.splitlines() if "GB0059" in ln)
    lines = (tree / "gbmodel.py").read_text().splitlines()
    print_line = next(i for i, ln in enumerate(lines, 1) if "print(" in ln)
    assert f"({blob}gbmodel.py#L{print_line})" in gb_line and "| 0 → 2 |" in gb_line
    assert "| 1 → 3 |" in next(ln for ln in worse.splitlines() if "generic_jump" in ln)
    host = next(ln for ln in worse.splitlines() if "d2d_copy" in ln)
    assert "512.0 KiB | 1.0 MiB | +512.0 KiB" in host and "model.py#L7" in host
    assert "tl.LowerTileOp" in worse and "Cannot find a layout" in worse
    assert "| `logits` | 0.0123 | 0.03 | 0.05 |" in worse
    assert "aten::neg" in better and "hidden_states" in better and "rope_kernel[c,fp16,gpu]" \
        in better
    assert "aten::neg" not in worse


def test_huge_diff_stays_under_the_limit_and_counts_what_it_cut(tree):
    base, new = known_pair()
    llama = next(p for p in new["probes"] if p["id"] == "explain/tiny_llama_forward")
    for i in range(6000):
        llama["signals"].append({"kind": "fallback", "probe": llama["id"],
                                 "subject": f"aten::op_{i:05d}" + "x" * 40, "count": 1,
                                 "reason": "no device kernel for this dtype " * 3,
                                 "site": {"file": "model.py", "line": 8}})
    text = _comment(base, new, tree)
    assert len(text) <= MAX_CHARS and text.splitlines()[0] == MARKER
    other = text.split("**Other regressions** (", 1)[1]
    total = int(other.split(")", 1)[0])
    assert total >= 6000
    rows = [ln for ln in other.split("\n\n**", 1)[0].splitlines() if ln.startswith("| `")]
    shown = len(rows)
    # most severe first: the cell that broke before the 6,000 fallbacks (report.severity)
    assert rows[0].startswith("| `tilelang/rope_kernel[c,fp32,gpu]`"), rows[0]
    assert f"| {total - shown} more in the JSON diff" in other
    assert "**New graph breaks** (2)" in text  # the short lists are kept whole
    small = _comment(base, new, tree, max_chars=4000)
    assert len(small) <= 4000 and small.splitlines()[0] == MARKER


def test_cli_writes_the_comment_and_checks_the_path_first(tmp_path, monkeypatch, capsys):
    base, new = known_pair()
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "new.json").write_text(json.dumps(new))
    monkeypatch.chdir(tmp_path)
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    assert main(["diff", "base.json", "new.json", "--headless", "--pr-comment", "pr.md",
                 "--workspace", str(tmp_path)]) == 0
    text = (tmp_path / "pr.md").read_text()
    assert text.startswith(MARKER + "\n") and "### What got worse" in text
    assert main(["diff", "base.json", "new.json", "--headless", "--pr-comment",
                 "nope/pr.md"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_report_paths_outside_the_workspace_are_not_in_the_comment(tmp_path, monkeypatch):
    """A runner's absolute /tmp paths mean nothing in a pull request: the comment and the
    markdown name reports outside the workspace by file name, inside it relatively."""
    base, new = known_pair()
    outside, ws = tmp_path / "runner-tmp", tmp_path / "ws"
    outside.mkdir()
    (ws / "reports").mkdir(parents=True)
    (outside / "w_base.json").write_text(json.dumps(base))
    (ws / "reports" / "new.json").write_text(json.dumps(new))
    monkeypatch.chdir(ws)
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    assert main(["diff", str(outside / "w_base.json"), str(ws / "reports" / "new.json"),
                 "--headless", "--pr-comment", "pr.md", "--markdown", "d.md",
                 "--workspace", str(ws)]) == 0
    for name in ("pr.md", "d.md"):
        text = (ws / name).read_text()
        assert str(tmp_path) not in text, name
        assert "`w_base.json`" in text and "`reports/new.json`" in text, name
