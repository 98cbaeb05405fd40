"""``laya-tui diff``: two reports with known differences -> golden text and markdown, the
dashboard opened on the differences with the same drill-down, and exit 2 on bad input."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from laya_tui.cli.main import main
from laya_tui.cli.show import build_saved_app
from laya_tui.core.report_types import ReportDict
from laya_tui.report.diff import diff_report, diff_reports
from tests._tui import DEMO_REPORT, DEMO_WS, SIZE

GOLDEN = Path(__file__).parent / "golden"


def changed_demo() -> ReportDict:
    """The demo report with these known differences (and nothing else):

    * explain/tiny_llama_forward: fallback aten::mul.out 4x -> 6x, aten::neg gone, a new
      fallback aten::silu, host_bounce d2d_copy 512 KiB -> 1 MiB, tolerance logits 0.0123 ->
      0.03 (worse, still within 0.05);
    * explain/tiny_modernbert_forward: failed -> ok, tolerance hidden_states 0.231 -> 0.01;
    * faults/segfault: crashed -> timeout; faults/hangs: not in NEW; extra/probe: only in NEW.
    """
    new = copy.deepcopy(json.loads(DEMO_REPORT.read_text()))
    probes = {p["id"]: p for p in new["probes"]}
    llama = probes["explain/tiny_llama_forward"]["signals"]
    for s in llama:
        if s["kind"] == "fallback" and s["subject"] == "aten::mul.out":
            s["count"] = 6
        if s["kind"] == "host_bounce":
            s["bytes"] = 1048576
        if s["kind"] == "tolerance":
            s["value"] = 0.03
    llama[:] = [s for s in llama if s.get("subject") != "aten::neg"]
    llama.append({"kind": "fallback", "probe": "explain/tiny_llama_forward",
                  "subject": "aten::silu", "count": 2, "bytes": 4096,
                  "reason": "no device kernel", "site": {"file": "model.py", "line": 12,
                                                         "func": "mlp"},
                  "fix": "register a device kernel for silu"})
    bert = probes["explain/tiny_modernbert_forward"]
    bert["status"], bert["reason"] = "ok", None
    for s in bert["signals"]:
        if s["kind"] == "tolerance":
            s["value"], s["passed"] = 0.01, True
    seg = probes["faults/segfault"]
    seg["status"], seg["reason"] = "timeout", "timed out after 1.5 s"
    new["probes"] = [p for p in new["probes"] if p["id"] != "faults/hangs"]
    new["probes"].append({"id": "extra/probe", "family": "extra", "status": "ok",
                          "reason": None, "seconds": 0.1, "cached": False, "deps": [],
                          "signals": [], "log_tail": ""})
    new["environment"]["versions"]["torch"] = "2.14.0"
    return new


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_text(DEMO_REPORT.read_text())
    new.write_text(json.dumps(changed_demo()))
    return base, new


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LAYA_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_headless_text_is_golden(pair, capsys, monkeypatch):
    base, new = pair
    monkeypatch.chdir(base.parent)
    assert main(["diff", "base.json", "new.json", "--headless"]) == 0
    _golden("diff_demo.txt", capsys.readouterr().out)


def test_markdown_is_golden(pair, monkeypatch):
    base, new = pair
    monkeypatch.chdir(base.parent)
    assert main(["diff", "base.json", "new.json", "--headless", "--markdown", "d.md"]) == 0
    _golden("diff_demo.md", (base.parent / "d.md").read_text())


def test_every_known_difference_is_found_once():
    base = json.loads(DEMO_REPORT.read_text())
    section = diff_reports(base, changed_demo())
    got = sorted((i["probe"], i["change"], i.get("subject", "")) for lst in
                 ("regressions", "improvements", "notes") for i in section[lst])
    assert got == sorted([
        ("explain/tiny_llama_forward", "more", "aten::mul.out"),
        ("explain/tiny_llama_forward", "gone", "aten::neg"),
        ("explain/tiny_llama_forward", "new", "aten::silu"),
        ("explain/tiny_llama_forward", "more-bytes", "d2d_copy"),
        ("explain/tiny_llama_forward", "worse", "logits"),
        ("explain/tiny_modernbert_forward", "status", ""),
        ("explain/tiny_modernbert_forward", "now-passing", "hidden_states"),
        ("faults/segfault", "status", ""),
        ("faults/hangs", "not-run", ""),
        ("extra/probe", "not-compared", ""),
    ])
    assert section["environment"] == {"torch": {"before": "2.13.0+cpu", "after": "2.14.0"}}
    assert diff_reports(base, base)["regressions"] == []


@pytest.mark.asyncio
async def test_dashboard_opens_on_the_differences_with_drill_down():
    base, new = json.loads(DEMO_REPORT.read_text()), changed_demo()
    view = diff_report(base, new, diff_reports(base, new))
    app = build_saved_app(view, label="diff base -> new", workspace=str(DEMO_WS),
                          why_off="this is a diff of two saved reports")
    async with app.run_test(size=SIZE) as pilot:
        await app.settled()
        await pilot.pause()
        assert set(app.model.probes) == {"explain/tiny_llama_forward",
                                         "explain/tiny_modernbert_forward", "faults/segfault",
                                         "faults/hangs", "extra/probe"}
        assert app.model.probes["faults/segfault"].status == "timeout"
        screen = app.main_screen
        screen.select_scope(("probe", "explain/tiny_llama_forward"))
        await pilot.pause()
        await pilot.press("enter")  # into the table: the first change
        await pilot.pause()
        row = app.model.rows[screen.table.cursor_key]
        assert row.sig["detail"]["class"] in ("regression", "improvement")
        text = screen.detail.plain_text()
        assert "call site" in text and "model.py" in text  # the original signal's site
        assert "before" in text and "after" in text
        await pilot.press("r")
        await pilot.pause()
        assert any("diff of two saved reports" in n.message for n in app._notifications)


def test_bad_input_is_exit_2(tmp_path, capsys):
    future = json.loads(DEMO_REPORT.read_text())
    future["schema"] = "laya-tui.report/9"
    (tmp_path / "f.json").write_text(json.dumps(future))
    assert main(["diff", str(DEMO_REPORT), str(tmp_path / "f.json")]) == 2
    assert "newer laya-tui" in capsys.readouterr().err
    assert main(["diff", str(DEMO_REPORT), str(tmp_path / "missing.json")]) == 2
    assert main(["diff", str(DEMO_REPORT), str(DEMO_REPORT), "--margin", "-1"]) == 2
