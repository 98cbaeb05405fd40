"""The cold-run accounting of benchmarks/bench_cold.py and benchmarks/trace_summary.py:
which signals count as inherent library work, and how a trace's stages are summed."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from laya_tui.core.report_types import ReportDict, SignalDict
from tests._signals import partial_report, partial_signal

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sig(kind: str, subject: str, seconds: float, **extra: Any) -> SignalDict:  # no probe
    return partial_signal({"kind": kind, "subject": subject, "seconds": seconds, **extra})


def _report() -> ReportDict:
    aoti = [_sig("timing", "export", 10.0), _sig("timing", "package", 40.0),
            _sig("timing", "load-fresh", 1.0), _sig("timing", "compile", 60.0),
            _sig("recompile", "torch.compile", 30.0, count=1),
            _sig("timing", "latency/compiled[r4]", 0.01)]
    explain = [_sig("compile", "Model: forward", 20.0, count=1),
               _sig("recompile", "Model: forward", 12.0, count=2),
               _sig("timing", "forward", 25.0), _sig("host_bounce", "item", 0.5)]
    tilelang = [_sig("timing", "gemm/lower", 3.0), _sig("timing", "gemm/build", 5.0),
                _sig("timing", "add_ln/build", 9.0, detail={"cached": True})]
    cached_pkg = [_sig("timing", "export", 0.01, detail={"cached": True}),
                  _sig("timing", "package", 0.01, detail={"cached": True})]
    return partial_report({"probes": [
        {"id": "aoti/a", "family": "aoti", "seconds": 150.0, "started": 0.0, "ended": 150.0,
         "signals": aoti},
        {"id": "aoti/b", "family": "aoti", "seconds": 5.0, "started": 150.0, "ended": 155.0,
         "signals": cached_pkg},
        {"id": "explain/x", "family": "explain", "seconds": 70.0, "started": 0.0,
         "ended": 70.0, "signals": explain},
        {"id": "tilelang/y", "family": "tilelang", "seconds": 20.0, "started": 70.0,
         "ended": 90.0, "signals": tilelang},
        # a result-cache hit: its signals are an earlier run's work
        {"id": "aoti/c", "family": "aoti", "seconds": 300.0, "cached": True,
         "signals": [_sig("timing", "compile", 99.0)]},
    ], "summary": {"probes": 5, "status": {}, "seconds": 155.0}})


def test_library_work_counts_compiles_recompiles_packages_and_builds_not_lookups():
    bench = _load("bench_cold")
    lib = bench.library_seconds(_report())
    assert lib == {"aoti export": 10.0, "aoti package": 40.0, "aoti torch.compile": 90.0,
                   "explain torch.compile": 32.0, "tilelang lower": 3.0,
                   "tilelang build": 5.0}
    # the aoti first compile, its recompile, and the explain compile + 2 recompiles
    assert bench.compiles_recorded(_report()) == 5


def test_family_spans_and_inductor_entries(tmp_path: Path):
    bench = _load("bench_cold")
    spans = bench.family_spans(_report())
    assert spans["aoti"] == (155.0, 455.0) and spans["explain"] == (70.0, 70.0)
    for rel in ("fxgraph/ab/fab/e1", "fxgraph/cd/fcd/e2", "aotautograd/x/entry", "other/z"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert bench.inductor_entries(tmp_path) == {"fxgraph": 2, "aotautograd": 1}
    assert bench.inductor_entries(tmp_path / "missing") == {"fxgraph": 0, "aotautograd": 0}


def test_trace_summary_sums_stages_and_marks_library_work(capsys):
    from laya_tui.core.trace import build_trace, spans_of

    summary = _load("trace_summary")
    stages = [s for s in spans_of(build_trace(_report())) if s["depth"] > 0]
    totals = summary.stage_totals(stages)
    assert totals[("aoti", "package")] == (40.0, 1, True)
    assert totals[("aoti", "export")][2] is True
    assert totals[("aoti", "load-fresh")][2] is False
    assert totals[("tilelang", "build")][0] == 5.0 and totals[("tilelang", "build")][2]
    assert totals[("explain", "forward")][2] is False
    # a cached (looked-up) package is a stage, never library work
    assert totals[("aoti", "package (cached)")][1:] == (1, False)
    assert totals[("tilelang", "build (cached)")] == (9.0, 1, False)


def test_cache_events_are_read_from_torch_trace_logs(tmp_path: Path):
    bench = _load("bench_cold")
    prefix = "V1130 23:20:45.110000 16675 torch/_inductor/compile_fx.py:1149] "
    lines = [prefix + '{"artifact": {"name": "fx_graph_cache_miss", "encoding": "json"}}',
             '\t"name": "fx_graph_cache_miss",',  # a payload line, not an event
             prefix + '{"artifact": {"name": "fx_graph_cache_hit", "encoding": "json"}}',
             prefix + '{"artifact": {"name": "aotautograd_cache_miss", "encoding": "json"}}',
             prefix + '{"artifact": {"name": "dynamo_output_graph", "encoding": "string"}}']
    (tmp_path / "dedicated_log_torch_trace_1.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "dedicated_log_torch_trace_2.log").write_text(lines[0] + "\n")
    assert bench.cache_events(tmp_path) == {"fx_graph_cache_miss": 2, "fx_graph_cache_hit": 1,
                                            "aotautograd_cache_miss": 1}
    assert bench.cache_events(tmp_path / "missing") == {}


def test_closeness_says_how_near_each_bound_a_run_came():
    bench = _load("bench_cold")
    text = bench.closeness({"timeout": 600.0, "idle_window": 60.0, "cpu_budget": 1200.0,
                            "ceiling": 2400.0, "wall_limit": 6000.0, "seconds": 720.0,
                            "own_seconds": 480.0, "cpu_seconds": 480.0, "longest_idle": 3.5})
    assert text == ("wall 720/600 s timeout (1.20x); own time 480/2400 s ceiling (20%); 12% "
                    "of the 6000 s wall limit; CPU 480/1200 s (40%); longest idle 3.5/60 s")
    ended = bench.closeness({"timeout": 2.0, "idle_window": 1.0, "cpu_budget": 2.0,
                             "ceiling": 8.0, "seconds": 2.1, "longest_idle": 2.1,
                             "ended_by": "idle"})
    assert ended.endswith("longest idle 2.1/1 s; ended by idle") and "CPU" not in ended


def test_hogs_stop_with_the_benchmark():
    bench = _load("bench_cold")
    hogs = bench.start_hogs(1)
    try:
        assert hogs[0].poll() is None
        assert os.getsid(hogs[0].pid) == hogs[0].pid  # its own session
    finally:
        hogs[0].kill()
        hogs[0].wait()
