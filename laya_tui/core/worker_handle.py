"""One worker subprocess seen from the runner: spawned in its own process group with its
signal pipe, fed commands on stdin, read event by event with a deadline, killed as a group.

Pure asyncio and the standard library (docs/architecture.md, 'Processes and the one rule').
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from typing import Protocol, cast

from laya_tui.core.defaults import THREADS_VAR, worker_threads
from laya_tui.core.envs import Environment
from laya_tui.core.logtext import trim_faulthandler
from laya_tui.core.protocol import Command, Op, Reply, WorkerEvent
from laya_tui.core.settings import RunOptions

LOG_TAIL_CHARS = 4000
#: The longest line the signal pipe takes (a signal with a large detail).
MAX_LINE = 64 * 1024 * 1024


class WorkerDied(Exception):
    """The worker process ended or broke its protocol."""



class _Process(Protocol):
    @property
    def pid(self) -> int: ...


class WorkerLike(Protocol):
    """What the runner uses of a warm worker: a local :class:`WorkerHandle`, or a cluster
    node's (``laya_tui.cluster.remote_handle.RemoteHandle``)."""

    @property
    def alive(self) -> bool: ...
    @property
    def proc(self) -> _Process | None: ...
    @property
    def worker_log(self) -> str: ...
    @property
    def last_line(self) -> bytes: ...
    async def start(self) -> None: ...
    async def send(self, cmd: Command) -> None: ...
    async def next_event(self, timeout: float | None) -> WorkerEvent: ...
    def kill(self) -> None: ...
    async def close(self) -> None: ...


class WorkerHandle:
    """One worker subprocess in its own process group, with its signal pipe."""

    def __init__(self, family: str, config: RunOptions, log_dir: str,
                 env: Environment | None = None) -> None:
        self.family = family  # the worker key: the family, ``family@env`` in an environment
        self.config = config
        self.log_dir = log_dir
        self.env = env
        self.proc: asyncio.subprocess.Process | None = None
        self.reader: asyncio.StreamReader | None = None
        self.worker_log = os.path.join(log_dir, f"_worker-{safe_name(family)}.log")
        self.killed = False
        self.last_line = b""  # the line of the event next_event returned last

    @property
    def alive(self) -> bool:
        # a killed worker is gone even before asyncio has reaped it (returncode still None):
        # without this, the cell after a cancelled one was sent to the dying worker and its
        # death reported as that cell's crash
        return self.proc is not None and self.proc.returncode is None and not self.killed

    async def start(self) -> None:
        """Spawn the worker and wait for its ``ready`` event."""
        rfd, wfd = os.pipe()
        env = dict(os.environ)
        opts = self.config.options()
        python = self.config.python
        if self.env is not None:  # another interpreter, running this laya_tui
            from laya_tui.core.envs import link_package, worker_environ

            opts["env"] = self.env.name  # artifacts go under <out>/@env (core.files)
            python = self.env.python
            env = worker_environ(env, python,
                                 link_package(os.path.join(self.log_dir, "_pythonpath")))
        elif not _installed():  # run from a source tree: let the worker find laya_tui
            env["PYTHONPATH"] = os.pathsep.join(
                [p for p in [_package_root(), env.get("PYTHONPATH")] if p])
        env["LAYA_TUI_OPTIONS"] = json.dumps(opts)
        if not env.get(THREADS_VAR):  # the user's own setting wins
            env[THREADS_VAR] = str(worker_threads(self.config.jobs))
        logf = open(self.worker_log, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = await asyncio.create_subprocess_exec(
                python, "-m", "laya_tui.worker", "--signal-fd", str(wfd),
                "--workspace", self.config.workspace,
                stdin=asyncio.subprocess.PIPE, stdout=logf, stderr=logf,
                pass_fds=(wfd,), start_new_session=True, env=env,
                cwd=self.config.workspace,
            )
        finally:
            os.close(wfd)
            logf.close()
        loop = asyncio.get_running_loop()
        reader = self.reader = asyncio.StreamReader(limit=MAX_LINE)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(rfd, "rb", buffering=0))
        event = await self.next_event(timeout=60.0)
        if event.get("type") != Reply.READY:
            raise WorkerDied(f"worker did not start: {event}")

    async def send(self, cmd: Command) -> None:
        """Write one command line to the worker's stdin."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise WorkerDied("worker stdin closed") from exc

    async def next_event(self, timeout: float | None) -> WorkerEvent:
        """The next event; raises WorkerDied on EOF/garbage, TimeoutError past ``timeout``."""
        assert self.reader is not None
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the line and
            # drops a cancel that lands as the line arrives (a Ctrl-C while the worker
            # reports "started" left laya-tui waiting for the probe's whole timeout)
            async with asyncio.timeout(timeout):
                line = await self.reader.readline()
        except ValueError as exc:  # line over the limit
            raise WorkerDied(f"malformed line on the signal pipe: {exc}") from exc
        if not line:
            raise WorkerDied(await self._exit_reason())
        self.last_line = line
        try:
            event = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise WorkerDied("malformed line on the signal pipe: "
                             + line[:200].decode("utf-8", "replace").strip()) from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise WorkerDied("malformed event on the signal pipe: " + line[:200].decode(
                "utf-8", "replace").strip())
        # an object with a "type": an event; its fields are checked where they are read
        return cast(WorkerEvent, event)

    async def _exit_reason(self) -> str:
        assert self.proc is not None
        try:
            code = await asyncio.wait_for(self.proc.wait(), 5.0)
        except TimeoutError:
            self.kill()
            return "worker closed its signal pipe"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"worker killed by {name}"
        return f"worker exited with code {code}"

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (compiler children included)."""
        if self.proc is None:
            return
        self.killed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def close(self) -> None:
        """Ask the worker to exit; kill its group if it does not within a second."""
        if self.proc is None:
            return
        if self.proc.returncode is None:
            try:
                await self.send({"op": Op.EXIT})
                self.proc.stdin.close()  # type: ignore[union-attr]
                await asyncio.wait_for(self.proc.wait(), 1.0)
            except (WorkerDied, TimeoutError, OSError):
                pass
        self.kill()
        if self.proc.returncode is None:
            try:
                await asyncio.wait_for(self.proc.wait(), 2.0)
            except TimeoutError:
                pass


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:150]


def log_tail(path: str, chars: int = LOG_TAIL_CHARS) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - chars * 4))
            data = fh.read()
    except OSError:
        return ""
    return trim_faulthandler(data.decode("utf-8", "replace"))[-chars:]


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _installed() -> bool:
    """True when laya-tui is an installed distribution (editable or not).

    Then the worker imports laya_tui like the CLI did, and the repo root stays off its
    PYTHONPATH: the repo's own ``kernels``/``probes`` folders must not shadow a user
    workspace's.
    """
    from importlib import metadata

    try:
        metadata.distribution("laya-tui")
    except metadata.PackageNotFoundError:
        return False
    return True
