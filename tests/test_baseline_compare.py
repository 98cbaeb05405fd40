"""Baseline comparison: a regression and an improvement case for every kind.

The base report is a real run of the ``ci`` fixture workspace; each case mutates a copy the
way a later run would differ, compares, and checks the report it makes still validates.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

from laya_tui.core.report_types import ReportDict
from laya_tui.report.baseline import Baseline
from laya_tui.report.document import build_report, validate_report
from laya_tui.report.gates import GateSettings, evaluate_all
from tests._ci_reports import ci_workspace, real_report, run_ci

LLAMA, FP32, BF16, NUM, OPT, SLOW = ("ci/llama_forward", "ci/gemm_kernel[c,fp32,cpu]",
                                     "ci/gemm_kernel[c,bf16,gpu]", "ci/numerics",
                                     "ci/optional_backend", "ci_slow/compile_step")


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> ReportDict:
    d = tmp_path_factory.mktemp("cmp")
    return real_report(ci_workspace(d), d / "base.json")


def _probe(report: dict[str, Any], pid: str) -> dict[str, Any]:
    return next(p for p in report["probes"] if p["id"] == pid)


def _sig(report: dict[str, Any], pid: str, kind: str, subject: str | None = None):
    return next(s for s in _probe(report, pid)["signals"]
                if s["kind"] == kind and (subject is None or s.get("subject") == subject))


def _drop(report, pid, kind, subject=None):
    p = _probe(report, pid)
    p["signals"] = [s for s in p["signals"]
                    if not (s["kind"] == kind and (subject is None or s.get("subject") == subject))]


def _add(report, pid, **sig):
    _probe(report, pid)["signals"].append(dict(sig, probe=pid))


def run_compare(base: ReportDict, mutate, margin: float = 0.25) -> dict[str, Any]:
    """Mutate a copy of ``base``, compare, and check the resulting report validates."""
    now = copy.deepcopy(base)
    mutate(now)
    settings = GateSettings(baseline=Baseline("base.json", copy.deepcopy(base)),
                            tolerance_margin=margin)
    gates, extra = evaluate_all(now["probes"], settings)
    report = build_report(now["probes"], seconds=1.0, gates=gates, extra=extra)
    validate_report(json.loads(json.dumps(report)))
    section: dict[str, Any] = dict(report["baseline"])  # read by a case's key: open
    gate = next(g for g in gates if g["name"] == "baseline")
    assert gate["passed"] == (not section["regressions"])
    assert gate["failures"] == section["regressions"]
    return section


def _changes(items):
    return sorted((i["change"], i["kind"], i["probe"]) for i in items)


def _set(pid, kind, subject=None, **fields):
    return lambda r: _sig(r, pid, kind, subject).update(fields)


def _status(pid, status, reason=None):
    return lambda r: _probe(r, pid).update(status=status, reason=reason)


def _both(*fns):
    def go(r):
        for f in fns:
            f(r)
    return go


REG, IMP, NOTE = "regressions", "improvements", "notes"

CASES = {
    # fallback
    "fallback-new": (lambda r: _add(r, LLAMA, kind="fallback", subject="aten::neg",
                                    count=1, reason="misaligned-32"),
                     REG, [("new", "fallback", LLAMA)]),
    "fallback-more": (_set(LLAMA, "fallback", count=5), REG, [("more", "fallback", LLAMA)]),
    "fallback-fewer": (_set(LLAMA, "fallback", count=1), IMP, [("fewer", "fallback", LLAMA)]),
    "fallback-gone": (lambda r: _drop(r, LLAMA, "fallback"), IMP,
                      [("gone", "fallback", LLAMA)]),
    # recompile
    "recompile-new": (lambda r: _add(r, LLAMA, kind="recompile", subject="aten::mm",
                                     reason="new input shape"),
                      REG, [("new", "recompile", LLAMA)]),
    "recompile-more": (_set(LLAMA, "recompile", count=4), REG, [("more", "recompile", LLAMA)]),
    "recompile-gone": (lambda r: _drop(r, LLAMA, "recompile"), IMP,
                       [("gone", "recompile", LLAMA)]),
    # host bounce
    "host-bounce-more-bytes": (_set(LLAMA, "host_bounce", bytes=8192), REG,
                               [("more-bytes", "host_bounce", LLAMA)]),
    "host-bounce-more": (_set(LLAMA, "host_bounce", count=3), REG,
                         [("more", "host_bounce", LLAMA)]),
    "host-bounce-new": (lambda r: _add(r, LLAMA, kind="host_bounce", subject="h2d_copy",
                                       count=1, bytes=64),
                        REG, [("new", "host_bounce", LLAMA)]),
    "host-bounce-fewer-bytes": (_set(LLAMA, "host_bounce", bytes=1024), IMP,
                                [("fewer-bytes", "host_bounce", LLAMA)]),
    "host-bounce-gone": (lambda r: _drop(r, LLAMA, "host_bounce"), IMP,
                         [("gone", "host_bounce", LLAMA)]),
    # cast
    "cast-more": (_set(LLAMA, "cast", count=2), REG, [("more", "cast", LLAMA)]),
    "cast-gone": (lambda r: _drop(r, LLAMA, "cast"), IMP, [("gone", "cast", LLAMA)]),
    # lowering
    "lowering-now-fails": (_both(_set(FP32, "lowering", passed=False, reason="layout"),
                                 _status(FP32, "failed", "lowering")),
                           REG, [("now-failing", "lowering", FP32), ("status", "probe", FP32)]),
    "lowering-new-failing-cell": (lambda r: _add(r, FP32, kind="lowering",
                                                 subject="gemm_kernel[cuda,fp16]",
                                                 passed=False, reason="no nvcc"),
                                  REG, [("now-failing", "lowering", FP32)]),
    "lowering-now-passes": (_both(lambda r: _sig(r, BF16, "lowering").pop("reason"),
                                  _set(BF16, "lowering", passed=True), _status(BF16, "ok")),
                            IMP, [("now-passing", "lowering", BF16), ("status", "probe", BF16)]),
    "lowering-diagnostic-changed": (_set(BF16, "lowering", reason="fragment layout"), NOTE,
                                    [("diagnostic-changed", "lowering", BF16)]),
    "lowering-cell-gone": (lambda r: _drop(r, BF16, "lowering"), NOTE,
                           [("gone-check", "lowering", BF16)]),
    # tolerance
    "tolerance-past-limit": (_both(_set(NUM, "tolerance", value=3e-5, passed=False),
                                   _status(NUM, "failed", "tolerance logits")),
                             REG, [("now-failing", "tolerance", NUM), ("status", "probe", NUM)]),
    "tolerance-worse-by-margin": (_set(NUM, "tolerance", value=1.5e-6), REG,
                                  [("worse", "tolerance", NUM)]),
    "tolerance-nan": (_set(NUM, "tolerance", value=math.nan, passed=False), REG,
                      [("now-failing", "tolerance", NUM)]),
    "tolerance-new-failing-check": (lambda r: _add(r, NUM, kind="tolerance", subject="probs",
                                                   value=0.5, limit=0.01, passed=False),
                                    REG, [("now-failing", "tolerance", NUM)]),
    "tolerance-better": (_set(NUM, "tolerance", value=1e-7), IMP,
                         [("better", "tolerance", NUM)]),
    "tolerance-gone": (lambda r: _drop(r, NUM, "tolerance"), NOTE,
                       [("gone-check", "tolerance", NUM)]),
    # probe status
    "status-ok-to-failed": (_status(NUM, "failed", "ctx.fail"), REG,
                            [("status", "probe", NUM)]),
    "status-ok-to-timeout": (_both(_status(LLAMA, "timeout", "timed out after 2 s"),
                                   lambda r: _probe(r, LLAMA).update(signals=[])),
                             REG, [("status", "probe", LLAMA)]),
    "status-failed-to-ok": (_status(BF16, "ok"), IMP, [("status", "probe", BF16)]),
    "status-skipped-to-ok": (_status(OPT, "ok"), IMP, [("status", "probe", OPT)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(base, name):
    mutate, where, expected = CASES[name]
    section = run_compare(base, mutate)
    assert _changes(section[where]) == sorted(expected)
    for other in {REG, IMP} - {where}:
        assert section[other] == [], (other, section[other])
    for item in section[where]:
        assert item["message"] and "\n" not in item["message"]


def test_identical_reports(base):
    section = run_compare(base, lambda r: None)
    assert section[REG] == section[IMP] == section[NOTE] == []
    assert section["probes"] == {"before": 6, "after": 6, "compared": 5}
    assert section["occurrences"]["fallback"] == {"before": 2, "after": 2}
    assert section["occurrences"]["lowering"] == {"before": 1, "after": 1}


def test_signals_aggregate_by_key(base):
    def split(r):  # the same 2 occurrences reported as two signals of one key
        sig = _sig(r, LLAMA, "fallback")
        sig["count"] = 1
        _probe(r, LLAMA)["signals"].append(dict(sig))
    assert run_compare(base, split)[REG] == []
    section = run_compare(base, lambda r: _sig(r, LLAMA, "fallback").pop("count"))
    assert _changes(section[IMP]) == [("fewer", "fallback", LLAMA)]  # absent count = once


def test_a_new_reason_is_a_new_key(base):
    section = run_compare(base, _set(LLAMA, "fallback", reason="other-guard"))
    assert _changes(section[REG]) == [("new", "fallback", LLAMA)]
    assert _changes(section[IMP]) == [("gone", "fallback", LLAMA)]
    assert section[REG][0]["reason"] == "other-guard"


def test_tolerance_margin(base):
    within = _set(NUM, "tolerance", value=1.2e-6)  # +20%
    assert run_compare(base, within)[REG] == []
    assert _changes(run_compare(base, within, margin=0.1)[REG]) == [("worse", "tolerance", NUM)]
    assert run_compare(base, _set(NUM, "tolerance", value=1.0000001e-6), margin=0.0)[REG]


def test_tolerance_from_exact_zero(base):
    b = copy.deepcopy(base)
    _sig(b, NUM, "tolerance")["value"] = 0.0
    section = run_compare(b, _set(NUM, "tolerance", value=1e-7))  # 1e-7 > 25% of 1% of 2e-5
    assert _changes(section[REG]) == [("worse", "tolerance", NUM)]
    assert run_compare(b, _set(NUM, "tolerance", value=1e-8))[REG] == []


def test_failing_tolerance_worse_and_better(base):
    b = copy.deepcopy(base)
    _sig(b, NUM, "tolerance").update(value=1e-4, passed=False)
    _probe(b, NUM).update(status="failed", reason="tolerance logits")
    worse = run_compare(b, _set(NUM, "tolerance", value=1e-3, passed=False))
    assert _changes(worse[REG]) == [("worse", "tolerance", NUM)]
    better = run_compare(b, _set(NUM, "tolerance", value=5e-5, passed=False))
    assert better[REG] == [] and _changes(better[IMP]) == [("better", "tolerance", NUM)]
    fixed = run_compare(b, _both(_set(NUM, "tolerance", value=1e-6, passed=True),
                                 _status(NUM, "ok")))
    assert _changes(fixed[IMP]) == [("now-passing", "tolerance", NUM), ("status", "probe", NUM)]


def test_lost_signals_of_a_probe_that_stopped_are_not_improvements(base):
    section = run_compare(base, _both(_status(LLAMA, "crashed", "SIGSEGV"),
                                      lambda r: _probe(r, LLAMA).update(signals=[])))
    assert _changes(section[REG]) == [("status", "probe", LLAMA)]
    assert section[IMP] == []


def test_probe_not_in_baseline_is_a_note_not_a_regression(base):
    def add_probe(r):
        p = copy.deepcopy(_probe(r, LLAMA))
        p["id"] = "ci/new_model"
        for s in p["signals"]:
            s["probe"] = p["id"]
            if "count" in s:
                s["count"] += 10
        r["probes"].append(p)
    section = run_compare(base, add_probe)
    assert section[REG] == []
    assert _changes(section[NOTE]) == [("not-compared", "probe", "ci/new_model")]


def test_baseline_skipped_probe_signals_are_not_compared(base):
    def now_runs(r):
        _probe(r, OPT).update(status="failed", reason="tolerance")
        _add(r, OPT, kind="tolerance", subject="mlx_vs_torch", value=1.0, limit=1e-4,
             passed=False)
    section = run_compare(base, now_runs)
    assert section[REG] == [] and section[IMP] == []
    assert _changes(section[NOTE]) == [("not-compared", "probe", OPT)]


def test_probes_not_run_are_notes_not_improvements(base):
    section = run_compare(base, lambda r: r.update(
        probes=[p for p in r["probes"] if p["id"] == NUM]))
    assert section[REG] == section[IMP] == []
    assert {i["probe"] for i in section[NOTE]} == {LLAMA, FP32, BF16, OPT, SLOW}
    assert {i["change"] for i in section[NOTE]} == {"not-run"}


def test_sorted_and_deterministic(base):
    def many(r):
        for i in (3, 1, 2):
            _add(r, LLAMA, kind="fallback", subject=f"op{i}", count=1)
    a, b = run_compare(base, many), run_compare(base, many)
    assert a == b
    assert [i["subject"] for i in a[REG]] == ["op1", "op2", "op3"]


# -- end to end: two real runs ------------------------------------------------------------

REGRESS = {"fallback": {"aten::mul.out": 3, "aten::neg": 1}, "recompile": {},
           "host_bounce_bytes": 8192, "tolerance": 1.6e-6}
IMPROVE = {"fallback": {}, "cast": 0, "lowering_bf16_fails": False, "skip": False}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    d = tmp_path_factory.mktemp("e2e")
    ws = ci_workspace(d)
    real_report(ws, d / "base.json")
    return ws, d / "base.json"


def test_real_regression_fails_with_exit_1(workspace, tmp_path):
    ws, base_path = workspace
    (ws / "scenario.json").write_text(json.dumps(REGRESS))
    out = tmp_path / "r.json"
    proc = run_ci(ws, "--baseline", str(base_path), "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    report = json.loads(out.read_text())
    validate_report(report)
    assert _changes(report["baseline"][REG]) == [
        ("more", "fallback", LLAMA), ("more-bytes", "host_bounce", LLAMA),
        ("new", "fallback", LLAMA), ("worse", "tolerance", NUM)]
    assert _changes(report["baseline"][IMP]) == [("gone", "recompile", LLAMA)]
    gate = {g["name"]: g for g in report["gates"]}
    assert not gate["baseline"]["passed"] and gate["tolerance"]["passed"]
    assert "regression ci/llama_forward: new fallback aten::neg" in proc.stderr


def test_real_improvement_passes_with_exit_0(workspace, tmp_path):
    ws, base_path = workspace
    (ws / "scenario.json").write_text(json.dumps(IMPROVE))
    out = tmp_path / "r.json"
    proc = run_ci(ws, "--baseline", str(base_path), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    validate_report(report)
    section: dict[str, Any] = dict(report["baseline"])  # read by a case's key: open
    assert section[REG] == []
    assert _changes(section[IMP]) == [
        ("gone", "cast", LLAMA), ("gone", "fallback", LLAMA),
        ("now-passing", "lowering", BF16), ("status", "probe", BF16), ("status", "probe", OPT)]
