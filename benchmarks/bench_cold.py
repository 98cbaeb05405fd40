"""Cold-run benchmark: one headless run from an empty home folder, against the library work
it contains.

Usage: .venv/bin/python benchmarks/bench_cold.py [--only GLOB] [--jobs N] [--keep DIR]
                                                  [--hogs N] [--floor]
       .venv/bin/python benchmarks/bench_cold.py --from-report PATH [--inductor-cache DIR]
                                                  [--floor-json F --run-cpu S]

``--hogs N`` runs N CPU-bound processes beside the run, each in its own session (Linux's
scheduler shares the CPU between sessions: a hog in laya-tui's session would only slow
laya-tui's own process), killed when the run ends. For the slowest cells it prints how
close each came to being ended (its ``budget``: wall seconds against the timeout and the
wall limit, its own time against the ceiling, CPU seconds against the CPU budget, the
longest idle stretch against the idle window; docs/architecture.md, 'Timeouts: work, not
load').

The run gets a fresh ``HOME`` (no result cache, no AOTI packages), no ``XDG_CACHE_HOME``, a
fresh ``TORCHINDUCTOR_CACHE_DIR`` (Inductor's on-disk caches live under /tmp otherwise, warm
from earlier runs) and ``--no-cache``; it also writes ``--trace``. Printed, measured in this
one run: wall time, CPU time of the whole process tree, the load average before and after,
each family's wall span and summed probe seconds, and the seconds of inherent library work
the report's signals record, with the ratio wall / library work:

- ``aoti export`` / ``aoti package``: torch.export and AOTInductor packaging (not served
  from the package cache);
- ``aoti torch.compile``: the comparison's first compile plus every recompile it made on a
  later shape (``recompile`` signals' seconds: each is a second full compile);
- ``explain torch.compile``: the compile scenarios' ``compile`` and ``recompile`` signals
  (dynamo's whole-frame compile time, inductor included);
- ``tilelang lower`` / ``tilelang build``: not served from TileLang's cache.

It also counts the graphs Inductor compiled in the run (entries of the FX-graph and
AOTAutograd caches in the run's ``TORCHINDUCTOR_CACHE_DIR``; both caches are on by default,
so a graph compiled a second time in the run is a cache hit and adds no entry) beside the
compiles the signals record. ``--torch-trace`` also sets ``TORCH_TRACE`` for the run's
processes and counts inductor's cache events in those logs: a ``fx_graph_cache_hit`` is a
graph compiled a second time in the run (served from the cache). Tracing adds its own
time, so such a run's wall is not the cold figure. With ``--jobs 2`` two families run at
once, so the ratio can go below 1.

``--floor`` then runs ``benchmarks/floor_cold.py`` in the same invocation, cold too (its own
fresh ``HOME`` and ``TORCHINDUCTOR_CACHE_DIR``, the same ``--jobs``): the same library work
the cells ask for without laya-tui's instrumentation. Printed: the run's CPU-seconds, the
floor's, their ratio (issue 45's target: at most 1.1x) and the instrumentation's share (run
minus floor), split by where the report's figures allow: per family and per cell (each
cell's CPU from its ``budget``, the worker's process tree sampled by the watchdog, against
the floor's cell), the runner and worker start-up (the run's CPU outside any cell), and per
stage the wall seconds the report's timing signals record (export, package, compile,
lower + build) against the floor's same stage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def library_seconds(report: dict[str, Any]) -> dict[str, float]:
    """Seconds of inherent library work per kind, from the report's signals."""
    out: dict[str, float] = defaultdict(float)
    for p in report["probes"]:
        if p.get("cached"):  # its signals are an earlier run's
            continue
        fam = p.get("family")
        for s in p.get("signals", []):
            secs = s.get("seconds")
            if not isinstance(secs, (int, float)):
                continue
            kind, detail = s.get("kind"), s.get("detail") or {}
            subject = str(s.get("subject", ""))
            if fam == "aoti" and kind == "timing" and subject in ("export", "package"):
                if not detail.get("cached"):
                    out[f"aoti {subject}"] += secs
            elif fam == "aoti" and (kind == "timing" and subject == "compile"
                                    or kind == "recompile" and subject == "torch.compile"):
                out["aoti torch.compile"] += secs
            elif fam == "explain" and kind in ("compile", "recompile"):
                out["explain torch.compile"] += secs
            elif fam == "tilelang" and kind == "timing" \
                    and subject.rsplit("/", 1)[-1] in ("lower", "build"):
                if not detail.get("cached"):
                    out[f"tilelang {subject.rsplit('/', 1)[-1]}"] += secs
    return dict(out)


