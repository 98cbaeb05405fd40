"""Every gate, end to end: the real CLI on the ``ci`` workspace, its exit code and report."""

from __future__ import annotations

import json
from typing import Any

import pytest

from laya_tui.report.document import validate_report
from tests._ci_reports import ci_workspace, real_report, run_ci, set_scenario

# (scenario, extra flags, exit code, the gates that must fail)
#: name: (scenario, flags, exit code, failing gates)
CASES: dict[str, tuple[dict[str, Any], list[str], int, set[str]]] = {
    "all-hold": ({}, [], 0, set()),
    "crash": ({"crash": True}, [], 1, {"no-crash"}),
    "timeout": ({"hang": True}, [], 1, {"no-timeout"}),
    "probe-error": ({"numerics_status": "raise"}, [], 1, {"no-probe-error"}),
    "tolerance": ({"tolerance": 3e-5}, [], 1, {"tolerance"}),
    "fail-on-lowering": ({}, ["--fail-on", "lowering"], 1, {"fail-on:lowering"}),
    "fail-on-lowering-passing": ({"lowering_bf16_fails": False}, ["--fail-on", "lowering"], 0,
                                 set()),
    "fail-on-fallback": ({}, ["--fail-on", "fallback,cast"], 1,
                         {"fail-on:fallback", "fail-on:cast"}),
    "fail-on-recompile-none": ({"recompile": {}}, ["--fail-on", "recompile"], 0, set()),
    "fail-on-host-bounce": ({}, ["--fail-on=host_bounce"], 1, {"fail-on:host_bounce"}),
    "fail-on-tolerance-passing": ({}, ["--fail-on", "tolerance"], 0, set()),
    "fail-on-skipped": ({}, ["--fail-on", "skipped"], 1, {"fail-on:skipped"}),
    "fail-on-failed": ({}, ["--fail-on", "failed"], 1, {"fail-on:failed"}),
    "max-fallback-over": ({}, ["--max", "fallback=1"], 1, {"max:fallback"}),
    "max-fallback-at": ({}, ["--max", "fallback=2"], 0, set()),
    "max-host-bounce-counts": ({}, ["--max", "host_bounce=1,recompile=5"], 1,
                               {"max:host_bounce"}),
    "max-lowering-failing-only": ({}, ["--max", "lowering=1"], 0, set()),
    "max-later-wins": ({}, ["--max", "fallback=0", "--max", "fallback=9"], 0, set()),
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return ci_workspace(tmp_path_factory.mktemp("gates"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gate_exit_code(ws, tmp_path, name):
    scenario, flags, code, failing = CASES[name]
    set_scenario(ws, scenario)
    out = tmp_path / "r.json"
    proc = run_ci(ws, "--json", str(out), *flags)
    assert proc.returncode == code, proc.stderr
    report = json.loads(out.read_text())
    validate_report(report)
    failed = {g["name"] for g in report["gates"] if not g["passed"]}
    assert failed == failing
    assert report["summary"]["passed"] is (code == 0)
    for g in report["gates"]:
        if not g["passed"]:
            assert f"gate FAIL {g['name']} ({len(g['failures'])})" in proc.stderr


def test_baseline_gate_exit_codes(ws, tmp_path):
    base = tmp_path / "base.json"
    real_report(ws, base, {})
    set_scenario(ws, {"fallback": {"aten::mul.out": 3}})
    assert run_ci(ws, "--baseline", str(base)).returncode == 1
    set_scenario(ws, {"fallback": {"aten::mul.out": 1}})
    assert run_ci(ws, "--baseline", str(base)).returncode == 0  # improvements never fail


@pytest.mark.parametrize("flags,needle", [
    (["--fail-on", "bogus"], "--fail-on: unknown kind 'bogus'"),
    (["--fail-on", "fallback,,nope"], "--fail-on: unknown kind 'nope'"),
    (["--max", "fallback"], "--max: expected KIND=N"),
    (["--max", "fallback=-1"], "--max: expected KIND=N"),
    (["--max", "fallback=two"], "--max: expected KIND=N"),
    (["--max", "vibes=1"], "--max: unknown kind 'vibes'"),
    (["--junit", "/no/such/dir/j.xml"], "cannot write --junit /no/such/dir/j.xml"),
    (["--markdown", "/no/such/dir/s.md"], "cannot write --markdown /no/such/dir/s.md"),
])
def test_bad_gate_flags_exit_2_and_run_nothing(ws, tmp_path, flags, needle):
    marker = tmp_path / "ran"
    proc = run_ci(ws, *flags, env={"LAYA_CI_RAN": str(marker)})
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert not marker.exists()


def test_same_output_file_twice_is_a_usage_error(ws, tmp_path):
    out = tmp_path / "same"
    proc = run_ci(ws, "--json", str(out), "--junit", str(out))
    assert proc.returncode == 2
    assert "--json and --junit name the same file" in proc.stderr
