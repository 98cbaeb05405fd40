"""Golden files for the report's ``gates`` and ``baseline`` sections (two real runs)."""

from __future__ import annotations

import json

import pytest

from laya_tui.report.document import validate_report
from tests._ci_reports import FLAGS, REGRESS, check_golden, ci_workspace, normalized, real_report


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """(base, regressed) real reports, the second compared with the first."""
    d = tmp_path_factory.mktemp("golden")
    ws = ci_workspace(d)
    base = real_report(ws, d / "base.json")
    now = real_report(ws, d / "now.json", REGRESS, "--baseline", str(d / "base.json"), *FLAGS)
    return base, now


def test_gates_section_golden(reports):
    base, now = reports
    r = normalized(now)
    validate_report(r)
    text = json.dumps({"summary_passed": r["summary"]["passed"], "gates": r["gates"],
                       "baseline": r["baseline"]}, indent=1, sort_keys=True) + "\n"
    check_golden("gates_regressed.json", text)


def test_gates_section_golden_without_baseline(reports):
    base, _ = reports
    r = normalized(base)
    validate_report(r)
    text = json.dumps({"summary_passed": r["summary"]["passed"], "gates": r["gates"]},
                      indent=1, sort_keys=True) + "\n"
    check_golden("gates_base.json", text)
