"""``--cluster``: a real local Ray cluster of two nodes (one CPU each, one offering a custom
``fakegpu`` resource), started once for the module (issue 47, docs/cluster.md).

Cells that ask for ``fakegpu`` run on that node and the rest on the other; the report equals
a local run of the same selection (node fields aside), with the workspace travelling through
Ray's runtime environment; a resource no node offers skips its cell; crashes and hangs name
the node; a node killed mid-run gives ``crashed`` (node lost) and the run ends; the
dashboard runs on the cluster; after a run, Ctrl-C and ``q`` nothing of the run is left on
the cluster (actors, resources, worker processes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from laya_tui.core.events import SignalEmitted
from laya_tui.core.report_types import ResultDict
from laya_tui.core.run import run_probes
from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions
from laya_tui.report.document import validate_report
from tests._util import run_cli

ray = pytest.importorskip(
    "ray", reason="the cluster tests need Ray: pip install -c constraints.txt -e '.[cluster]' "
    "(scripts/setup.sh installs it with the dev extra)")

from laya_tui.cluster.factory import make_runner  # noqa: E402 - after the Ray check
from tests._signals import site_of  # noqa: E402

MB = 2 ** 20
# no usage report: the CI machine reaches no outside host, and the tests need none
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

CELLS = '''
import os
from laya_tui.api import param, probe
from helpers.nums import scale


@probe("plain", params=[param("a", n=1), param("b", n=2)])
def plain(ctx, n):
    ctx.tolerance(f"n={n}", scale(n), 0.01)
    ctx.signal("fallback", subject="aten::demo", site={"file": __file__, "line": 7})


@probe("gpu", params=[param("x", device="fakegpu"), param("y", device="fakegpu")])
def gpu(ctx, device):
    ctx.environment("device", device)
    ctx.tolerance("gpu", scale(3), 0.01)


@probe("rbln", params=[param("r", device="rbln")])
def on_rbln(ctx, device):
    ctx.environment("device", device)
'''

FAULTS = '''
import os
import time
from laya_tui.api import param, probe


@probe("boom", params=[param("abort", device="fakegpu")])
def boom(ctx, device):
    print("about to abort", flush=True)
    os.abort()


@probe("hang", params=[param("sleep")], timeout=2)
def hang(ctx):
    time.sleep(600)


@probe("lacks", params=[param("lib", device="fakegpu")])
def lacks(ctx, device):
    import laya_no_such_library  # noqa: F401 - a library the node lacks
'''

SLOW = '''
import time
from laya_tui.api import param, probe


@probe("slow", params=[param("first", device=DEVICE), param("second", device=DEVICE)])
def slow(ctx, device):
    ctx.environment("started", device)
    time.sleep(120)
'''


@pytest.fixture(scope="module")
def cluster():
    """Two small nodes: the head (CPU only) and one with the custom resource fakegpu."""
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": 80 * MB, "include_dashboard": False})
    gpu_node = c.add_node(num_cpus=1, resources={"fakegpu": 1},
                          object_store_memory=80 * MB)
    c.wait_for_nodes(timeout=120)  # 30 s by default: short on a loaded 2-core machine
    try:
        yield c, gpu_node
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cluster_ws")
    (root / "probes").mkdir()
    (root / "helpers").mkdir()
    (root / "helpers" / "__init__.py").write_text("")
    (root / "helpers" / "nums.py").write_text("def scale(n):\n    return 0.001 * n\n")
    (root / "probes" / "cells.py").write_text(CELLS)
    (root / "probes" / "faults.py").write_text(FAULTS)
    for name, device in (("slow_doomed.py", "doomed"), ("slow_gpu.py", "fakegpu")):
        (root / "slow").mkdir(exist_ok=True)
        (root / "slow" / name).write_text(SLOW.replace("DEVICE", repr(device)))
    return root


def options(ws: Path, probes: str, cluster: str | None, **kw: Any) -> RunOptions:
    base: dict[str, Any] = {"use_cache": False, "cache_dir": str(ws / ".cache"), "jobs": 2}
    return RunOptions(workspace=str(ws), probes=(str(ws / probes),), cluster=cluster,
                      **{**base, **kw})


def run(config: RunOptions, on_event: Any = None) -> tuple[dict[str, ResultDict], float]:
    t0 = time.perf_counter()
    results, _, _ = asyncio.run(run_probes(config, on_event, make_runner=make_runner))
    return {r["id"]: r for r in results}, time.perf_counter() - t0


def comparable(result: Mapping[str, Any]) -> dict[str, Any]:
    """A result less what differs between two runs of the same cell (times, the node)."""
    skip = {"started", "ended", "seconds", "budget", "node", "log_tail"}
    return {k: v for k, v in result.items() if k not in skip}


def left_on(address: str, ws: Path, *, wait_s: float = 20.0) -> list[str]:
    """What the run left on the cluster: live relay actors, resources in use, worker
    processes of this workspace. Polled: Ray frees a killed actor's resources shortly after."""
    import psutil

    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            actors = [a["Name"] or a["ActorID"] for a in ray._private.state.actors().values()
                      if a["ActorClassName"] == "NodeWorker" and a["State"] != "DEAD"]
            total, free = ray.cluster_resources(), ray.available_resources()
            busy = [f"{k} {free.get(k, 0)}/{v}" for k, v in total.items()
                    if k in ("CPU", "GPU", "fakegpu") and free.get(k, 0) != v]
            procs = [p.pid for p in psutil.process_iter(["cmdline"])
                     if "laya_tui.worker" in " ".join(p.info["cmdline"] or ())
                     and str(ws) in " ".join(p.info["cmdline"] or ())]
            left = [f"actor {a}" for a in actors] + busy + [f"worker pid {p}" for p in procs]
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.25)
    finally:
        ray.shutdown()


