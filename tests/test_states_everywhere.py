"""One report, every output, the same word for each cell (issue 42 items 1 and 2).

A real headless run on a temp project (tests/_states_project.py: a wrong-output TileLang
kernel, a kernel file with no check, a probe that raises, one that skips, one that passes)
is read back through the tree, the HTML page's data, JUnit, SARIF, markdown, the
annotations and ``show --headless``; each cell's state word (report.views.legend) must be
the one the JSON report's ``state`` names. The verdict line leads the headless summary,
the markdown and the step summary, and the dashboard header shows the finding count.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from laya_tui.report.verdict import verdict_line
from laya_tui.report.views.legend import State, state_mark
from tests._state_words import (
    Words,
    annotation_words,
    disagreements,
    html_words,
    junit_words,
    markdown_words,
    sarif_words,
    summary_words,
    tree_words,
)
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
    assert run["report"]["schema"] == "laya-tui.report/5"
    assert run["report"]["summary"]["states"][State.FINDING] == 1


def _outputs(run: dict[str, Any], tmp: Path) -> dict[str, Words]:
    """``{output: {cell: state word it gives}}`` (cells an output does not name: absent)."""
    shown = subprocess.run([sys.executable, "-m", "laya_tui", "show", str(run["dir"] / "r.json"),
                            "--headless"], capture_output=True, text=True, timeout=120,
                           cwd=tmp, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert shown.returncode in (0, 1), shown.stderr[-2000:]
    return {"tree": tree_words(run["report"]), "html": html_words(run["report"]),
            "junit": junit_words(run["junit"]), "sarif": sarif_words(run["sarif"]),
            "markdown": markdown_words(run["markdown"]),
            "annotations": annotation_words(run["proc"].stdout),
            "headless": summary_words(run["proc"].stderr), "show": summary_words(shown.stdout)}


def test_each_cell_has_the_same_word_in_every_output(run: dict[str, Any],
                                                     tmp_path: Path) -> None:
    want = {pid: state_mark(s).word for pid, s in _states(run).items()}
    outputs = _outputs(run, tmp_path)
    assert disagreements(want, outputs) == []
    # every output names the cells it should: all of them (html, junit), every cell not
    # plain ok (markdown tables, the summaries), every finding's cell (sarif, annotations)
    not_ok = {pid for pid, s in _states(run).items() if s != State.OK}
    for name in ("tree", "html", "junit"):
        assert set(want) <= set(outputs[name]), (name, set(want) - set(outputs[name]))
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
