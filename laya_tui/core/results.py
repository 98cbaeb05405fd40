"""Signals and probe results: their identity, their "failing" rule and the result builder,
each written once (docs/architecture.md, 'Signals, results and the report').

Two forms of the same facts:

* On the hot path (worker JSON lines in, the runner, the cache, the report out) a signal
  and a result stay the plain dicts the report schema describes: building an object per
  signal there would slow the signal path. :func:`signal_key`, :func:`failing` and
  :func:`make_result` work on those dicts.
* Where a consumer keeps them (the dashboard), they become the frozen :class:`Signal` and
  :class:`ProbeResult`: immutable snapshots, never the runner's mutable dicts. Their
  ``key()`` and ``failing()`` call the same two functions.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeAlias, cast

from laya_tui.core.report_types import ErrorDict, NodeDict, ResultDict, SignalDict, SiteDict
from laya_tui.core.signals import FAILING_STATUSES  # noqa: F401 - re-exported

#: ``detail.outcome`` values that state a failure by themselves (the TileLang lowering cells).
FAILED_OUTCOMES: tuple[str, ...] = ("lower-failed", "build-failed", "run-failed")

SignalKey = tuple[str, str, str, str]
"""``(probe, kind, subject, reason)``: a signal's identity across runs."""


def _text(value: object) -> str:
    if type(value) is str:
        return value
    return "" if value is None else str(value)


#: A signal as its readers hold it: a report's signal object (typed, or read from JSON and
#: not validated: an open mapping) or the frozen :class:`Signal`; all read it with ``get``.
SignalLike: TypeAlias = "Mapping[str, Any] | Signal"
#: A probe result as the views read it: a report's probe object (a ResultDict, or read
#: from JSON and not validated, or a front end's copy with extra marks): read with ``get``.
ResultLike: TypeAlias = Mapping[str, Any]


def signal_key(sig: SignalLike, probe: str | None = None) -> SignalKey:
    """The stable identity of a signal across runs: (probe, kind, subject, reason).

    ``probe`` names the cell when the signal dict does not carry it (a report's probe entry
    holds its signals; their own ``probe`` field is the same id).
    """
    return (
        _text(sig.get("probe")) if probe is None else probe,
        _text(sig.get("kind")),
        _text(sig.get("subject")),
        _text(sig.get("reason")),
    )


def failing(sig: SignalLike) -> bool:
    """A signal that states a failure by itself: ``passed: false`` (a failed tolerance or
    lowering check), or a failed ``detail.outcome``."""
    if sig.get("passed") is False:
        return True
    detail = sig.get("detail")
    return isinstance(detail, dict) and detail.get("outcome") in FAILED_OUTCOMES


def make_result(probe: Mapping[str, object], status: str, reason: str | None, *,
                seconds: float, deps: list[str], signals: list[SignalDict],
                log_tail: str = "", started: float | None = None,
                ended: float | None = None, cached: bool = False,
                error: ErrorDict | None = None) -> ResultDict:
    """One probe result as the report holds it (``probe``: the cell's discovery entry).

    The key order is the report's. ``started``/``ended`` (wall clock, for ``--trace``) and
    ``error`` appear only when given.
    """
    result: dict[str, object] = {"id": probe["id"], "family": probe["family"]}  # report order
    if probe.get("env"):  # --env: the environment the cell ran in (its id ends in @env)
        result["env"] = probe["env"]
    result.update(cached=cached, params=probe.get("params", {}), file=probe.get("file"))
    if started is not None:
        result["started"] = started
    result.update(status=status, reason=reason, seconds=seconds, deps=deps, signals=signals,
                  log_tail=log_tail)
    if ended is not None:
        result["ended"] = ended
    if error:
        result["error"] = error
    return cast(ResultDict, result)  # every required key set above