def test_cells_run_where_their_resource_is_and_the_report_equals_a_local_run(
        cluster, ws, monkeypatch):
    c, gpu_node = cluster
    monkeypatch.setenv("LAYA_CLUSTER_SHIP", "1")  # the workspace travels as to another host
    got, _ = run(options(ws, "probes/cells.py", c.address, only=("plain/*", "gpu/*")))
    local, _ = run(options(ws, "probes/cells.py", None, only=("plain/*", "gpu/*")))
    assert sorted(got) == sorted(local) == ["gpu/gpu[x]", "gpu/gpu[y]", "plain/plain[a]",
                                            "plain/plain[b]"]
    for pid in got:
        assert comparable(got[pid]) == comparable(local[pid]), pid
        assert got[pid]["status"] == "ok"
    # the call site and the dependency set read as the driver's paths, not the node's copy
    site = site_of(next(s for s in got["plain/plain[a]"]["signals"] if s["kind"] == "fallback"))
    assert site["file"] == str((ws / "probes" / "cells.py").resolve())
    assert "helpers/nums.py" in got["plain/plain[a]"]["deps"]
    gpu_id = gpu_node.node_id
    assert {got[p]["node"]["id"] for p in ("gpu/gpu[x]", "gpu/gpu[y]")} == {gpu_id}
    assert {got[p]["node"]["id"] for p in ("plain/plain[a]", "plain/plain[b]")} != {gpu_id}
    node = got["gpu/gpu[x]"]["node"]
    assert node["resources"]["fakegpu"] == 1 and node["host"]
    assert node["versions"]["laya-tui"] and node["versions"]["python"]
    assert "node" not in local["gpu/gpu[x]"]
    assert left_on(c.address, ws) == []


def test_unmet_resource_is_skipped_and_faults_name_their_node(cluster, ws):
    c, gpu_node = cluster
    got, _ = run(options(ws, "probes", c.address,
                         only=("rbln/*", "boom/*", "hang/*", "lacks/*")))
    rb = got["rbln/on_rbln[r]"]
    assert rb["status"] == "skipped" and rb["reason"] == "no node offers rbln"
    assert "node" not in rb and rb["signals"] == []
    boom = got["boom/boom[abort]"]
    assert boom["status"] == "crashed"
    assert boom["reason"] is not None
    assert "SIGABRT" in boom["reason"] and gpu_node.node_id[:8] in boom["reason"]
    assert "about to abort" in boom["log_tail"]  # the node's log, brought back
    hang = got["hang/hang[sleep]"]
    assert hang["reason"] is not None
    assert hang["status"] == "timeout" and "timed out after 2 s" in hang["reason"]
    assert hang["reason"] is not None
    assert hang["node"]["id"][:8] in hang["reason"]
    lacks = got["lacks/lacks[lib]"]  # the environments check per node: who lacks what
    assert lacks["status"] == "failed"
    assert lacks["reason"] == ("ModuleNotFoundError: No module named 'laya_no_such_library' "
                               f"(on node {lacks['node']['host']} ({gpu_node.node_id[:8]}))")
    assert left_on(c.address, ws) == []


