"""What the runner and the worker agree on, named once: per-family timeouts, and the
commands (:class:`Op`) and events (:class:`Reply`) of the JSON-lines protocol
(docs/architecture.md, 'Worker protocol')."""

from __future__ import annotations

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

    DISCOVER = "discover"  #: ``paths``; reply: one ``discovered``
    RUN = "run"  #: ``id, file, func, param, log`` (+ ``cell`` under --env); reply:
    #: ``started``, signals, ``finished``
    INVALIDATE = "invalidate"  #: ``files``; reply: one ``invalidated``
    EXIT = "exit"  #: no reply; the worker returns


class Reply:
    """Events a worker writes on its signal fd, one JSON object a line: ``{"type": ...}``."""

    READY = "ready"  #: the worker is up (``pid``)
    DISCOVERED = "discovered"  #: ``probes, errors``
    STARTED = "started"  #: ``id, pid``: a run began
    SIGNAL = "signal"  #: ``probe, signal``: one signal (built by ``api.Context.signal``)
    SIGNALS = "signals"  #: ``probe, signals``: a batch, the usual form on the pipe
    STEP = "step"  #: ``probe, step``: the probe began a step (``ctx.step``; timeout reasons)
    FINISHED = "finished"  #: ``id, status, reason, seconds, deps, error``
    INVALIDATED = "invalidated"  #: ``modules``: what an ``invalidate`` dropped
