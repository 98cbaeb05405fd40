"""Runner events: what the runner tells its listener (the headless writer or the app).

Plain dataclasses with past-tense names; the app wraps them in Textual messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from laya_tui.core.report_types import ResultDict, SignalDict


@dataclass(frozen=True)
class ProbeQueued:
    """A probe cell was queued to run."""

    probe_id: str
    family: str


@dataclass(frozen=True)
class ProbeStarted:
    """A probe cell started (``started_at`` is wall-clock time)."""

    probe_id: str
    family: str
    started_at: float


@dataclass(frozen=True)
class SignalEmitted:
    """A probe emitted one signal."""

    probe_id: str
    signal: SignalDict


@dataclass(frozen=True)
class ProbeFinished:
    """A probe cell ended; ``result`` is its report entry (status, signals, log tail...)."""

    result: ResultDict


Event = ProbeQueued | ProbeStarted | SignalEmitted | ProbeFinished


Listener = Callable[[Event], None]


def _ignore(event: Event) -> None:
    """The listener of a runner nobody listens to."""


class Listeners:
    """A runner's event listeners. ``emit`` is the one listener itself, or a fan-out over
    several: the signal path calls it once per signal, so one listener costs no extra call.

    Listeners subscribe beside each other (the dashboard's pump or the headless writer,
    and the watcher); none replaces another.
    """

    def __init__(self, first: Listener | None = None) -> None:
        self._all: list[Listener] = [first] if first is not None else []
        self.emit: Listener = _ignore
        self._rewire()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; returns the call that removes it."""
        self._all.append(listener)
        self._rewire()

        def unsubscribe() -> None:
            if listener in self._all:
                self._all.remove(listener)
                self._rewire()

        return unsubscribe

    def _rewire(self) -> None:
        listeners = tuple(self._all)
        if not listeners:
            self.emit = _ignore
        elif len(listeners) == 1:
            self.emit = listeners[0]
        else:
            def fan_out(event: Event) -> None:
                for listener in listeners:
                    listener(event)

            self.emit = fan_out


class EventSource:
    """What the live :class:`~laya_tui.core.runner.Runner` and the recorded runner share:
    ``on_event`` calls every listener; more listeners subscribe beside the first."""

    _listeners: Listeners

    @property
    def on_event(self) -> Listener:
        """Calls every listener (the one given at construction and the subscribed ones)."""
        return self._listeners.emit

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add an event listener beside the others; returns the call that removes it."""
        return self._listeners.subscribe(listener)
