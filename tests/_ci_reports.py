"""Helpers for the CI-gate tests: real reports from the ``ci`` fixture workspace."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any

from laya_tui.core.report_types import ReportDict
from laya_tui.report.document import validate_report
from tests._util import WORKSPACES, run_cli

GOLDEN = Path(__file__).parent / "golden"
FIXED_CREATED = "2026-01-01T00:00:00Z"

#: The regressed scenario the golden-file tests share, and the gate flags they run with.
REGRESS = {"fallback": {"aten::mul.out": 3, "aten::neg": 1}, "recompile": {},
           "host_bounce_bytes": 8192, "tolerance": 3e-5, "lowering_bf16_fails": False,
           "skip": False}
FLAGS = ("--fail-on", "host_bounce", "--max", "fallback=3,cast=5")


def ci_workspace(dest: Path, scenario: dict[str, Any] | None = None,
                 pyproject: str | None = None) -> Path:
    """A copy of the ``ci`` workspace with ``scenario.json`` (and a pyproject) written."""
    ws = dest / "ws"
    if not ws.exists():
        shutil.copytree(WORKSPACES / "ci", ws)
    set_scenario(ws, scenario)
    if pyproject is not None:
        (ws / "pyproject.toml").write_text(pyproject)
    return ws


def set_scenario(ws: Path, scenario: dict[str, Any] | None) -> None:
    """Write (or remove) the scenario the ci probes read."""
    path = ws / "scenario.json"
    if scenario is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(json.dumps(scenario))


def run_ci(ws: Path, *args: str, env: dict[str, str] | None = None):
    """``laya-tui --headless`` on ``ws`` for real (no cache); returns the process."""
    run_env = {"GITHUB_STEP_SUMMARY": ""}
    run_env.update(env or {})
    if not run_env["GITHUB_STEP_SUMMARY"]:
        run_env.pop("GITHUB_STEP_SUMMARY")
    full = dict(os.environ)
    full.pop("GITHUB_STEP_SUMMARY", None)
    full.update(run_env)
    return run_cli("--workspace", str(ws), "--headless", "--no-cache", "-q", *args, cwd=ws,
                   env=full, timeout=120)


def real_report(ws: Path, out: Path, scenario: dict[str, Any] | None = None,
                *args: str) -> ReportDict:
    """Run the ci probes under ``scenario`` and return the validated report."""
    set_scenario(ws, scenario)
    proc = run_ci(ws, "--json", str(out), *args)
    assert proc.returncode in (0, 1), proc.stderr
    report: ReportDict = json.loads(out.read_text())
    validate_report(report)
    return report


def normalized(report: ReportDict) -> ReportDict:
    """A copy without clock, machine or timing facts (for golden files)."""
    r = copy.deepcopy(report)
    r["created"] = FIXED_CREATED
    r["environment"] = {"versions": {"laya-tui": "0.1.0"}}
    r["summary"]["seconds"] = 1.0
    for i, p in enumerate(r["probes"]):
        seconds = p["seconds"] = round(0.25 * (i + 1), 3)
        if "started" in p:  # one after another, each its seconds long
            p["started"] = 1000.0 + 0.125 * i * (i + 1)
            p["ended"] = p["started"] + seconds
        p.pop("budget", None)  # the machine's CPU time and load
        p["log_tail"] = ""
        p["deps"] = sorted(os.path.basename(d) for d in p.get("deps", []))
        file = p.get("file")
        p["file"] = os.path.basename(file) if file else file
        for s in p["signals"]:
            if s["kind"] == "timing":
                s["seconds"] = 0.5
    if "baseline" in r:
        r["baseline"]["path"] = "baseline.json"
        r["baseline"]["created"] = FIXED_CREATED
        r["baseline"]["environment"] = {}
        for g in r["gates"]:
            if g["name"] == "baseline":
                g["description"] = "no regression against the baseline baseline.json"
    return r


def check_golden(name: str, text: str) -> None:
    """Compare ``text`` with ``tests/golden/NAME``; LAYA_UPDATE_GOLDEN=1 rewrites it."""
    path = GOLDEN / name
    if os.environ.get("LAYA_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.exists(), f"golden file {path} is missing (LAYA_UPDATE_GOLDEN=1 writes it)"
    assert text == path.read_text(), f"{name} differs from its golden file (rerun with " \
                                     "LAYA_UPDATE_GOLDEN=1 after checking the change)"
