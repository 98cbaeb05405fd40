"""Runner events: what the runner tells its listener (the headless writer or the app).

Plain dataclasses with past-tense names; the app wraps them in Textual messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    signal: dict[str, Any]


@dataclass(frozen=True)
class ProbeFinished:
    """A probe cell ended; ``result`` is its report entry (status, signals, log tail...)."""

    result: dict[str, Any]


Event = ProbeQueued | ProbeStarted | SignalEmitted | ProbeFinished
