"""benchmarks/floor_cold.py's accounting and bench_cold.py --floor's comparison: the process
tree's CPU (live descendants included), the cell filter, the per-cell sums, and which
report signals and floor stages are compared."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # bench_cold imports floor_cold by this name
    spec.loader.exec_module(mod)
    return mod


def test_tree_cpu_counts_a_live_child() -> None:
    floor = _load("floor_cold")
    before = floor.tree_cpu()
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nt=time.process_time()\n"
                              "while time.process_time()-t<0.6: pass\n"
                              "import sys; sys.stdout.write('x'); sys.stdout.flush()\n"
                              "time.sleep(30)"], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.read(1) == b"x"  # busy part done
        alive = floor.tree_cpu() - before
    finally:
        child.kill()
        child.wait()
    assert alive >= 0.5  # the child is alive and unreaped: read from /proc
    assert floor.tree_cpu() - before >= 0.5  # reaped: RUSAGE_CHILDREN has it


def test_cell_filter(monkeypatch: Any) -> None:
    floor = _load("floor_cold")
    monkeypatch.setenv("FLOOR_CELLS", "explain/tiny_llama[fp32,*]\naoti/decision[bf16]")
    assert floor.wanted("explain/tiny_llama[fp32,eager]")
    assert floor.wanted("aoti/decision[bf16]")
    assert not floor.wanted("aoti/decision[fp32]")  # brackets are not character classes
    assert not floor.wanted("explain/tiny_llama[bf16,eager]")
    monkeypatch.delenv("FLOOR_CELLS")
    assert floor.wanted("anything")


def test_stage_failure_is_recorded_and_ends_the_cell() -> None:
    floor = _load("floor_cold")
    st = floor.Stages("tilelang")
    ran: list[str] = []

    def body() -> None:
        with st.stage("k[c]", "trace"):
            time.sleep(0.01)
        with st.stage("k[c]", "lower+build"):
            raise RuntimeError("fragments are GPU registers\nmore")
        ran.append("run")  # never reached

    floor.run_cell(st, "k[c]", body)
    assert ran == []
    assert [r["stage"] for r in st.rows] == ["trace", "lower+build"]
    assert st.rows[0]["wall"] >= 0.01 and st.rows[0]["error"] is None
    assert st.rows[1]["error"] == "RuntimeError: fragments are GPU registers"


def _floor() -> dict[str, Any]:
    row = lambda cell, stage, cpu, wall: {"cell": cell, "stage": stage, "cpu": cpu,  # noqa: E731
                                          "wall": wall, "error": None}
    return {"cpu": 30.0, "wall": 20.0, "families": [
        {"family": "aoti", "cpu": 21.0, "process_wall": 15.0, "rows": [
            row("aoti/decision[fp32]", "export", 1.0, 1.5),
            row("aoti/decision[fp32]", "package", 10.0, 12.0),
            row("aoti/decision[fp32]", "latency", 9.0, 9.0)]},
        {"family": "explain", "cpu": 9.0, "process_wall": 10.0, "rows": [
            row("explain/m[fp32,compile-two-lengths]", "compile", 5.0, 6.0),
            row("explain/m[fp32,compile-two-lengths]", "recompile", 3.0, 4.0),
            row("explain/m[fp32,compile-two-lengths]", "reference", 0.5, 0.5)]}]}


def _report() -> dict[str, Any]:
    def sig(kind: str, subject: str, seconds: float) -> dict[str, Any]:
        return {"kind": kind, "subject": subject, "seconds": seconds}

    return {"probes": [
        {"id": "aoti/decision[fp32]", "family": "aoti", "budget": {"cpu_seconds": 40.0},
         "signals": [sig("timing", "export", 2.0), sig("timing", "package", 20.0),
                     sig("timing", "latency/aoti[r4]", 0.01)]},
        {"id": "explain/m[fp32,compile-two-lengths]", "family": "explain",
         "budget": {"cpu_seconds": 15.0},
         "signals": [sig("compile", "M: forward", 9.0), sig("recompile", "M: forward", 5.0),
                     sig("timing", "forward: region wall", 9.5)]},
        {"id": "env/python", "family": "env", "budget": {"cpu_seconds": 1.0}, "signals": []}]}


def test_per_cell_and_stage_walls() -> None:
    floor = _load("floor_cold")
    bench = _load("bench_cold")
    cells = floor.per_cell(_floor())
    assert cells["aoti/decision[fp32]"] == {"cpu": 20.0, "wall": 22.5}
    assert bench.stage_walls(_report()) == {"aoti export": 2.0, "aoti package": 20.0,
                                            "explain compile+recompile": 14.0}
    assert bench.floor_stage_walls(_floor()) == {"aoti export": 1.5, "aoti package": 12.0,
                                                 "explain compile+recompile": 10.0}
    assert bench.cell_cpu(_report())["explain/m[fp32,compile-two-lengths]"] == 15.0


def test_describe_floor(capsys: Any) -> None:
    _load("floor_cold")
    bench = _load("bench_cold")
    bench.describe_floor(_report(), 60.0, _floor())
    out = capsys.readouterr().out
    assert "run CPU 60.0 s, floor CPU 30.0 s: ratio 2.00x" in out
    assert "instrumentation's share 30.0 s (50% of the run)" in out
    assert "outside any cell" in out and ": 4.0 s; in cells 56.0 s" in out
    assert "aoti 40.0/21.0 (+19.0)" in out and "explain 15.0/9.0 (+6.0)" in out
    assert "aoti package 20.0/12.0 (1.67x)" in out
    assert "40.0 /   20.0 ( +20.0) aoti/decision[fp32]" in out
