"""One report, every output, the same word for each cell (issue 42 items 1 and 2).

A real headless run on a temp project (tests/_states_project.py: a wrong-output TileLang
kernel, a kernel file with no check, a probe that raises, one that skips, one that passes)
is read back through the tree, the HTML page's data, JUnit, SARIF, markdown, the
annotations and ``show --headless``; each cell's state word (report.views.legend) must be
the one the JSON report's ``state`` names. The verdict line leads the headless summary,
the markdown and the step summary, and the dashboard header shows the finding count.
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from laya_tui.report.verdict import verdict_line
from laya_tui.report.views.legend import STATE_MARKS, State, state_mark
from tests._states_project import ROOT, make_project, run_headless

#: What the project must hold: the cell and its state.
EXPECTED = {
    "tilelang/wrong[c,fp32]": State.FINDING,
    "story/raises": State.NOT_EXAMINED,
    "story/needs_thing": State.SKIPPED,
    "story/fine": State.OK,
    "tilelang/no_check[c,fp32]": State.NOT_COMPARED,
    "tilelang/no_check[cuda,fp32]": State.NOT_COMPARED,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: Any) -> dict[str, Any]:
    pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                           "'laya-tui[tilelang]'")
    return run_headless(make_project(tmp_path_factory.mktemp("states")))


def _word_of(label: str) -> str | None:
    """The state word a text opens with (``◐ built, not run: ...`` -> ``built, not run``)."""
    for mark in sorted(STATE_MARKS.values(), key=lambda m: -len(m.label)):
        if label.startswith(mark.label):
            return mark.word
    return None


def _states(run: dict[str, Any]) -> dict[str, str]:
    return {p["id"]: p["state"] for p in run["report"]["probes"]}


def test_the_run_holds_every_state(run: dict[str, Any]) -> None:
    states = _states(run)
    for pid, state in EXPECTED.items():
        assert states[pid] == state, (pid, states[pid])
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:  # pragma: no cover - tilelang needs torch
        gpu = False
    if not gpu:  # the cuda cell of the wrong kernel: built, never run here
        assert states["tilelang/wrong[cuda,fp32]"] == State.NOT_RUN
    assert run["report"]["schema"] == "laya-tui.report/3"
    assert run["report"]["summary"]["states"][State.FINDING] == 1


def _outputs(run: dict[str, Any], tmp: Path) -> dict[str, dict[str, str]]:
    """``{output: {cell: state word it gives}}`` (cells an output does not name: absent)."""
    out: dict[str, dict[str, str]] = {}
    report = run["report"]
    # HTML: the probes table the page draws
    from laya_tui.report.views.page import page_data

    out["html"] = {row[0]: row[2] for row in page_data(report)["probes"]}
    # JUnit: a skipped / failure / error message opens with the state; no child: ok
    junit: dict[str, str] = {}
    for case in ET.fromstring(run["junit"]).iter("testcase"):
        pid = f"{case.get('classname')}/{case.get('name')}"
        kids = [k for k in case if k.tag in ("skipped", "failure", "error")]
        word = _word_of(kids[0].get("message") or "") if kids else state_mark(State.OK).word
        if word is not None:
            junit[pid] = word
    out["junit"] = junit
    # SARIF: every result carries its cell's state word
    out["sarif"] = {r["properties"]["probe"]: r["properties"]["state"]
                    for r in run["sarif"]["runs"][0]["results"]}
    # markdown: the tables' first column is the state
    md: dict[str, str] = {}
    for m in re.finditer(r"^\| ([^|`]+) \| `([^`]+)` \|", run["markdown"], re.M):
        word = _word_of(m.group(1).strip())
        if word is not None:
            md[m.group(2)] = word
    out["markdown"] = md
    # annotations: a cell that is not ok opens its message with its state
    notes: dict[str, str] = {}
    for line in run["proc"].stdout.splitlines():
        m = re.match(r"::\w+ [^:]*::(.*)$", line)
        pid = re.search(r"[Pp]robe ([\w/\[\],.]+?)[ .:]", m.group(1)) if m else None
        if m and pid:
            word = _word_of(m.group(1))
            if word is not None:
                notes[pid.group(1)] = word
    out["annotations"] = notes
    # headless summary (the run's stderr) and show --headless: one line per cell not ok
    shown = subprocess.run([sys.executable, "-m", "laya_tui", "show", str(run["dir"] / "r.json"),
                            "--headless"], capture_output=True, text=True, timeout=120,
                           cwd=tmp, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert shown.returncode in (0, 1), shown.stderr[-2000:]
    for name, text in (("headless", run["proc"].stderr), ("show", shown.stdout)):
        cells: dict[str, str] = {}
        for line in text.splitlines():
            word = _word_of(line.strip())
            m = re.match(r"\s+\S+ [^:]+: (\S+?)(?::|$)", line)
            if word is not None and m:
                cells[m.group(1)] = word
        out[name] = cells
    return out


def test_each_cell_has_the_same_word_in_every_output(run: dict[str, Any],
                                                     tmp_path: Path) -> None:
    want = {pid: state_mark(s).word for pid, s in _states(run).items()}
    outputs = _outputs(run, tmp_path)
    differ = [(name, pid, word, want[pid]) for name, cells in outputs.items()
              for pid, word in cells.items() if pid in want and word != want[pid]]
    assert differ == []
    # every output names the cells it should: all of them (html, junit), every cell not
    # plain ok (markdown tables, the summaries), every finding's cell (sarif, annotations)
    not_ok = {pid for pid, s in _states(run).items() if s != State.OK}
    assert set(want) <= set(outputs["html"]) and set(want) <= set(outputs["junit"])
    for name in ("headless", "show"):
        assert not_ok <= set(outputs[name]), (name, not_ok - set(outputs[name]))
    built = {pid for pid, s in _states(run).items()
             if s in (State.NOT_RUN, State.NOT_COMPARED)}
    assert built and built <= set(outputs["markdown"])
    for name in ("sarif", "annotations"):
        assert {"tilelang/wrong[c,fp32]", "story/raises"} <= set(outputs[name]), name
    # built, not run is never ok anywhere
    for name, cells in outputs.items():
        for pid in built:
            assert cells.get(pid) != "ok", (name, pid)


def test_the_verdict_line_leads_the_summaries(run: dict[str, Any]) -> None:
    line = verdict_line(run["report"])
    assert line.startswith("FAIL · 1 finding · ")
    assert "2 built, not compared (no reference to compare with)" in line
    assert line.endswith("1 could not be examined")
    assert run["proc"].stderr.splitlines()[-2] == f"  verdict: {line}"  # (then "wrote ...")
    assert run["markdown"].splitlines()[0] == f"## laya-tui: ❌ {line}"
    assert run["step_summary"].splitlines()[0] == f"## laya-tui: ❌ {line}"


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_header_shows_the_finding_count(run: dict[str, Any],
                                                  size: tuple[int, int]) -> None:
    from laya_tui.tui.widgets.probe_tree import probe_label
    from tests._tui import recorded_app

    app = recorded_app(report=run["dir"] / "r.json", workspace=str(run["dir"]))
    async with app.run_test(size=size) as pilot:
        await app.settled()
        await pilot.pause()
        main = app.main_screen
        status = str(main.query_one("#summary-status").render())
        gates = str(main.query_one("#summary-gates").render())
        labels = {pid: str(probe_label(st)) for pid, st in app.model.probes.items()}
    assert "finding 1" in status  # first on the line after ok: visible at 80 columns
    assert "FAIL" in gates and "1 finding" in gates
    # the tree: each cell's glyph and word as every other output gives them
    for pid, state in _states(run).items():
        mark = state_mark(state)
        assert labels[pid].startswith(mark.glyph + " "), (pid, labels[pid])
        if state != State.OK:
            assert f"  {mark.word}" in labels[pid], (pid, labels[pid])