def compiles_recorded(report: dict[str, Any]) -> int:
    """torch.compile frame compiles the signals record (first compiles and recompiles)."""
    n = 0
    for p in report["probes"]:
        if p.get("cached"):
            continue
        for s in p.get("signals", []):
            if p.get("family") == "aoti" and s.get("kind") == "timing" \
                    and s.get("subject") == "compile":
                n += 1
            elif s.get("kind") in ("compile", "recompile") and (
                    p.get("family") == "explain" or s.get("subject") == "torch.compile"):
                n += int(s.get("count") or 1)
    return n


def inductor_entries(cache_dir: Path) -> dict[str, int]:
    """Entries of Inductor's FX-graph and AOTAutograd caches: one per distinct graph."""
    out = {}
    for name in ("fxgraph", "aotautograd"):
        root = cache_dir / name
        out[name] = sum(1 for f in root.rglob("*") if f.is_file()) if root.is_dir() else 0
    return out


_CACHE_EVENT = re.compile(r'\{"artifact": \{"name": "((?:fx_graph|aotautograd)_cache_[a-z]+)"')


def cache_events(trace_dir: Path) -> dict[str, int]:
    """Inductor's FX-graph and AOTAutograd cache events in a ``TORCH_TRACE`` folder."""
    out: dict[str, int] = defaultdict(int)
    for f in sorted(trace_dir.glob("*")) if trace_dir.is_dir() else ():
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                m = _CACHE_EVENT.search(line)
                if m:
                    out[m.group(1)] += 1
    return dict(out)


