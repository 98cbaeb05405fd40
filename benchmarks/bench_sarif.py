"""Results, file size and write time of ``--sarif`` for the demo and a 100,000-signal report.

The demo: the recorded demo report (tests/fixtures/recorded) and the recorded compiled
graph-break cell. The large one: 1,000 probes x 100 signals made the way
benchmarks/bench_gates.py makes them, compared with a drifted baseline (so every result
carries a baselineState and absent results exist), sites in a real file of a temporary
workspace. Prints the results written (GitHub keeps 25,000 per run: the rest are counted),
the file size raw and gzipped (GitHub takes 10 MB gzipped per upload), and the time of
collecting the findings, building the document and writing it, best of 3.

    .venv/bin/python benchmarks/bench_sarif.py [SIGNALS]
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_gates import make_probes  # noqa: E402

from laya_tui.report.baseline import parse_baseline  # noqa: E402
from laya_tui.report.document import build_report, write_atomic, write_report  # noqa: E402
from laya_tui.report.findings import collect_findings  # noqa: E402
from laya_tui.report.gates import GateSettings, evaluate_all  # noqa: E402
from laya_tui.report.sarif import build_sarif, sarif_chunks, validate_sarif  # noqa: E402
from laya_tui.report.sources import Sources  # noqa: E402

RECORDED = HERE.parent / "tests" / "fixtures" / "recorded"
GITHUB_GZIP_LIMIT = 10 * 1024 * 1024


def best(fn, repeat: int = 3):
    """(best wall seconds, best CPU seconds of this process, the result)."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus), out


def measure(label: str, report: dict, workspace: str, baseline: dict | None, out: Path,
            validate: bool) -> float:
    """Print the figures of one report; returns the CPU seconds of collect+build+write."""
    sources = Sources(workspace, env={})
    t_collect, c_collect, findings = best(lambda: collect_findings(report, sources, baseline))
    t_build, c_build, doc = best(lambda: build_sarif(report, sources, findings=findings))
    t_write, c_write, _ = best(lambda: write_atomic(str(out), sarif_chunks(doc)))
    size = out.stat().st_size
    gz = len(gzip.compress(out.read_bytes(), 6))
    props = doc["runs"][0]["properties"]
    states: dict[str, int] = {}
    for r in doc["runs"][0]["results"]:
        states[r.get("baselineState", "-")] = states.get(r.get("baselineState", "-"), 0) + 1
    total = t_collect + t_build + t_write
    cpu = c_collect + c_build + c_write
    print(f"{label}: {props['findings']:,} findings -> {props['results']:,} results "
          f"({props['resultsLeftOut']:,} left out past the limit, {props['withoutLocation']:,} "
          f"without a file); states {states}")
    print(f"  file {size / 1e6:.2f} MB, gzipped {gz / 1e6:.2f} MB "
          f"({gz / GITHUB_GZIP_LIMIT:.1%} of GitHub's 10 MiB)")
    print(f"  wall: collect {t_collect:.3f} s + build {t_build:.3f} s + write {t_write:.3f} s "
          f"= {total:.3f} s")
    print(f"  CPU:  collect {c_collect:.3f} s + build {c_build:.3f} s + write {c_write:.3f} s "
          f"= {cpu:.3f} s")
    if validate:
        t_val, _, _ = best(lambda: validate_sarif(json.loads(out.read_text())), 1)
        print(f"  valid against the SARIF 2.1.0 schema ({t_val:.3f} s to check)")
    return cpu


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        demo = json.loads((RECORDED / "demo_report.json").read_text())
        measure("demo (recorded)", demo, str(RECORDED / "demo_ws"), None, tmpd / "demo.sarif",
                True)
        gb = json.loads((RECORDED / "graph_break_report.json").read_text())
        measure("user model, compiled (recorded)", gb, str(RECORDED / "gb_ws"), None,
                tmpd / "gb.sarif", True)
        ws = tmpd / "ws"
        ws.mkdir()
        (ws / "modeling.py").write_text("".join(f"x{i} = {i}\n" for i in range(120)))
        (ws / "pyproject.toml").write_text("[tool.laya-tui]\n")  # where siteless ones go
        base_probes = make_probes(n, 100, seed=1, drift=0.0)
        now_probes = make_probes(n, 100, seed=2, drift=0.1)
        base_report = build_report(base_probes, seconds=1.0, gates=[])
        base_path = tmpd / "base.json"
        base_path.write_text(json.dumps(base_report))
        baseline = parse_baseline(base_path.read_text(), str(base_path))
        gates, extra = evaluate_all(now_probes, GateSettings(
            fail_on=["host_bounce"], max_counts={"fallback": 10}, baseline=baseline))
        report = build_report(now_probes, seconds=1.0, gates=gates, extra=extra)
        t_reload, c_reload, _ = best(
            lambda: parse_baseline(base_path.read_text(), str(base_path)), 1)
        cpu = measure(f"{n:,} signals, with a baseline", report, str(ws), baseline.report,
                      tmpd / "big.sarif", False)
        print(f"  + reading the baseline again for the states: {t_reload:.3f} s wall, "
              f"{c_reload:.3f} s CPU")
        t_json, c_json, _ = best(lambda: write_report(str(tmpd / "big.json"), report))
        print(f"  for scale, the JSON report of the same run: {t_json:.3f} s wall, "
              f"{c_json:.3f} s CPU to write, "
              f"{(tmpd / 'big.json').stat().st_size / 1e6:.1f} MB; SARIF (with the baseline "
              f"read again) / JSON report = {(cpu + c_reload) / c_json:.2f}x CPU")
        measure(f"{n:,} signals, no baseline", dict(report, baseline=None), str(ws), None,
                tmpd / "big2.sarif", False)


if __name__ == "__main__":
    main()
