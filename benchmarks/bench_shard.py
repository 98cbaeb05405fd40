"""What sharding costs, how even the split is, and how fast merge is.

1. Runs a subset of the demo workspace once to warm the machine, once measured
   (``--no-cache --jobs 1``), then split in 2 and
   in 3 shards run one after another (each ``--shard K/N --durations <the single run's
   report>``), then the single run again (the first run also warms caches laya-tui does not
   own, e.g. TileLang's, so the shards are compared with the mean of the two single runs),
   and prints: the sum of the shards' wall times over the single run's (what
   sharding costs: discovery and warm-worker start-ups paid once per shard), the longest
   shard over the mean shard (how even the split is), and whether the merged shards hold
   the same probes, statuses and signal counts as the single run.
2. Merges synthetic reports totalling 100,000 signals (4 reports of 250 probes x 100
   signals) with ``laya-tui merge`` in-process (load + merge + gates + JSON out) and prints
   the seconds.

    cd REPO && TORCH_DEVICE_BACKEND_AUTOLOAD=0 .venv/bin/python benchmarks/bench_shard.py \\
        [--only GLOB ...] [--skip-runs] [--signals N]

Default subset: ``--only 'env/*' --only 'tilelang/*[c,*' --only 'mlx/*'``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ONLY = ["env/*", "tilelang/*[c,*", "mlx/*"]


CPU: list[float] = []  # CPU seconds (user + sys, workers and compilers included) per run


def run_cli(args: list[str]) -> tuple[float, int, str]:
    """Wall seconds, exit code and stderr tail of one ``laya-tui`` run (from a fresh process);
    its CPU seconds are appended to :data:`CPU` (they depend far less on the other load of a
    shared machine than wall seconds do)."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "laya_tui", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, proc.returncode, proc.stderr[-600:]


def facts(report: dict) -> dict:
    return {p["id"]: (p["status"], len(p["signals"])) for p in report["probes"]}


def shard_runs(only: list[str], tmp: Path) -> None:
    sel = [a for g in only for a in ("--only", g)]
    base = ["--headless", "--no-cache", "--jobs", "1", "-q", *sel]
    full = tmp / "full.json"
    # a first, unmeasured run fills the caches laya-tui does not own (TileLang's kernel
    # cache, compiled bytecode): otherwise the single run's durations, which plan the
    # shards, are those of a colder machine than the shards run on
    warm, rc, err = run_cli([*base, "--json", str(tmp / "warmup.json")])
    if rc not in (0, 1):
        raise SystemExit(f"warm-up run failed (exit {rc}): {err}")
    print(f"warm-up run (not measured): {warm:.1f} s wall / {CPU[-1]:.1f} s CPU")
    single, rc, err = run_cli([*base, "--json", str(full)])
    single_cpu = CPU[-1]
    if rc not in (0, 1):
        raise SystemExit(f"single run failed (exit {rc}): {err}")
    full_doc = json.loads(full.read_text())
    print(f"subset: {' '.join(repr(g) for g in only)}: {len(full_doc['probes'])} cells; "
          f"single run {single:.1f} s wall (report says {full_doc['summary']['seconds']:.1f} s)")
    results = []
    for n in (2, 3):
        walls, cpus, parts = [], [], []
        for k in range(1, n + 1):
            out = tmp / f"shard{k}of{n}.json"
            wall, rc, err = run_cli([*base, "--shard", f"{k}/{n}", "--durations", str(full),
                                     "--json", str(out)])
            if rc not in (0, 1):
                raise SystemExit(f"shard {k}/{n} failed (exit {rc}): {err}")
            walls.append(wall)
            cpus.append(CPU[-1])
            parts.append(str(out))
        doc = json.loads(Path(parts[0]).read_text())
        est = doc["shard"]["estimated_seconds"]
        for k, path in enumerate(parts, 1):
            fams: dict[str, int] = {}
            for p in json.loads(Path(path).read_text())["probes"]:
                fams[p["family"]] = fams.get(p["family"], 0) + 1
            print(f"  shard {k}/{n}: {walls[k - 1]:.1f} s wall, planned {est[k - 1]:.1f} s, "
                  f"cells per family {fams}")
        t0 = time.perf_counter()
        merged_path = tmp / f"merged{n}.json"
        _, rc, err = run_cli(["merge", *parts, "--json", str(merged_path)])
        merge_s = time.perf_counter() - t0
        merged = json.loads(merged_path.read_text())
        same = facts(merged) == facts(full_doc)
        results.append((n, walls, cpus, est, merge_s, same))
    again, rc, err = run_cli([*base, "--json", str(tmp / "full2.json")])
    again_cpu = CPU[-1]
    if rc not in (0, 1):
        raise SystemExit(f"second single run failed (exit {rc}): {err}")
    ref, ref_cpu = (single + again) / 2, (single_cpu + again_cpu) / 2
    print(f"single run: {single:.1f} s wall / {single_cpu:.1f} s CPU, again after the shards: "
          f"{again:.1f} s wall / {again_cpu:.1f} s CPU; reference = the mean of the two")
    for n, walls, cpus, est, merge_s, same in results:
        print(f"N={n}: shard walls {', '.join(f'{w:.1f}' for w in walls)} s, CPU "
              f"{', '.join(f'{c:.1f}' for c in cpus)} s")
        print(f"  sum/single: wall {sum(walls) / ref:.2f}, CPU {sum(cpus) / ref_cpu:.2f}; "
              f"longest/mean: wall {max(walls) / (sum(walls) / n):.2f}, CPU "
              f"{max(cpus) / (sum(cpus) / n):.2f}, planned from --durations "
              f"{max(est) / (sum(est) / n):.2f}")
        print(f"  merge CLI {merge_s:.2f} s; merged == single run (ids, statuses, signal "
              f"counts): {same}")