def family_spans(report: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Per family: (wall span from its first start to its last end, summed probe seconds)."""
    spans: dict[str, list[float]] = {}
    busy: dict[str, float] = defaultdict(float)
    for p in report["probes"]:
        fam = p["family"]
        busy[fam] += p.get("seconds") or 0.0
        if isinstance(p.get("started"), (int, float)) and isinstance(p.get("ended"),
                                                                     (int, float)):
            lo, hi = spans.get(fam, [p["started"], p["ended"]])
            spans[fam] = [min(lo, p["started"]), max(hi, p["ended"])]
    return {f: ((spans[f][1] - spans[f][0]) if f in spans else busy[f], busy[f])
            for f in busy}


def describe(report: dict[str, Any], wall: float | None, cpu: float | None,
             inductor: Path | None = None, torch_trace: Path | None = None) -> None:
    lib = library_seconds(report)
    total = sum(lib.values())
    s = report["summary"]
    wall = s["seconds"] if wall is None else wall
    print(f"{s['probes']} probes, status {s['status']}")
    print(f"wall {wall:.1f} s" + (f", CPU (whole process tree) {cpu:.1f} s" if cpu else ""))
    for k, v in sorted(lib.items()):
        print(f"  library work: {k}: {v:.1f} s")
    if total:
        print(f"inherent library work {total:.1f} s; wall / library work = {wall / total:.2f}x")
    if inductor is not None:
        entries = inductor_entries(inductor)
        print(f"torch.compile frame compiles recorded by signals: {compiles_recorded(report)}; "
              f"graphs Inductor compiled (FX-graph cache entries) {entries['fxgraph']}, "
              f"AOTAutograd cache entries {entries['aotautograd']}")
    if torch_trace is not None:
        events = cache_events(torch_trace)
        print("inductor cache events (TORCH_TRACE): " + (", ".join(
            f"{k} {v}" for k, v in sorted(events.items())) or "none")
            + f"; graphs compiled again in this run: {events.get('fx_graph_cache_hit', 0)}")
    print("per family (wall span / summed probe seconds): " + ", ".join(
        f"{f} {w:.1f}/{b:.1f}" for f, (w, b) in
        sorted(family_spans(report).items(), key=lambda x: -x[1][1])))
    slow = sorted(report["probes"], key=lambda p: -(p.get("seconds") or 0))[:8]
    for p in slow:
        steps = [f"{x['subject']} {x['seconds']:.1f}" for x in p.get("signals", [])
                 if p["family"] == "aoti" and isinstance(x.get("seconds"), (int, float))
                 and (x.get("kind") == "timing" and x.get("subject") in (
                     "export", "package", "compile", "load-fresh")
                      or x.get("kind") == "recompile")]
        print(f"  {p['seconds']:7.1f} s {p['id']} {p['status']}"
              + (f" ({', '.join(steps)})" if steps else ""))
        if p.get("budget"):
            print("           " + closeness(p["budget"]))


def closeness(b: dict[str, Any]) -> str:
    """How close a run came to each bound of its timeout (its report ``budget``)."""
    parts = [f"wall {b['seconds']:.0f}/{b['timeout']:g} s timeout "
             f"({b['seconds'] / b['timeout']:.2f}x)"]
    if "own_seconds" in b:
        parts.append(f"own time {b['own_seconds']:.0f}/{b['ceiling']:g} s ceiling "
                     f"({b['own_seconds'] / b['ceiling']:.0%})")
    if "wall_limit" in b:
        parts.append(f"{b['seconds'] / b['wall_limit']:.0%} of the {b['wall_limit']:g} s "
                     "wall limit")
    if "cpu_seconds" in b:
        parts.append(f"CPU {b['cpu_seconds']:.0f}/{b['cpu_budget']:g} s "
                     f"({b['cpu_seconds'] / b['cpu_budget']:.0%})")
    parts.append(f"longest idle {b['longest_idle']:.1f}/{b['idle_window']:g} s")
    if b.get("ended_by"):
        parts.append(f"ended by {b['ended_by']}")
    return "; ".join(parts)


def cell_cpu(report: dict[str, Any]) -> dict[str, float]:
    """Each cell's CPU-seconds (its ``budget``: the worker's process tree, sampled)."""
    return {p["id"]: float((p.get("budget") or {}).get("cpu_seconds") or 0.0)
            for p in report["probes"]}


def stage_walls(report: dict[str, Any]) -> dict[str, float]:
    """Wall seconds per stage kind the report's timing signals record, comparable with the
    floor's stages: aoti export / package / compile, explain compile (first compile and
    recompile of the compile scenarios), tilelang lower+build."""
    out: dict[str, float] = defaultdict(float)
    for p in report["probes"]:
        fam = p.get("family")
        for s in p.get("signals", []):
            secs, kind, subject = s.get("seconds"), s.get("kind"), str(s.get("subject", ""))
            if not isinstance(secs, (int, float)):
                continue
            if fam == "aoti" and kind == "timing" and subject in (
                    "export", "package", "compile", "load-fresh"):
                out[f"aoti {subject}"] += secs
            elif fam == "explain" and kind in ("compile", "recompile"):
                out["explain compile+recompile"] += secs
            elif fam == "tilelang" and kind == "timing" \
                    and subject.rsplit("/", 1)[-1] in ("lower", "build"):
                out["tilelang lower+build"] += secs
    return dict(out)


def floor_stage_walls(floor: dict[str, Any]) -> dict[str, float]:
    """The floor's wall seconds in the same stage kinds as :func:`stage_walls`."""
    out: dict[str, float] = defaultdict(float)
    for fam in floor["families"]:
        for r in fam["rows"]:
            f, stage = fam["family"], r["stage"]
            if f == "aoti" and stage in ("export", "package", "compile", "load-fresh"):
                out[f"aoti {stage}"] += r["wall"]
            elif f == "explain" and stage in ("compile", "recompile"):
                out["explain compile+recompile"] += r["wall"]
            elif f == "tilelang" and stage == "lower+build":
                out["tilelang lower+build"] += r["wall"]
    return dict(out)


