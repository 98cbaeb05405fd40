"""Real workers: segfault, abort, hang, garbage, raise and exit beside a healthy probe."""

from __future__ import annotations

import json

import pytest

from laya_tui.report.document import validate_report
from tests._util import copy_workspace, run_cli


@pytest.fixture(scope="module")
def faults_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    ws = copy_workspace("mixed", tmp)
    out = tmp / "report.json"
    proc = run_cli("--workspace", str(ws), "--headless", "--json", str(out),
                   "--cache-dir", str(tmp / "cache"), cwd=ws)
    return proc, json.loads(out.read_text()), ws, tmp


def by_id(report):
    return {p["id"]: p for p in report["probes"]}


def test_every_fault_ends_only_its_probe(faults_report):
    proc, report, _, _ = faults_report
    validate_report(report)
    probes = by_id(report)
    assert probes["faults/healthy"]["status"] == "ok"
    assert probes["faults/segfault"]["status"] == "crashed"
    assert "SIGSEGV" in probes["faults/segfault"]["reason"]
    assert "about to segfault" in probes["faults/segfault"]["log_tail"]
    assert "Fatal Python error" in probes["faults/segfault"]["log_tail"]
    assert probes["faults/aborts"]["status"] == "crashed"
    assert "SIGABRT" in probes["faults/aborts"]["reason"]
    assert probes["faults/hangs"]["status"] == "timeout"
    assert "timed out after 3 s" in probes["faults/hangs"]["reason"]
    assert probes["faults/garbage_stdout"]["status"] == "ok"
    assert "garbage" in probes["faults/garbage_stdout"]["log_tail"]
    assert probes["faults/garbage_pipe"]["status"] == "crashed"
    assert "malformed line on the signal pipe: this is not json" in \
        probes["faults/garbage_pipe"]["reason"]
    raised = probes["faults/raises"]
    assert raised["status"] == "failed" and raised["reason"] == "ValueError: probe bug"
    assert raised["error"]["site"]["func"] == "raises"
    assert "Traceback" in raised["log_tail"]
    assert probes["faults/exits_nonzero"]["status"] == "crashed"
    assert "exited with code 7" in probes["faults/exits_nonzero"]["reason"]
    # A probe queued after all those faults still ran in a fresh worker.
    assert probes["other/cells[a]"]["status"] == "ok"
    assert proc.returncode == 1
    assert "crashed: faults/segfault" in proc.stderr


def test_library_output_is_the_log_not_the_stream(faults_report):
    _, report, _, _ = faults_report
    healthy = by_id(report)["faults/healthy"]
    assert "library noise on stdout" in healthy["log_tail"]
    assert "library noise on stderr" in healthy["log_tail"]
    assert [s["kind"] for s in healthy["signals"]] == ["tolerance"]


def test_dependency_set_includes_imported_workspace_file(faults_report):
    _, report, _, _ = faults_report
    deps = by_id(report)["faults/healthy"]["deps"]
    assert "probes/faults.py" in deps
    assert "helpers/numbers.py" in deps


def test_gates_fail_on_crash_timeout_and_probe_error(faults_report):
    _, report, _, _ = faults_report
    failed = {g["name"] for g in report["gates"] if not g["passed"]}
    assert failed == {"no-crash", "no-timeout", "no-probe-error"}


def test_cached_rerun_and_invalidation(faults_report):
    _, _, ws, tmp = faults_report
    out = tmp / "again.json"
    args = ("--workspace", str(ws), "--headless", "--json", str(out), "--cache-dir",
            str(tmp / "cache"), "--only", "faults/healthy", "--only", "other/*")
    run_cli(*args, cwd=ws)
    report = json.loads(out.read_text())
    validate_report(report)
    assert all(p["cached"] for p in report["probes"])
    assert by_id(report)["faults/healthy"]["signals"][0]["subject"] == "answer"
    (ws / "helpers" / "numbers.py").write_text("ANSWER = 43\n")
    run_cli(*args, cwd=ws)
    report = by_id(json.loads(out.read_text()))
    assert report["faults/healthy"]["cached"] is False
    assert report["faults/healthy"]["status"] == "failed"
    assert report["other/cells[a]"]["cached"] is True
    proc = run_cli(*args, "--no-cache", cwd=ws)
    assert not any(p["cached"] for p in json.loads(out.read_text())["probes"])
    assert proc.returncode == 1
