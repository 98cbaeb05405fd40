"""A laya-tui.report/2 file still reads after the move to report/3 (issue 42): as a baseline,
as a ``--durations`` file, with ``show --headless`` and through every output, its cells'
states derived from their statuses and signals (report/2 has no ``state``).

``tests/fixtures/report_v2/report.json`` was written by laya-tui before the change (see the
README beside it): TileLang cells built but not run (no GPU), built but not compared (no
check), and a wrong-output kernel.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from laya_tui.core.report_types import ReportDict
from laya_tui.core.signals import READABLE_SCHEMAS, SCHEMA_ID
from laya_tui.report.views.legend import State, cell_state

ROOT = Path(__file__).resolve().parents[1]
V2 = ROOT / "tests" / "fixtures" / "report_v2" / "report.json"


def _v2() -> ReportDict:
    return json.loads(V2.read_text())


def test_the_fixture_is_a_v2_report_and_still_readable() -> None:
    doc = _v2()
    assert doc["schema"] == "laya-tui.report/2" != SCHEMA_ID
    assert "laya-tui.report/2" in READABLE_SCHEMAS
    assert all("state" not in p for p in doc["probes"])  # written before states existed
    states = {p["id"]: cell_state(p) for p in doc["probes"] if p["family"] == "tilelang"}
    assert states == {"tilelang/no_check[c,fp32]": State.NOT_COMPARED,
                      "tilelang/no_check[cuda,fp32]": State.NOT_COMPARED,
                      "tilelang/wrong[c,fp32]": State.FINDING,
                      "tilelang/wrong[cuda,fp32]": State.NOT_RUN}


def test_a_v2_baseline_loads_and_compares() -> None:
    from laya_tui.report.baseline import compare, load_baseline

    base = load_baseline(str(V2))
    assert base.report["schema"] == "laya-tui.report/2"
    section = compare(base, _v2()["probes"])  # the same cells now: nothing changed
    assert section["regressions"] == [] and section["improvements"] == []
    assert section["probes"]["compared"] == len(_v2()["probes"])


def test_a_v2_report_gives_durations() -> None:
    from laya_tui.report.saved import durations_from_report

    got = durations_from_report(str(V2))
    want = {p["id"]: p["seconds"] for p in _v2()["probes"] if not p.get("cached")}
    assert got["tilelang/wrong[c,fp32]"] == pytest.approx(want["tilelang/wrong[c,fp32]"])
    assert set(got) <= set(want)


def test_show_headless_names_v2_cells_by_their_state(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "laya_tui", "show", str(V2), "--headless"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    out = proc.stdout
    assert "  ◐ built, not run: tilelang/wrong[cuda,fp32]: no GPU" in out
    assert "  ◑ built, not compared: tilelang/no_check[c,fp32]: no reference" in out
    assert "  verdict: FAIL · 1 finding · 1 built, not run (no GPU) · 2 built, not compared " \
        "(no reference to compare with) · 0 could not be examined" in out


def test_every_output_reads_a_v2_report() -> None:
    from laya_tui.report.junit import build_junit
    from laya_tui.report.markdown import build_markdown
    from laya_tui.report.views.page import page_data

    doc = _v2()
    md = build_markdown(doc)
    assert md.startswith("## laya-tui: ❌ FAIL · 1 finding · 1 built, not run (no GPU)")
    assert "Occurrences: failing tolerance 1." in md  # not also "failing lowering 1"
    assert 'message="◐ built, not run: no GPU"' in build_junit(doc)
    words = {row[0]: row[2] for row in page_data(doc)["probes"]}
    assert words["tilelang/wrong[cuda,fp32]"] == "built, not run"


def test_a_run_takes_a_v2_baseline(tmp_path: Path) -> None:
    pytest.importorskip("tilelang", reason="tilelang not installed: pip install "
                                           "'laya-tui[tilelang]'")
    from tests._states_project import make_project, run_headless

    run = run_headless(make_project(tmp_path), "--baseline", str(V2))
    assert run["proc"].returncode == 1, run["proc"].stderr[-2000:]  # the v2 baseline read
    section = run["report"]["baseline"]
    assert section["schema"] == "laya-tui.report/2"
    assert section["probes"]["compared"] == 4  # the four TileLang cells of both runs
    assert run["report"]["schema"] == SCHEMA_ID
