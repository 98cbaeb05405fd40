"""What ``--cluster`` costs against a local run, on a local Ray cluster (issue 47).

1. Starts a local cluster of two nodes (one CPU each; the second offers ``fakegpu``), writes
   a workspace of small probes (``--cells`` cells in two families, one of them asking for
   ``fakegpu``, each sending ``--signals`` signals) and runs it ``--repeat`` times locally
   and on the cluster (``--no-cache``, ``--jobs 2``, from this process through
   ``laya_tui.core.run.run_probes``), and prints per run: the wall time, the time to the
   first signal, the per-cell seconds the runner measured (the relay's overhead, without
   connecting or starting workers), and the connect + start-up cost (wall minus the cells).
2. The memory (RSS) of the cluster's processes (GCS, raylets, agents, idle workers, the
   relay actors) while it is up, summed by process name, and of the driver.
3. ``--tilelang``: the demo's TileLang cells (``--tilelang-only``, default the C-target
   add_ln cells) on a cluster of one node and of two, against the local run.

    cd REPO && TORCH_DEVICE_BACKEND_AUTOLOAD=0 .venv/bin/python benchmarks/bench_cluster.py \\
        [--cells 20] [--signals 20] [--repeat 3] [--tilelang]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

from laya_tui.cluster.factory import make_runner  # noqa: E402
from laya_tui.core.events import SignalEmitted  # noqa: E402
from laya_tui.core.run import run_probes  # noqa: E402
from laya_tui.core.settings import RunOptions  # noqa: E402

MB = 2 ** 20

PROBES = '''
from laya_tui.api import param, probe

CELLS = [param(str(i), i=i) for i in range({half})]


@probe("plain", params=CELLS)
def plain(ctx, i):
    for k in range({signals}):
        ctx.tolerance(f"out{{k}}", 0.001 * k, 0.5)


@probe("gpu", params=[param(str(i), i=i, device="fakegpu") for i in range({half})])
def gpu(ctx, i, device):
    for k in range({signals}):
        ctx.tolerance(f"out{{k}}", 0.001 * k, 0.5)
'''


def workspace(root: Path, cells: int, signals: int) -> Path:
    (root / "probes").mkdir(parents=True, exist_ok=True)
    (root / "probes" / "small.py").write_text(
        PROBES.format(half=max(1, cells // 2), signals=signals))
    return root


def one_run(config: RunOptions, require_ok: bool = True) -> dict[str, Any]:
    """Wall seconds, seconds to the first signal, per-cell seconds of one run."""
    t0 = time.perf_counter()
    first: list[float] = []

    def on_event(event: Any) -> None:
        if isinstance(event, SignalEmitted) and not first:
            first.append(time.perf_counter() - t0)

    results, _, _ = asyncio.run(run_probes(config, on_event, make_runner=make_runner))
    wall = time.perf_counter() - t0
    bad = [r["id"] for r in results if r["status"] != "ok"]
    if bad and require_ok:
        raise SystemExit(f"cells did not pass: {bad[:5]}")
    cells = [float(r["seconds"]) for r in results]
    return {"wall": wall, "first_signal": first[0] if first else None,
            "cell_median": statistics.median(cells), "cell_sum": sum(cells), "cells": len(cells),
            "statuses": {r["id"]: r["status"] for r in results}}


def rss_of_cluster() -> dict[str, float]:
    """MiB of resident memory of the Ray processes (and the driver), by process name."""
    import psutil

    me = os.getpid()
    out: dict[str, float] = collections.defaultdict(float)
    count: dict[str, int] = collections.defaultdict(int)
    for p in psutil.process_iter(["pid", "name", "cmdline", "memory_info"]):
        cmd = " ".join(p.info["cmdline"] or ())
        if p.info["pid"] == me:
            out["driver (this process)"] += p.info["memory_info"].rss / MB
        elif "ray" in cmd or (p.info["name"] or "").startswith(("ray::", "raylet", "gcs_")):
            if "bench_cluster" in cmd:
                continue
            name = p.info["name"] or "?"
            args = cmd.split()
            if name in ("raylet", "gcs_server"):
                pass
            elif "laya_tui.worker" in cmd:
                name = "laya_tui.worker (the probe workers)"
            elif "default_worker.py" in cmd:
                name = "Ray worker processes (idle pool, relay actors)"
            elif name.startswith("python"):  # Ray's python daemons, by script
                script = next((a for a in args[1:] if a.endswith(".py")), "?")
                name = "python " + Path(script).name
            count[name] += 1
            out[name] += p.info["memory_info"].rss / MB
    return {f"{k} (x{count[k]})" if count.get(k, 0) > 1 else k: v for k, v in out.items()}


def summary(label: str, runs: list[dict[str, Any]]) -> None:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs if r[key] is not None)

    startup = statistics.median(r["wall"] - r["cell_sum"] for r in runs)
    print(f"  {label:<22} wall {med('wall'):6.2f} s   first signal {med('first_signal'):5.2f} s"
          f"   median cell {1000 * med('cell_median'):6.1f} ms   wall - cells {startup:5.2f} s"
          f"   ({runs[0]['cells']} cells, median of {len(runs)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", type=int, default=20)
    ap.add_argument("--signals", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tilelang", action="store_true")
    ap.add_argument("--tilelang-only", action="append",
                    default=None, help="default: tilelang/add_ln_kernel[c,*")
    args = ap.parse_args()
    import ray
    from ray.cluster_utils import Cluster

    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    ws = workspace(tmp / "ws", args.cells, args.signals)
    t0 = time.perf_counter()
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": 80 * MB, "include_dashboard": False})
    c.add_node(num_cpus=1, resources={"fakegpu": 1}, object_store_memory=80 * MB)
    c.wait_for_nodes()
    print(f"local 2-node cluster up in {time.perf_counter() - t0:.1f} s "
          f"(CPUs: {os.cpu_count()}, load {os.getloadavg()[0]:.1f})")

    def opts(cluster: str | None, root: Path = ws, **kw: Any) -> RunOptions:
        base: dict[str, Any] = {"workspace": str(root), "cluster": cluster,
                                "use_cache": False, "cache_dir": str(tmp / "cache"),
                                "jobs": 2}
        base.update(kw)
        return RunOptions(**base)

    try:
        print(f"\n1. small probes: {args.cells} cells x {args.signals} signals")
        local = [one_run(opts(None, probes=(str(ws / "probes"),)))
                 for _ in range(args.repeat)]
        remote = [one_run(opts(c.address, probes=(str(ws / "probes"),)))
                  for _ in range(args.repeat)]
        summary("local workers", local)
        summary("cluster (2 nodes)", remote)
        over = (statistics.median(r["cell_median"] for r in remote)
                - statistics.median(r["cell_median"] for r in local))
        print(f"  per-cell overhead of the relay: {1000 * over:+.1f} ms; connect + actor "
              f"start-up: {statistics.median(r['wall'] for r in remote) - statistics.median(r['wall'] for r in local):+.2f} s a run")  # noqa: E501

        print("\n2. memory (RSS, MiB) of the cluster's processes, idle after the runs")
        time.sleep(3)  # the run's relay actors are gone (the tests check they leave)
        rss = rss_of_cluster()
        for name, mib in sorted(rss.items(), key=lambda kv: -kv[1]):
            print(f"  {mib:8.1f}  {name}")
        print(f"  {sum(v for k, v in rss.items() if not k.startswith('driver')):8.1f}  "
              "total of the cluster (driver excluded)")

        if args.tilelang:
            only = tuple(args.tilelang_only or ["tilelang/add_ln_kernel[c,*"])
            from laya_tui.cli.project import builtin_probes_dir, demo_kernels_dir

            demo = {"probes": (builtin_probes_dir(),), "kernels": (demo_kernels_dir(),),
                    "only": only, "demo": True}
            print(f"\n3. demo TileLang cells {list(only)}")
            runs = {"local workers": one_run(opts(None, REPO, **demo), False),
                    "cluster, 2 nodes": one_run(opts(c.address, REPO, **demo), False)}
            c.remove_node(list(c.worker_nodes)[0])
            time.sleep(2)
            runs["cluster, 1 node"] = one_run(opts(c.address, REPO, **demo), False)
            for label, r in runs.items():
                summary(label, [r])
            same = len({tuple(sorted(r["statuses"].items())) for r in runs.values()}) == 1
            print(f"  statuses the same in the three runs: {same}")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()


if __name__ == "__main__":
    main()
