"""What the runner and the worker agree on, named once: per-family timeouts, and the
commands (:class:`Op`, typed :data:`Command`) and events (:class:`Reply`, typed
:data:`WorkerEvent`) of the JSON-lines protocol (docs/architecture.md, 'Worker protocol').

Each command and event is a :class:`~typing.TypedDict` tagged by its ``op`` or ``type``
(a ``Literal``), so a branch on ``event["type"] == Reply.FINISHED`` narrows it to
:class:`FinishedEvent`. The objects they carry are the report's
(:mod:`laya_tui.core.report_types`).
"""

# No ``from __future__ import annotations`` here: Python 3.11's TypedDict reads
# NotRequired only from evaluated annotations.
from typing import Final, Literal, NotRequired, TypedDict

from laya_tui.core.report_types import CellSpec, ErrorDict, FileErrorDict, SignalDict

#: Default per-probe timeout in seconds, per family; ``--timeout`` overrides it.
DEFAULT_TIMEOUTS: dict[str, float] = {
    "env": 60.0,
    "explain": 300.0,
    "tilelang": 180.0,
    "aoti": 600.0,
    "mlx": 300.0,
}
FALLBACK_TIMEOUT = 300.0


class Op:
    """Commands the runner sends on a worker's stdin, one JSON object a line: ``{"op": ...}``.

    Fields per op are in docs/architecture.md, 'Worker protocol'. Cancelling a run is no
    command: the runner kills the worker's process group.
    """

    DISCOVER: Final = "discover"  #: ``paths``; reply: one ``discovered``
    RUN: Final = "run"  #: ``id, file, func, param, log`` (+ ``cell`` under --env); reply:
    #: ``started``, signals, ``finished``
    INVALIDATE: Final = "invalidate"  #: ``files``; reply: one ``invalidated``
    EXIT: Final = "exit"  #: no reply; the worker returns


class Reply:
    """Events a worker writes on its signal fd, one JSON object a line: ``{"type": ...}``."""

    READY: Final = "ready"  #: the worker is up (``pid``)
    DISCOVERED: Final = "discovered"  #: ``probes, errors``
    STARTED: Final = "started"  #: ``id, pid``: a run began
    SIGNAL: Final = "signal"  #: ``probe, signal``: one signal (built by ``api.Context.signal``)
    SIGNALS: Final = "signals"  #: ``probe, signals``: a batch, the usual form on the pipe
    STEP: Final = "step"  #: ``probe, step``: the probe began a step (``ctx.step``; timeout reasons)
    FINISHED: Final = "finished"  #: ``id, status, reason, seconds, deps, error``
    INVALIDATED: Final = "invalidated"  #: ``modules``: what an ``invalidate`` dropped


# -- commands (runner -> worker stdin) ----------------------------------------------------
class DiscoverCommand(TypedDict):
    """Import the probe files under ``paths``; reply :class:`DiscoveredEvent`."""

    op: Literal["discover"]
    paths: list[str]


class RunCommand(TypedDict):
    """Run one cell (a :class:`~laya_tui.core.report_types.CellSpec`'s ``id, file, func,
    param``) with its output in ``log``; ``cell`` is the id discovery gave it (--env)."""

    op: Literal["run"]
    id: str
    file: str
    func: str
    param: str | None
    log: str
    cell: NotRequired[str]


class InvalidateCommand(TypedDict):
    """Drop the modules that depend on ``files``; reply :class:`InvalidatedEvent`."""

    op: Literal["invalidate"]
    files: list[str]


class ExitCommand(TypedDict):
    """Return (no reply)."""

    op: Literal["exit"]


Command = DiscoverCommand | RunCommand | InvalidateCommand | ExitCommand


# -- events (worker signal fd -> runner) --------------------------------------------------
class ReadyEvent(TypedDict):
    type: Literal["ready"]
    pid: int


class DiscoveredEvent(TypedDict):
    type: Literal["discovered"]
    probes: list[CellSpec]
    errors: list[FileErrorDict]


class StartedEvent(TypedDict):
    type: Literal["started"]
    id: str
    pid: int


class SignalEvent(TypedDict):
    type: Literal["signal"]
    probe: str
    signal: SignalDict


class SignalsEvent(TypedDict):
    type: Literal["signals"]
    probe: str
    signals: list[SignalDict]


class StepEvent(TypedDict):
    type: Literal["step"]
    probe: str
    step: str


class FinishedEvent(TypedDict):
    """A run ended: its status (``ok``/``failed``/``skipped``/``error``), the reason, the
    worker's seconds, the absolute paths it imported, and the probe's exception."""

    type: Literal["finished"]
    id: str
    status: str
    reason: str | None
    seconds: float
    deps: list[str]
    error: ErrorDict | None


class InvalidatedEvent(TypedDict):
    type: Literal["invalidated"]
    modules: list[str]


WorkerEvent = (ReadyEvent | DiscoveredEvent | StartedEvent | SignalEvent | SignalsEvent
               | StepEvent | FinishedEvent | InvalidatedEvent)

#: Each event's fields, by its ``type``: what a test holds the worker's real output to.
EVENT_TYPES: dict[str, type] = {
    Reply.READY: ReadyEvent, Reply.DISCOVERED: DiscoveredEvent, Reply.STARTED: StartedEvent,
    Reply.SIGNAL: SignalEvent, Reply.SIGNALS: SignalsEvent, Reply.STEP: StepEvent,
    Reply.FINISHED: FinishedEvent, Reply.INVALIDATED: InvalidatedEvent}