def test_a_node_killed_mid_run_crashes_its_cells_and_the_run_ends(cluster, ws):
    c, _ = cluster
    doomed = c.add_node(num_cpus=1, resources={"doomed": 1}, object_store_memory=80 * MB)
    c.wait_for_nodes(timeout=120)
    killed: list[float] = []
    ran: list[str] = []  # the cell that started (the scheduler picks which goes first)

    def on_event(event: Any) -> None:
        if isinstance(event, SignalEmitted) and event.signal.get("subject") == "started" \
                and not killed:
            killed.append(time.perf_counter())
            ran.append(event.probe_id)
            threading.Thread(target=c.remove_node, args=(doomed,)).start()

    got, _ = run(options(ws, "slow/slow_doomed.py", c.address), on_event)
    ended = time.perf_counter()
    assert killed, "the slow cell never started on the doomed node"
    (other,) = {"slow/slow[first]", "slow/slow[second]"} - set(ran)
    first, second = got[ran[0]], got[other]
    assert first["reason"] is not None
    assert first["status"] == "crashed" and first["reason"].startswith("node lost: ")
    assert first["node"]["id"] == doomed.node_id
    assert [s["subject"] for s in first["signals"]] == ["started"]  # what it sent before
    assert second["status"] == "crashed"
    assert second["reason"] is not None
    assert second["reason"].endswith("offered doomed and left the cluster")
    assert ended - killed[0] < 30  # not the cell's 120 s sleep, not its timeout
    assert left_on(c.address, ws) == []


def test_ctrl_c_cancels_the_remote_cells_and_leaves_nothing(cluster, ws):
    c, gpu_node = cluster
    started: list[str] = []

    def on_event(event: Any) -> None:
        if isinstance(event, SignalEmitted) and event.signal.get("subject") == "started":
            started.append(event.probe_id)
            os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends: run_probes' handler

    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run(options(ws, "slow/slow_gpu.py", c.address), on_event)
    # one cell started (which one is the scheduler's: its quickest by recorded durations)
    assert len(started) == 1 and started[0] in ("slow/slow[first]", "slow/slow[second]")
    assert time.perf_counter() - t0 < 60
    assert left_on(c.address, ws) == []


def test_the_cache_is_keyed_by_the_nodes_too(cluster, ws, tmp_path):
    c, _ = cluster
    cached = options(ws, "probes/cells.py", c.address, only=("gpu/*",), use_cache=True)
    cached = dataclasses.replace(cached, cache_dir=str(tmp_path / "cache"))
    first, _ = run(cached)
    again, _ = run(cached)
    assert [r["cached"] for r in first.values()] == [False, False]
    assert [r["cached"] for r in again.values()] == [True, True]
    assert again["gpu/gpu[x]"]["node"] == first["gpu/gpu[x]"]["node"]  # where it ran
    local, _ = run(dataclasses.replace(cached, cluster=None))  # another machine: not served
    assert [r["cached"] for r in local.values()] == [False, False]


def test_a_workspace_too_big_to_travel_is_one_line(cluster, ws, monkeypatch):
    from ray._private.runtime_env import packaging

    from laya_tui.core.errors import UsageError

    c, _ = cluster
    monkeypatch.setenv("LAYA_CLUSTER_SHIP", "1")
    monkeypatch.setattr(packaging, "GCS_STORAGE_MAX_SIZE", 1024)  # Ray's own check, lowered
    with pytest.raises(UsageError) as err:
        run(options(ws, "probes/cells.py", c.address, only=("plain/*",)))
    assert re.fullmatch(r"--cluster: the workspace cannot travel to the nodes: Package size "
                        r"\([\d.]+ ?[KM]iB\) exceeds the maximum size of 0\.00 ?MiB; leave "
                        r"large folders out with \.gitignore or \.rayignore "
                        r"\(docs/cluster\.md\)", str(err.value)), str(err.value)
    assert not ray.is_initialized()
    assert left_on(c.address, ws) == []


