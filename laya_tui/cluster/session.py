"""The driver's connection to a Ray cluster and its inventory of nodes (docs/cluster.md).

``--cluster ADDRESS``: ``host:port`` of a running head, ``ray://host:10001`` (Ray Client),
``auto`` (the head ``ray start`` left on this machine), or ``local`` (a one-node cluster
started for the run and stopped after it). Connecting reads every node's resources and, by
a small task on each node, its library versions (the environments check per node).
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass, field
from types import ModuleType

from laya_tui.cluster.relay_types import RayOptions
from laya_tui.core.errors import UsageError
from laya_tui.core.report_types import NodeDict
from laya_tui.core.versions import TOOL_VERSION

#: Ray's own resource names: a node offering only these is a plain CPU node.
PLAIN = frozenset({"CPU", "memory", "object_store_memory"})
#: Seconds the nodes' facts may take (a node that cannot import laya_tui answers at once).
FACTS_TIMEOUT_S = 60.0
#: Seconds to wait for the head's port to answer before Ray is asked to connect.
CONNECT_TIMEOUT_S = 5.0
#: Set to 1 to send the workspace through Ray's runtime environment even to nodes on the
#: driver's own host (tests; on that host the same paths are read by default).
SHIP_ENV = "LAYA_CLUSTER_SHIP"

#: Never sent with the workspace: caches, virtual environments, version control.
SHIP_EXCLUDES = (".git", ".laya-cache", ".venv", ".venv-*", "__pycache__", ".mypy_cache",
                 ".ruff_cache", ".pytest_cache", "node_modules")

INSTALL_HINT = "pip install 'laya-tui[cluster]'"


def check_address(text: str) -> str:
    """``text`` when it is a cluster address laya-tui accepts, else a UsageError line."""
    text = text.strip()
    if text in ("auto", "local") or re.fullmatch(r"ray://[\w.\-\[\]:]+", text) or \
            re.fullmatch(r"[\w.\-]+:\d{1,5}|\[[0-9a-fA-F:]+\]:\d{1,5}", text):
        return text
    raise UsageError(f"--cluster: expected host:port, ray://host:port, auto or local, "
                     f"got {text!r}")


def import_ray() -> ModuleType:
    """The ``ray`` module, or a UsageError with the install hint."""
    try:
        import ray
    except ImportError:
        raise UsageError(f"--cluster needs Ray: {INSTALL_HINT}") from None
    return ray


@dataclass
class Node:
    """One node of the cluster as the driver sees it."""

    id: str
    host: str
    ip: str
    resources: dict[str, float]
    alive: bool = True
    versions: dict[str, str | None] = field(default_factory=dict)
    cores: int = 1
    error: str | None = None  # why no cell may run here (laya_tui missing...)
    same_host: bool = False  # on the driver's host (its worker's /proc can be read here)

    def offers(self, resource: str) -> bool:
        return self.resources.get(resource, 0.0) > 0

    @property
    def plain(self) -> bool:
        """Only a CPU here (no GPU, no custom resource)."""
        return all(k in PLAIN or k.startswith("node:") or k.startswith("accelerator_type:")
                   for k, v in self.resources.items() if v > 0)

    def record(self) -> NodeDict:
        """The result's ``node`` field."""
        res = {k: v for k, v in sorted(self.resources.items())
               if not k.startswith("node:") and k not in ("memory", "object_store_memory")}
        return {"id": self.id, "host": self.host, "resources": res, "versions": self.versions}

    def name(self) -> str:
        """``host (id8)``: how reasons name a node."""
        return f"{self.host} ({self.id[:8]})"


