"""The node side of ``--cluster``: one Ray actor per family and node that starts the same
worker process a local run does (``python -m laya_tui.worker``, through
:class:`~laya_tui.core.worker_handle.WorkerHandle`) on its node and relays its protocol
events to the driver (docs/cluster.md, 'How it runs').

The actor is a plain class here; :mod:`laya_tui.cluster.remote_handle` wraps it with
``ray.remote`` (so importing this module imports no Ray). A probe's log
stays on the node; its tail travels with the ``finished`` event (or with the worker's
death), as the runner reads it locally.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from typing import cast

from laya_tui.cluster.paths import PathMap, node_map
from laya_tui.cluster.relay_types import NodeFacts, ReadBatch, RelayMessage, StartReply, WorkerSpec
from laya_tui.core.protocol import Command, Reply
from laya_tui.core.worker_handle import WorkerDied, WorkerHandle, log_tail, safe_name

#: Most events one ``read`` returns.
READ_BATCH = 512
#: The synthetic event a relay sends once its worker is gone (``reason``, log tails).
DIED = "_died"


def node_facts() -> NodeFacts:
    """What the driver records about a node: its versions, host and cores (a Ray task)."""
    import platform

    from laya_tui.core.defaults import usable_cores
    from laya_tui.core.versions import library_versions

    return {"versions": library_versions(), "host": platform.node(), "cores": usable_cores(),
            "python": sys.executable, "platform": platform.platform()}


class NodeWorker:
    """One warm worker on this node, relayed to the driver (a Ray actor)."""

    def __init__(self, key: str, spec: WorkerSpec) -> None:
        from laya_tui.core.settings import RunOptions

        self.key = key
        self.log_dir = tempfile.mkdtemp(prefix="laya-tui-node-")
        self.map = PathMap()
        if spec.get("ship"):  # the workspace travelled: it is this actor's cwd
            self.map = node_map(spec.get("dirs") or {}, spec["workspace"], os.getcwd())
        opts = spec["options"]
        to_node = self.map.to_node
        self.config = RunOptions(
            workspace=to_node(spec["workspace"]),
            probes=tuple(to_node(p) for p in opts.get("probes", [])),
            kernels=tuple(to_node(p) for p in opts.get("kernels", [])),
            models=tuple(opts.get("models", [])), demo=bool(opts.get("demo")),
            device=opts.get("device"), out=opts.get("out") and to_node(opts["out"]),
            rbln_log=opts.get("rbln_log"), kernel_args=opts.get("kernel_args") or {},
            precision_plan=opts.get("precision_plan", True), python=sys.executable)
        self.env = spec.get("env")  # --env: {name, python}, the same path on every node
        self.handle: WorkerHandle | None = None
        self.events: asyncio.Queue[RelayMessage] = asyncio.Queue()
        self.pump: asyncio.Task[None] | None = None
        self.probe_log: str | None = None  # this node's log of the cell in flight

    async def start(self) -> StartReply:
        """Start the worker; its pid, or ``error`` and the worker's log."""
        env = None
        if self.env:
            from laya_tui.core.envs import Environment

            if not os.access(self.env["python"], os.X_OK):
                return {"error": f"--env {self.env['name']}: no interpreter "
                                 f"{self.env['python']} here", "worker_log": ""}
            env = Environment(name=self.env["name"], python=self.env["python"])
        self.handle = WorkerHandle(self.key, self.config, self.log_dir, env)
        try:
            await self.handle.start()
        except (WorkerDied, TimeoutError, OSError) as exc:
            return {"error": f"{exc}", "worker_log": log_tail(self.handle.worker_log)}
        assert self.handle.proc is not None
        self.pump = asyncio.get_running_loop().create_task(self._pump())
        return {"pid": self.handle.proc.pid, "root": os.getcwd()}

    async def send(self, cmd: Command) -> None:
        """Pass one command on, with the node's paths (and log file) in it."""
        assert self.handle is not None
        msg: RelayMessage = dict(cmd)
        if "file" in msg:
            msg["file"] = self.map.to_node(msg["file"])
        if "files" in msg:
            msg["files"] = [self.map.to_node(f) for f in msg["files"]]
        if "paths" in msg:
            msg["paths"] = [self.map.to_node(f) for f in msg["paths"]]
        if "log" in msg:
            self.probe_log = msg["log"] = os.path.join(
                self.log_dir, safe_name(str(msg.get("id", "probe"))) + ".log")
            if os.path.exists(self.probe_log):
                os.unlink(self.probe_log)
        try:
            await self.handle.send(cast(Command, msg))  # the command, its paths the node's
        except WorkerDied as exc:
            await self.events.put(self._died(str(exc)))

    async def read(self, wait: float) -> ReadBatch:
        """The events that arrived, waiting up to ``wait`` s for the first."""
        out: list[RelayMessage] = []
        try:
            out.append(await asyncio.wait_for(self.events.get(), wait))
            while len(out) < READ_BATCH and not self.events.empty():
                out.append(self.events.get_nowait())
        except TimeoutError:
            pass
        return {"events": out}

    async def _pump(self) -> None:
        assert self.handle is not None
        while True:
            try:
                event: RelayMessage = dict(await self.handle.next_event(None))
            except WorkerDied as exc:
                await self.events.put(self._died(str(exc)))
                return
            etype = event.get("type")
            if etype == Reply.FINISHED:
                if self.probe_log:
                    event["log_tail"] = log_tail(self.probe_log)
                event["deps"] = [self.map.to_driver(d) for d in event.get("deps") or []]
            elif self.map and etype == Reply.SIGNALS:
                for sig in event.get("signals") or ():
                    self._driver_site(sig)
            elif self.map and etype == Reply.SIGNAL and isinstance(event.get("signal"), dict):
                self._driver_site(event["signal"])
            await self.events.put(event)

    def _driver_site(self, sig: object) -> None:
        site = sig.get("site") if type(sig) is dict else None
        if type(site) is dict and type(site.get("file")) is str:
            site["file"] = self.map.to_driver(site["file"])

    def _died(self, reason: str) -> RelayMessage:
        assert self.handle is not None
        return {"type": DIED, "reason": reason,
                "log_tail": log_tail(self.probe_log) if self.probe_log else "",
                "worker_log": log_tail(self.handle.worker_log)}

    async def close(self) -> None:
        """End the worker (``exit``, then its group is killed) and remove the logs."""
        if self.handle is not None:
            if self.handle.alive:
                await self.handle.close()
            self.handle.kill()
        if self.pump is not None:
            self.pump.cancel()
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def kill_worker(self) -> None:
        """SIGKILL the worker's process group now (a cancel)."""
        if self.handle is not None:
            self.handle.kill()
