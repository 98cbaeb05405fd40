"""What a cell asks a cluster node for and which node gets it (laya_tui/cluster/needs.py,
placement.py, paths.py; docs/cluster.md, 'What a cell asks for'). No Ray needed: the
nodes are the driver's records of them."""

from __future__ import annotations

from laya_tui.cluster.needs import Need, need_of
from laya_tui.cluster.paths import PathMap
from laya_tui.cluster.placement import Placed, Refused, place
from laya_tui.cluster.session import Node


def cell(family: str, **params: object) -> dict[str, object]:
    return {"id": f"{family}/x", "family": family, "params": params}


def node(nid: str, **resources: float) -> Node:
    return Node(nid * 8, f"host-{nid}", "10.0.0.1", {"CPU": 4.0, "memory": 1e9,
                                                      f"node:10.0.0.{nid}": 1.0, **resources})


def test_needs_follow_the_cells_device():
    assert need_of(cell("tilelang", target="cuda", spec="gpu")) == Need("GPU", soft=True)
    assert need_of(cell("tilelang", target="c")) == Need()
    assert need_of(cell("mine", device="rbln")) == Need("rbln", soft=False)
    assert need_of(cell("mine", device="fakegpu")) == Need("fakegpu", soft=False)
    assert need_of(cell("mlx")) == Need("mlx", soft=True)
    assert need_of(cell("explain"), "cuda:1") == Need("GPU", soft=True)
    assert need_of(cell("explain"), "rbln") == Need("rbln", soft=False)
    assert need_of(cell("tilelang"), "cuda") == Need()  # --device is the model families'
    assert need_of(cell("env")) == Need() and Need().label() == "cpu"


def test_cells_go_where_their_resource_is_and_cpu_cells_stay_off_accelerators():
    cpu, gpu, rbln = node("1"), node("2", GPU=1.0), node("3", rbln=4.0)
    nodes = [gpu, rbln, cpu]
    assert place(Need("GPU"), nodes, [], {}) == Placed(gpu, "GPU")
    assert place(Need("rbln", soft=False), nodes, [], {}) == Placed(rbln, "rbln")
    assert place(Need(), nodes, [], {}) == Placed(cpu, None)
    # only accelerator nodes: a CPU cell takes one of them rather than wait
    placed = place(Need(), [gpu, rbln], [], {})
    assert isinstance(placed, Placed) and placed.node in (gpu, rbln)


def test_unmet_needs_run_as_locally_or_are_skipped_never_queued():
    cpu = node("1")
    assert place(Need("GPU", soft=True), [cpu], [], {}) == Placed(cpu, None)  # built, not run
    assert place(Need("rbln", soft=False), [cpu], [], {}) == \
        Refused("skipped", "no node offers rbln")
    lost = node("2", rbln=1.0)
    refused = place(Need("rbln", soft=False), [cpu], [lost], {})
    assert isinstance(refused, Refused) and refused.status == "crashed"
    assert refused.reason == f"node lost: {lost.name()} offered rbln and left the cluster"
    old = node("4", rbln=2.0)
    old.error = "node host-4 (44444444) runs laya-tui 0.0.9, this driver 0.1.0: install ..."
    assert place(Need("rbln", soft=False), [cpu], [], {}, unusable=(old,)) == Refused(
        "skipped", f"no usable node offers rbln: {old.error}")
    assert place(Need(), [], [lost], {}) == \
        Refused("crashed", "node lost: no node of the cluster is left")


def test_a_family_keeps_its_warm_node_and_new_ones_spread():
    a, b = node("1"), node("2")
    assert place(Need(), [a, b], [], {a.id: 1}) == Placed(b, None)
    assert place(Need(), [a, b], [], {a.id: 1}, current=a.id) == Placed(a, None)


def test_node_record_keeps_what_a_reader_needs():
    rec = node("2", GPU=1.0).record()
    assert rec["resources"] == {"CPU": 4.0, "GPU": 1.0}
    assert set(rec) == {"id", "host", "resources", "versions"}


def test_paths_map_to_the_node_and_back():
    m = PathMap.of([("/home/me/ws", "/tmp/ray/wd"), ("/opt/laya/probes", "/srv/laya/probes")])
    assert m.to_node("/home/me/ws/probes/a.py") == "/tmp/ray/wd/probes/a.py"
    assert m.to_node("/home/me/wsx/a.py") == "/home/me/wsx/a.py"  # a prefix, not a folder
    assert m.to_driver("/tmp/ray/wd/helpers/n.py") == "/home/me/ws/helpers/n.py"
    assert m.to_driver("/srv/laya/probes/env.py") == "/opt/laya/probes/env.py"
    assert not PathMap.of([("/same", "/same")])
