"""Coalescing runner events: the runner's callback only appends; a timer drains in slices.

The runner calls :meth:`EventPump.push` once per event (it may be thousands a second on a
busy pipe). Pushing is an append. The app drains the buffer on a short interval, folding
at most ``budget`` seconds of events into the model per tick, so a burst of 100,000
signals never stalls the event loop (docs/architecture.md, 'The dashboard').
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from laya_tui.core.events import Event
from laya_tui.tui.model import Changes, RunModel


class EventPump:
    """A buffer of runner events and a budgeted drain into the model."""

    def __init__(self, model: RunModel, *, budget: float = 0.008,
                 on_pending: Callable[[], None] | None = None) -> None:
        self.model = model
        self.budget = budget
        self.on_pending = on_pending
        self._buf: deque[Event] = deque()

    def push(self, event: Event) -> None:
        """The runner's ``on_event``: append, and wake the drain when it was idle."""
        was_empty = not self._buf
        self._buf.append(event)
        if was_empty and self.on_pending is not None:
            self.on_pending()

    @property
    def pending(self) -> int:
        """Events not yet folded into the model."""
        return len(self._buf)

    def drain(self, changes: Changes | None = None) -> Changes:
        """Fold buffered events into the model until empty or past the time budget
        (into ``changes`` when given: a record not yet shown keeps growing)."""
        changes = Changes() if changes is None else changes
        buf, apply = self._buf, self.model.apply
        deadline = time.perf_counter() + self.budget
        n = 0
        while buf:
            apply(buf.popleft(), changes)
            n += 1
            if n % 128 == 0 and time.perf_counter() > deadline:
                break
        return changes