def describe_floor(report: dict[str, Any], run_cpu: float, floor: dict[str, Any]) -> None:
    """The run against the floor: totals, per family, per cell, per stage."""
    import floor_cold

    fcpu = floor["cpu"]
    print(f"run CPU {run_cpu:.1f} s, floor CPU {fcpu:.1f} s: ratio {run_cpu / fcpu:.2f}x "
          f"(target <= 1.1x); instrumentation's share {run_cpu - fcpu:.1f} s "
          f"({(run_cpu - fcpu) / run_cpu:.0%} of the run)")
    cells = cell_cpu(report)
    in_cells = sum(cells.values())
    print(f"  run CPU outside any cell (runner, worker start-up and imports, the watchdog's "
          f"last sample interval): {run_cpu - in_cells:.1f} s; in cells {in_cells:.1f} s")
    fcells = floor_cold.per_cell(floor)
    fams: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for p in report["probes"]:
        fams[p["family"]][0] += cells[p["id"]]
    for fam in floor["families"]:
        fams[fam["family"]][1] += fam["cpu"]
    print("  per family, CPU s run cells / floor process (difference): " + ", ".join(
        f"{f} {r:.1f}/{fl:.1f} ({r - fl:+.1f})" for f, (r, fl) in
        sorted(fams.items(), key=lambda x: -(x[1][0] - x[1][1]))))
    walls, fwalls = stage_walls(report), floor_stage_walls(floor)
    print("  per stage, wall s run signals / floor (ratio): " + ", ".join(
        f"{k} {walls.get(k, 0.0):.1f}/{fwalls.get(k, 0.0):.1f} ("
        + (f"{walls.get(k, 0.0) / fwalls[k]:.2f}x" if fwalls.get(k) else "-") + ")"
        for k in sorted(set(walls) | set(fwalls))))
    diffs = sorted(((cells.get(c, 0.0) - v["cpu"], c) for c, v in fcells.items()),
                   reverse=True)
    print("  cells, CPU s run / floor (difference), largest differences first:")
    for d, c in diffs[:15]:
        print(f"    {cells.get(c, 0.0):7.1f} / {fcells[c]['cpu']:6.1f} ({d:+6.1f}) {c}")
    only_run = sorted(((v, c) for c, v in cells.items() if c not in fcells and v > 0.5),
                      reverse=True)
    if only_run:
        print("  run cells with no floor work (skips, account cells, agreement cells): "
              + ", ".join(f"{c} {v:.1f}" for v, c in only_run[:10])
              + f"; {sum(v for v, _ in only_run):.1f} s in all")


