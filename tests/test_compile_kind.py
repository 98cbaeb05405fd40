"""A frame's first compile is a ``compile`` signal: never a recompile in gates, summary or
baseline comparison; a report/1 baseline's "cold compile" recompiles are read as compiles."""

from __future__ import annotations

import copy
import json

from laya_tui.core.report_types import GateDict
from laya_tui.report.baseline import compare, parse_baseline
from laya_tui.report.document import summarise
from laya_tui.report.gates import GateSettings, evaluate_all, evaluate_gates

PID = "explain/tiny_llama[fp32,compile-padded]"
COLD_V1 = {"kind": "recompile", "probe": PID, "subject": "LlamaForCausalLM: forward",
           "count": 1, "reason": "cold compile (first compile of this frame)",
           "detail": {"phase": "cold", "cold_compile": True}}
COMPILE_V2 = {"kind": "compile", "probe": PID, "subject": "LlamaForCausalLM: forward",
              "count": 1, "reason": "first compile of this frame", "detail": {"phase": "cold"}}
RECOMPILE = {"kind": "recompile", "probe": PID, "subject": "LlamaForCausalLM: forward",
             "count": 1, "reason": "0/0: tensor 'input_ids' size mismatch at index 1. "
             "expected 7, actual 9", "detail": {"phase": "warm"}}


def _report(schema: str, signals: list[dict]) -> dict:
    return {"schema": schema, "tool": {"name": "laya-tui", "version": "0.1.0"},
            "environment": {}, "errors": [], "summary": {}, "gates": [],
            "probes": [{"id": PID, "family": "explain", "status": "ok",
                        "signals": copy.deepcopy(signals)}]}


def _gate(gates: list[GateDict], name: str) -> GateDict:
    return next(g for g in gates if g["name"] == name)


def test_compiles_pass_fail_on_recompile_and_max_and_only_real_recompiles_fail():
    s = GateSettings(fail_on=("recompile",), max_counts={"recompile": 0, "compile": 0})
    probes = _report("laya-tui.report/2", [COMPILE_V2])["probes"]
    gates = evaluate_gates(probes, s)
    assert _gate(gates, "fail-on:recompile")["passed"]
    assert _gate(gates, "max:recompile")["passed"]
    assert not _gate(gates, "max:compile")["passed"]  # compiles can be capped on their own
    probes = _report("laya-tui.report/2", [COMPILE_V2, RECOMPILE])["probes"]
    failures = _gate(evaluate_gates(probes, s), "fail-on:recompile")["failures"]
    assert [f["reason"] for f in failures] == [RECOMPILE["reason"]]


def test_cached_v1_signals_are_upgraded_before_the_gates_and_in_the_summary():
    probes = _report("laya-tui.report/1", [COLD_V1])["probes"]
    assert summarise(probes, 1.0)["signals"]["recompile"] == 0
    assert summarise(probes, 1.0)["signals"]["compile"] == 1
    gates, _ = evaluate_all(probes, GateSettings(fail_on=("recompile",)))
    assert _gate(gates, "fail-on:recompile")["passed"]
    assert probes[0]["signals"][0]["kind"] == "compile"


def test_report_v1_baseline_reads_cold_compiles_as_compiles():
    base = parse_baseline(json.dumps(_report("laya-tui.report/1", [COLD_V1])))
    assert [s["kind"] for s in base.report["probes"][0]["signals"]] == ["compile"]
    # the same run today: a compile signal, no recompile -> no regression, no improvement
    section = compare(base, _report("laya-tui.report/2", [COMPILE_V2])["probes"])
    assert section["regressions"] == [] and section["improvements"] == []
    assert "compile" not in section["occurrences"]
    assert section["occurrences"]["recompile"] == {"before": 0, "after": 0}
    # a real recompile is still a regression against that baseline
    section = compare(base, _report("laya-tui.report/2", [COMPILE_V2, RECOMPILE])["probes"])
    assert [(r["change"], r["kind"]) for r in section["regressions"]] == [("new", "recompile")]


def test_more_first_compiles_are_not_a_baseline_regression():
    base = parse_baseline(json.dumps(_report("laya-tui.report/2", [COMPILE_V2])))
    more = dict(COMPILE_V2, count=3)
    section = compare(base, _report("laya-tui.report/2", [more])["probes"])
    assert section["regressions"] == []