@dataclass(frozen=True, slots=True, eq=True)
class Signal:
    """One signal, frozen (the fields of ``laya_tui.core.signals.FIELDS``; None = absent).

    The field types are the report schema's (``report/schema.json``, ``$defs/signal``).
    It also reads like the dict it came from (``get``, ``[]``, ``in``), so code written
    against the report's signal objects works on it unchanged; new code reads attributes.
    ``site`` and ``detail`` stay the dicts they were: shallowly frozen.
    """

    kind: str = ""
    probe: str = ""
    subject: str | None = None
    count: int | None = None
    bytes: int | None = None
    reason: str | None = None
    site: SiteDict | None = None
    fix: str | None = None
    value: object = None
    limit: float | None = None
    passed: bool | None = None
    seconds: float | None = None
    detail: Mapping[str, object] | None = None

    @classmethod
    def from_dict(cls, sig: Mapping[str, object]) -> Signal:
        """A frozen copy of a signal dict (unknown keys, from a newer writer, are dropped).

        Fills the slots directly: the dashboard makes one per streamed signal, and the
        generated frozen ``__init__`` (keyword parsing, one ``object.__setattr__`` per
        field) costs about twice as much.
        """
        new = _new(cls)
        get = sig.get
        _set_kind(new, get("kind", ""))
        _set_probe(new, get("probe", ""))
        for name, set_slot in _SET_OPTIONAL:
            set_slot(new, get(name))
        return new

    def to_dict(self) -> SignalDict:
        """The report's signal object (fields in schema order, absent ones left out)."""
        out: dict[str, object] = {"kind": self.kind, "probe": self.probe}
        for name in _SIGNAL_FIELDS[2:]:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return cast(SignalDict, out)  # the fields of a Signal are the schema's

    def key(self) -> SignalKey:
        """Identity across runs (:func:`signal_key`)."""
        return signal_key(self)

    def failing(self) -> bool:
        """Whether it states a failure (:func:`failing`)."""
        return failing(self)

    # -- read like a dict -----------------------------------------------------------------
    def get(self, name: str, default: object = None) -> Any:
        value = getattr(self, name, None) if name in _SIGNAL_FIELD_SET else None
        return default if value is None else value

    def __getitem__(self, name: str) -> Any:
        value = getattr(self, name, None) if name in _SIGNAL_FIELD_SET else None
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return name in _SIGNAL_FIELD_SET and getattr(self, str(name)) is not None

    def keys(self) -> Iterator[str]:
        return (n for n in _SIGNAL_FIELDS if getattr(self, n) is not None)


