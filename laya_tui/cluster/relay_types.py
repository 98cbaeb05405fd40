"""What crosses between the driver and a node under ``--cluster`` (docs/cluster.md): a
node's facts, the worker spec a node starts its worker from, the relay's replies and
events. Ray carries them as plain dicts; these name their fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired, TypeAlias, TypedDict

if TYPE_CHECKING:  # a node's actor imports this module: nothing more than it needs
    from laya_tui.core.settings import ProbeOptions

#: Keywords for Ray itself (``ray.init``, ``.options``, a job's ``runtime_env``): a
#: library's payload.
RayOptions: TypeAlias = dict[str, Any]
#: A worker command or event (``core.protocol.Command``, ``WorkerEvent``) as the relay
#: passes it on: a copy with its paths mapped to the node's (a command) or back to the
#: driver's and a finished cell's ``log_tail`` added (an event), or the relay's own
#: ``_died`` event (``reason``, ``log_tail``, ``worker_log``).
RelayMessage: TypeAlias = dict[str, Any]


class NodeFacts(TypedDict):
    """What the driver learns about a node from one small task on it."""

    versions: dict[str, str | None]
    host: str
    cores: int
    python: str
    platform: str


class EnvSpec(TypedDict):
    """``--env``: the environment a node's worker runs (the same path on every node)."""

    name: str
    python: str


class WorkerSpec(TypedDict):
    """What a node needs to start a worker like the driver's: the options probes see, the
    driver's workspace and package folders, the ``--env`` interpreter, and whether the
    workspace travelled (``ship``, added when the actor is made)."""

    options: ProbeOptions
    workspace: str
    dirs: dict[str, str]
    env: NotRequired[EnvSpec]
    ship: NotRequired[bool]


class StartReply(TypedDict, total=False):
    """The relay's answer to ``start``: the worker's ``pid`` and the node's ``root``, or
    ``error`` and the worker's log."""

    pid: int
    root: str
    error: str
    worker_log: str


class ReadBatch(TypedDict):
    """The events one ``read`` returns (at most ``node_actor.READ_BATCH``)."""

    events: list[RelayMessage]