def synthetic(n_probes: int, per_probe: int, part: int, host: str) -> dict:
    from laya_tui.report.document import build_report
    from laya_tui.report.gates import evaluate_all

    rng = random.Random(part)
    kinds = ["fallback", "recompile", "host_bounce", "cast", "tolerance", "lowering", "timing"]
    probes = []
    for i in range(n_probes):
        pid = f"explain/model_{part}_{i:04d}"
        sigs = []
        for j in range(per_probe):
            kind = kinds[(i + j) % len(kinds)]
            s = {"kind": kind, "probe": pid, "subject": f"aten::op_{j:03d}",
                 "reason": "dtype-not-supported"}
            if kind in ("fallback", "recompile", "host_bounce", "cast"):
                s["count"] = rng.randint(1, 4)
            elif kind in ("tolerance", "lowering"):
                s["passed"] = rng.random() > 0.05
                if kind == "tolerance":
                    s.update(value=rng.random() * 1e-3, limit=1e-3)
            else:
                s["seconds"] = rng.random()
            sigs.append(s)
        probes.append({"id": pid, "family": "explain", "status": "ok", "reason": None,
                       "seconds": 1.0, "cached": False, "deps": [], "signals": sigs,
                       "log_tail": ""})
    gates, _ = evaluate_all(probes)
    report = build_report(probes, seconds=10.0, gates=gates)
    report["environment"]["host"]["hostname"] = host
    return report


def merge_timing(total_signals: int, tmp: Path) -> None:
    from laya_tui.report.merge import main as merge_main

    per_probe, n_parts = 100, 4
    paths = []
    for part in range(n_parts):
        doc = synthetic(total_signals // (per_probe * n_parts), per_probe, part, f"host{part}")
        path = tmp / f"synth{part}.json"
        path.write_text(json.dumps(doc, indent=1))
        paths.append(str(path))
    out = tmp / "synth-merged.json"
    devnull = open(os.devnull, "w")  # noqa: SIM115 - the summary lines are not measured
    old, sys.stderr = sys.stderr, devnull
    try:
        t0 = time.perf_counter()
        rc = merge_main([*paths, "--json", str(out), "--workspace", str(tmp)])
        seconds = time.perf_counter() - t0
    finally:
        sys.stderr = old
        devnull.close()
    merged = json.loads(out.read_text())
    n = sum(len(p["signals"]) for p in merged["probes"])
    print(f"merge of {n_parts} reports, {n:,} signals in all ({len(merged['probes'])} probes, "
          f"{len(merged['hosts'])} hosts): {seconds:.2f} s (load + merge + gates + write; "
          f"exit {rc})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append")
    ap.add_argument("--skip-runs", action="store_true", help="only the merge timing")
    ap.add_argument("--signals", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-shard-") as d:
        tmp = Path(d)
        if not args.skip_runs:
            shard_runs(args.only or DEFAULT_ONLY, tmp)
        merge_timing(args.signals, tmp)


if __name__ == "__main__":
    main()