def test_the_cli_runs_on_the_cluster(cluster, ws, tmp_path):
    c, gpu_node = cluster
    out = tmp_path / "report.json"
    proc = run_cli("--headless", "--cluster", c.address, "--workspace", str(ws),
                   "--probes", str(ws / "probes" / "cells.py"), "--only", "gpu/*",
                   "--only", "rbln/*", "--no-cache", "--json", str(out), cwd=ws, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    validate_report(report)
    assert report["schema"] == "laya-tui.report/5"
    by = {p["id"]: p for p in report["probes"]}
    assert by["gpu/gpu[x]"]["node"]["id"] == gpu_node.node_id
    assert by["rbln/on_rbln[r]"]["state"] == "skipped"
    assert "gpu/gpu[x] (" in proc.stderr and f" {gpu_node.node_id[:8]})" in proc.stderr
    assert "skipped: rbln/on_rbln[r]: no node offers rbln" in proc.stderr
    assert left_on(c.address, ws) == []


def test_a_bad_address_is_one_line(ws):
    proc = run_cli("--headless", "--cluster", "nowhere", "--workspace", str(ws),
                   cwd=ws, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "laya-tui: error: --cluster: expected host:port, ray://host:port, auto or local, "
        "got 'nowhere'"]


def test_an_unreachable_head_is_one_line_at_once(ws):
    t0 = time.perf_counter()
    proc = run_cli("--headless", "--cluster", "127.0.0.1:9", "--workspace", str(ws),
                   cwd=ws, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "laya-tui: error: --cluster 127.0.0.1:9: cannot connect: nothing answers there "
        "([Errno 111] Connection refused); start the head with 'ray start --head' "
        "(docs/cluster.md)"]
    assert time.perf_counter() - t0 < 30  # Ray alone retries for minutes


def test_env_cells_run_on_the_nodes_in_that_interpreter(cluster, ws, tmp_path):
    """--env under --cluster: each cell once per environment (``...@alt``), its worker on
    the node started with the environment's interpreter (the same path there), placed by
    its resource as without --env."""
    c, gpu_node = cluster
    out = tmp_path / "report.json"
    proc = run_cli("--headless", "--cluster", c.address, "--env", f"alt={sys.executable}",
                   "--workspace", str(ws), "--probes", str(ws / "probes" / "cells.py"),
                   "--only", "gpu/*", "--only", "plain/plain[a]*", "--no-cache", "--json",
                   str(out), cwd=ws, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    validate_report(report)
    by = {p["id"]: p for p in report["probes"]}
    assert sorted(by) == ["gpu/gpu[x]@alt", "gpu/gpu[y]@alt", "plain/plain[a]@alt"]
    assert {p["status"] for p in by.values()} == {"ok"}
    assert by["gpu/gpu[x]@alt"]["node"]["id"] == gpu_node.node_id
    assert by["plain/plain[a]@alt"]["node"]["id"] != gpu_node.node_id
    assert report["envs"]["alt"]["python"] == sys.executable
    assert left_on(c.address, ws) == []


def test_runner_without_cluster_stays_local():
    assert type(make_runner(RunOptions())) is Runner


@pytest.mark.asyncio
async def test_the_dashboard_runs_on_the_cluster_and_q_leaves_nothing(cluster, ws):
    from laya_tui.tui.factory import build_app
    from tests._tui import SIZE, screen_text

    c, gpu_node = cluster
    app = build_app(options(ws, "probes/cells.py", c.address, only=("plain/*", "gpu/*")))
    async with app.run_test(size=SIZE) as pilot:
        await app.settled(timeout=120)
        probes = app.model.probes
        assert {pid: st.status for pid, st in probes.items()} == {
            "plain/plain[a]": "ok", "plain/plain[b]": "ok", "gpu/gpu[x]": "ok",
            "gpu/gpu[y]": "ok"}
        result = probes["gpu/gpu[x]"].result
        assert result is not None
        node = result.node
        assert node is not None and node["id"] == gpu_node.node_id
        await pilot.press("v")  # the environments screen shows the nodes side by side
        await pilot.pause()
        text = screen_text(app)
        assert "nodes: the 2 cluster nodes this run's cells ran on (--cluster)" in text
        assert f"({gpu_node.node_id[:8]})" in text and "fakegpu 1" in text
        await pilot.press("escape")
        await pilot.press("q")
        await pilot.pause()
    assert await asyncio.to_thread(left_on, c.address, ws) == []


@pytest.mark.asyncio
async def test_q_mid_run_cancels_the_remote_cell(cluster, ws):
    from laya_tui.tui.factory import build_app
    from tests._tui import SIZE

    c, _ = cluster
    app = build_app(options(ws, "slow/slow_gpu.py", c.address))
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 60
        while not any(st.status == "running" and st.rows for st in app.model.probes.values()):
            assert time.monotonic() < deadline, "the slow cell never started"
            await asyncio.sleep(0.1)
        t0 = time.monotonic()
        await pilot.press("q")
        await pilot.pause()
        assert time.monotonic() - t0 < 30  # not the cell's 120 s sleep
    assert await asyncio.to_thread(left_on, c.address, ws) == []