_SIGNAL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Signal))
_SIGNAL_FIELD_SET = frozenset(_SIGNAL_FIELDS)
_new = object.__new__
_set_kind = getattr(Signal, "kind").__set__  # the slot descriptors  # noqa: B009
_set_probe = getattr(Signal, "probe").__set__  # noqa: B009
_SET_OPTIONAL: tuple[tuple[str, Callable[[Signal, object], None]], ...] = tuple(
    (name, getattr(Signal, name).__set__) for name in _SIGNAL_FIELDS[2:])


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe result, frozen: what a consumer keeps (the report's probe entry)."""

    id: str
    family: str
    status: str
    reason: str | None = None
    seconds: float | None = None
    cached: bool = False
    params: Mapping[str, object] | None = None
    file: str | None = None
    deps: tuple[str, ...] = ()
    signals: tuple[Signal, ...] = ()
    log_tail: str = ""
    error: ErrorDict | None = None
    started: float | None = None
    ended: float | None = None
    env: str | None = None  # --env: the environment it ran in
    node: NodeDict | None = None  # --cluster: the node it ran on (report/5)

    @classmethod
    def from_dict(cls, result: ResultLike,
                  signals: tuple[Signal, ...] | None = None) -> ProbeResult:
        """A frozen snapshot of a result dict (the runner's or a report's); ``signals``:
        its signals already frozen (the dashboard froze them as they streamed in)."""
        if signals is None:
            signals = tuple(Signal.from_dict(s) for s in result.get("signals") or ())
        return cls(
            id=result["id"], family=result.get("family", ""),
            status=result.get("status", "failed"), reason=result.get("reason"),
            seconds=result.get("seconds"), cached=bool(result.get("cached")),
            params=result.get("params"), file=result.get("file"),
            deps=tuple(result.get("deps") or ()),
            signals=signals, log_tail=result.get("log_tail") or "", error=result.get("error"),
            started=result.get("started"), ended=result.get("ended"),
            env=result.get("env"), node=result.get("node"))

    def to_dict(self) -> ResultDict:
        """The report's probe entry (built by :func:`make_result`, so in the same order)."""
        out = make_result(
            {"id": self.id, "family": self.family, "env": self.env,
             "params": dict(self.params or {}), "file": self.file}, self.status, self.reason,
            seconds=self.seconds or 0.0,
            deps=list(self.deps), signals=[s.to_dict() for s in self.signals],
            log_tail=self.log_tail, started=self.started, ended=self.ended,
            cached=self.cached, error=self.error.copy() if self.error else None)
        if self.node is not None:
            out["node"] = self.node.copy()
        return out

    def key(self) -> str:
        """Identity across runs: the cell id."""
        return self.id

    def failing(self) -> bool:
        """Whether the probe did not pass (``FAILING_STATUSES``, or it raised)."""
        return self.status in FAILING_STATUSES or self.error is not None

    def failing_signals(self) -> Iterable[Signal]:
        """Its signals that state a failure."""
        return (s for s in self.signals if s.failing())

    def get(self, name: str, default: object = None) -> Any:
        """Read a field like the result dict (``result.get("deps")``); None = absent."""
        value = getattr(self, name, None) if name in _RESULT_FIELD_SET else None
        return default if value is None else value


_RESULT_FIELD_SET = frozenset(f.name for f in fields(ProbeResult))


# -- counting: how many occurrences a signal stands for (gates, baseline, summaries) ------

#: Signal kinds whose ``count`` is the number of occurrences.
COUNTED_KINDS: tuple[str, ...] = ("fallback", "recompile", "compile", "host_bounce", "cast")
#: Reason prefix of a first compile that report/1 (and older cached results) filed as
#: ``recompile``; :func:`upgrade_compile_signals` turns those into ``compile``.
V1_COLD_COMPILE = "cold compile (first compile"


def is_v1_first_compile(sig: SignalLike) -> bool:
    """A report/1 ``recompile`` signal that was really a frame's first compile."""
    if sig.get("kind") != "recompile":
        return False
    detail = sig.get("detail")
    if isinstance(detail, dict) and detail.get("cold_compile") is True:
        return True
    reason = sig.get("reason")
    return isinstance(reason, str) and reason.startswith(V1_COLD_COMPILE)


def upgrade_compile_signals(probes: Iterable[ResultDict]) -> int:
    """In place: report/1 first-compile ``recompile`` signals become ``compile``; returns
    how many. A first compile is never a recompile in gates, summary or baseline."""
    n = 0
    for p in probes:
        for sig in p.get("signals") or ():
            if isinstance(sig, dict) and is_v1_first_compile(sig):
                sig["kind"] = "compile"
                sig["reason"] = "first compile of this frame"
                n += 1
    return n


#: Signal kinds that state a check: only failing ones are occurrences.
CHECK_KINDS: tuple[str, ...] = ("tolerance", "lowering")


def occurrences(sig: SignalLike) -> int:
    """How many occurrences one signal stands for (see the module docstring)."""
    kind = sig.get("kind")
    if kind in COUNTED_KINDS:
        n = sig.get("count")
        return n if isinstance(n, int) and not isinstance(n, bool) else 1
    if kind in CHECK_KINDS:
        return 1 if sig.get("passed") is False else 0
    return 1