class Session:
    """One run's connection: ``ray.init`` on :meth:`open`, ``ray.shutdown`` on :meth:`close`."""

    def __init__(self, address: str, workspace: str) -> None:
        self.address = check_address(address)
        self.workspace = os.path.realpath(workspace)
        self.namespace = f"laya-tui-{uuid.uuid4().hex[:12]}"
        self.nodes: dict[str, Node] = {}
        self.ray: ModuleType | None = None
        self.driver_ip = ""
        self.ship_always = os.environ.get(SHIP_ENV) == "1"
        #: the workspace travels (Ray's working_dir): some node is on another host
        self.ship = False

    def open(self) -> None:
        """Connect (blocking: run it in a thread) and read the nodes."""
        ray = self.ray = import_ray()
        kwargs: RayOptions = {"namespace": self.namespace, "log_to_driver": False,
                              "logging_level": "ERROR", "configure_logging": True}
        if self.address == "local":
            kwargs.update(include_dashboard=False)
        else:
            self._reachable()
            kwargs["address"] = self.address
        self._init(kwargs)
        self.driver_ip = ray.util.get_node_ip_address()
        self.refresh()
        if self.ship_always or any(not n.same_host for n in self.nodes.values()):
            # Ray sends a working_dir only with the job: connect again, with it
            ray.shutdown()
            self.ship = True
            self._init(dict(kwargs, runtime_env=self.runtime_env()))
            self.nodes.clear()
            self.refresh()
        self._facts()

    def _reachable(self) -> None:
        """A UsageError at once when nothing answers at ``host:port`` (Ray itself retries
        for minutes)."""
        import socket

        text = self.address.removeprefix("ray://")
        if text == "auto":
            return
        host, _, port = text.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S).close()
        except (OSError, ValueError) as exc:
            raise UsageError(f"--cluster {self.address}: cannot connect: nothing answers "
                             f"there ({_one_line(exc)}); start the head with "
                             "'ray start --head' (docs/cluster.md)") from None

    def _init(self, kwargs: RayOptions) -> None:
        ray = self._connected()
        try:
            ray.init(**kwargs)
        except Exception as exc:  # ConnectionError, RuntimeEnvSetupError, ValueError...
            if ray.is_initialized():
                ray.shutdown()
            text = _one_line(exc, 2000)
            too_big = re.search(r"Package size \([^)]*\) exceeds the maximum size of "
                                r"[\d.]+ ?[KMGT]?i?B", text)
            if too_big:
                raise UsageError(f"--cluster: the workspace cannot travel to the nodes: "
                                 f"{too_big.group(0)}; leave large folders out with "
                                 ".gitignore or .rayignore (docs/cluster.md)") from None
            if "runtime_env" in kwargs:
                raise UsageError(f"--cluster: the workspace cannot travel to the nodes: "
                                 f"{_one_line(exc)}") from None
            raise UsageError(f"--cluster {self.address}: cannot connect: "
                             f"{_one_line(exc)}") from None

    def refresh(self) -> None:
        """Read which nodes are alive and what they offer (a node that left stays, dead)."""
        seen: set[str] = set()
        for raw in self._connected().nodes():
            nid = raw["NodeID"]
            seen.add(nid)
            node = self.nodes.get(nid)
            alive = bool(raw.get("Alive"))
            if node is None:
                ip = raw.get("NodeManagerAddress", "")
                self.nodes[nid] = Node(nid, raw.get("NodeManagerHostname") or ip, ip,
                                       dict(raw.get("Resources") or {}), alive,
                                       same_host=ip == self.driver_ip)
            else:
                node.alive = node.alive and alive
        for nid, node in self.nodes.items():
            if nid not in seen:
                node.alive = False

    def _connected(self) -> ModuleType:
        """The ``ray`` module, once :meth:`open` connected."""
        if self.ray is None:
            raise RuntimeError("the cluster session is not open")
        return self.ray

    def alive(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.alive and n.error is None]

    def _facts(self) -> None:
        """Every live node's versions, host and cores, by one small task per node."""
        from laya_tui.cluster.node_actor import node_facts

        ray = self._connected()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        task = ray.remote(num_cpus=0)(node_facts)
        refs = {n.id: task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            n.id, soft=False)).remote() for n in self.nodes.values() if n.alive}
        for nid, ref in refs.items():
            node = self.nodes[nid]
            try:
                facts = ray.get(ref, timeout=FACTS_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - the node's own error, named
                node.error = (f"node {node.name()} cannot run laya-tui ({_one_line(exc)}); "
                              f"install it there: {INSTALL_HINT}")
                continue
            node.versions = facts["versions"]
            node.cores = int(facts.get("cores") or 1)
            node.host = facts.get("host") or node.host
            theirs, mine = node.versions.get("laya-tui"), TOOL_VERSION
            if theirs not in (None, mine):  # the worker protocol is this version's
                node.error = (f"node {node.name()} runs laya-tui {theirs}, this driver "
                              f"{mine}: install the same version on every node")

    def runtime_env(self) -> RayOptions:
        """How the workspace travels when a node is on another host: the job's
        ``working_dir`` (``.gitignore`` and ``.rayignore`` apply), less caches."""
        return {"working_dir": self.workspace, "excludes": list(SHIP_EXCLUDES)}

    def is_alive(self, node_id: str) -> bool:
        """Ask the cluster again whether ``node_id`` is alive."""
        try:
            self.refresh()
        except Exception:  # noqa: BLE001 - the head itself is gone
            return False
        node = self.nodes.get(node_id)
        return node is not None and node.alive

    def close(self) -> None:
        """Disconnect (a ``local`` cluster stops with it)."""
        if self.ray is not None and self.ray.is_initialized():
            self.ray.shutdown()


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return (text[:limit] + "...") if len(text) > limit else text or type(exc).__name__