def start_hogs(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` busy loops, each in its own session; each stops when this process is gone."""
    loop = f"import os\nwhile os.getppid() == {os.getpid()}: pass\n"
    return [subprocess.Popen([sys.executable, "-c", loop], start_new_session=True)
            for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", default=None,
                    help="copy the report, the trace and the inductor cache listing here")
    ap.add_argument("--torch-trace", action="store_true",
                    help="count inductor's cache hits through TORCH_TRACE (adds overhead)")
    ap.add_argument("--hogs", type=int, default=0,
                    help="run N CPU-bound processes (own sessions) beside the run")
    ap.add_argument("--floor", action="store_true",
                    help="also run benchmarks/floor_cold.py (cold) and compare CPU-seconds")
    ap.add_argument("--from-report", default=None, help="only print a report's figures")
    ap.add_argument("--inductor-cache", default=None,
                    help="with --from-report: the run's TORCHINDUCTOR_CACHE_DIR, to count")
    ap.add_argument("--floor-json", default=None,
                    help="with --from-report and --run-cpu: compare with a floor_cold.py "
                         "--json file measured separately")
    ap.add_argument("--run-cpu", type=float, default=None,
                    help="with --floor-json: the run's CPU-seconds (whole process tree)")
    args = ap.parse_args()
    if args.from_report:
        report = json.loads(Path(args.from_report).read_text())
        describe(report, None, args.run_cpu,
                 Path(args.inductor_cache) if args.inductor_cache else None)
        if args.floor_json:
            if args.run_cpu is None:
                sys.exit("bench_cold: --floor-json needs --run-cpu (the run's CPU-seconds)")
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import floor_cold

            floor = json.loads(Path(args.floor_json).read_text())
            floor_cold.describe(floor, cells=False)
            describe_floor(report, args.run_cpu, floor)
        return
    with tempfile.TemporaryDirectory(prefix="laya-cold-") as tmp:
        home, inductor = Path(tmp) / "home", Path(tmp) / "inductor"
        home.mkdir()
        inductor.mkdir()
        out, trace = Path(tmp) / "report.json", Path(tmp) / "trace.json"
        env = dict(os.environ, HOME=str(home), TORCHINDUCTOR_CACHE_DIR=str(inductor),
                   PYTHONPATH=str(REPO), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        env.pop("XDG_CACHE_HOME", None)
        torch_trace = Path(tmp) / "torch-trace" if args.torch_trace else None
        if torch_trace is not None:
            env["TORCH_TRACE"] = str(torch_trace)
        cmd = [sys.executable, "-m", "laya_tui", "--headless", "--no-cache", "--quiet",
               "--jobs", str(args.jobs), "--json", str(out), "--trace", str(trace)]
        for o in args.only:
            cmd += ["--only", o]
        load0 = os.getloadavg()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        hogs = start_hogs(args.hogs)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the hogs not reaped yet
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode not in (0, 1):
            sys.exit(f"run failed ({proc.returncode}): {proc.stderr[-800:]}")
        load1 = os.getloadavg()
        print(f"load average (1/5/15 min) before {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f}, "
              f"after {load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f} on {os.cpu_count()} CPUs"
              + (f"; {args.hogs} CPU hogs beside the run" if args.hogs else ""))
        print("verdict: " + ("PASS" if proc.returncode == 0 else "FAIL")
              + f" (exit {proc.returncode})")
        report = json.loads(out.read_text())
        describe(report, wall, cpu, inductor, torch_trace)
        if args.keep:
            keep = Path(args.keep)
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(out, keep / "report.json")
            if trace.is_file():
                shutil.copy(trace, keep / "trace.json")
            (keep / "inductor-cache.txt").write_text("".join(
                f"{f.relative_to(inductor)}\n" for f in sorted(inductor.rglob("*"))
                if f.is_file() and f.parts[len(inductor.parts)] in ("fxgraph", "aotautograd")))
            if torch_trace is not None:
                (keep / "cache-events.json").write_text(json.dumps(cache_events(torch_trace)))
        if args.floor:
            run_floor(args, report, cpu)


def run_floor(args: argparse.Namespace, report: dict[str, Any], run_cpu: float) -> None:
    """The plain-script floor, cold, beside the run (the same hogs and jobs)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import floor_cold

    if args.only:
        os.environ["FLOOR_CELLS"] = "\n".join(args.only)
    load0 = os.getloadavg()
    hogs = start_hogs(args.hogs)
    try:
        floor = floor_cold.run_families(list(floor_cold.FAMILIES), args.jobs)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    load1 = os.getloadavg()
    print(f"\n# floor (benchmarks/floor_cold.py, cold, --jobs {args.jobs}); load average "
          f"before {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f}, after "
          f"{load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f}")
    floor_cold.describe(floor, cells=False)
    print()
    describe_floor(report, run_cpu, floor)
    if args.keep:
        (Path(args.keep) / "floor.json").write_text(json.dumps(floor, indent=1))


if __name__ == "__main__":
    main()
