"""Coalescing runner events: the runner's callback only appends; a clock drains in slices.

The runner calls :meth:`EventPump.push` once per event (it may be thousands a second on a
busy pipe). Pushing is an append. The pump's own clock (the app's timers, handed over by
:meth:`EventPump.start`) drains the buffer into the model, folding at most ``budget``
seconds of events per slice, so a burst of 100,000 signals never stalls the event loop;
the folded changes are shown at most every ``FLOOD_FRAME_S`` (docs/architecture.md, 'The
dashboard').
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

from laya_tui.core.events import Event
from laya_tui.tui.model import Changes, RunModel

#: Runner events reach the widgets at most this often (seconds): a stream of signals
#: costs one frame per interval, not one per drain.
FLOOD_FRAME_S = 0.1
#: While events wait after a drain slice, the next slice runs this soon (not a whole
#: flush interval later): the loop serves other callbacks and frames in between.
REDRAIN_S = 0.002
#: a slice asked for sooner than this after the last one ended runs as a redrain instead
#: (Textual's timer does not yield for a wait under half a millisecond: a late clock ran two
#: slices, and the loop stalled for both, in one pass)
BACK_TO_BACK_S = 0.001


class Interval(Protocol):
    """A repeating timer that can pause (Textual's ``Timer``)."""

    def pause(self) -> None: ...
    def resume(self) -> None: ...


class EventPump:
    """A buffer of runner events, a budgeted drain into the model, and the clock that
    drains it and hands the changes to ``post`` (the app posts them as
    ``RunControl.RunUpdated``)."""

    def __init__(self, model: RunModel, *, budget: float = 0.008,
                 post: Callable[[Changes], None] | None = None,
                 flush_interval: float = 1 / 30, freeze_every: int = 2_000,
                 busy: Callable[[], bool] = lambda: False,
                 worked: Callable[[], None] = lambda: None) -> None:
        self.model = model
        #: whether other heavy work (a repaint, the widgets' update) just ended: a slice
        #: then waits (the two together held the loop for both; ``tui.loop_pass``)
        self.busy = busy
        #: told when a slice ends (a repaint due then waits a moment)
        self.worked = worked
        self.budget = budget
        self.post = post or (lambda changes: None)
        self.flush_interval = flush_interval
        #: every this many new rows, ``gc.freeze()`` (0: never)
        self.freeze_every = freeze_every
        self._buf: deque[Event] = deque()
        self._interval: Interval | None = None
        self._set_timer: Callable[[float, Callable[[], None]], object] | None = None
        self._held: Changes | None = None  # folded into the model, not yet posted
        self._posted_at = 0.0
        self._redrain_set = False  # a short timer for the next slice is pending
        self._rows_since_freeze = 0
        self._ended = -1.0  # perf_counter when the last slice ended

    def start(self, set_interval: Callable[..., Interval],
              set_timer: Callable[[float, Callable[[], None]], object]) -> None:
        """Take the app's timers (on mount): the clock sleeps until an event arrives."""
        self._interval = set_interval(self.flush_interval, self.tick, pause=True)
        self._set_timer = set_timer

    def push(self, event: Event) -> None:
        """The runner's ``on_event``: append, and wake the clock when it was idle."""
        was_empty = not self._buf
        self._buf.append(event)
        if was_empty and self._interval is not None:
            self._interval.resume()

    @property
    def pending(self) -> int:
        """Events not yet folded into the model."""
        return len(self._buf)

    @property
    def holding(self) -> bool:
        """Changes folded into the model but not yet posted."""
        return self._held is not None

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

    def tick(self) -> None:
        """One slice of the clock: fold, then post (at most every ``FLOOD_FRAME_S``)."""
        if self._set_timer is not None and (
                time.perf_counter() - self._ended < BACK_TO_BACK_S or self.busy()):
            if not self._redrain_set:
                self._redrain_set = True
                self._set_timer(REDRAIN_S, self._redrain)
            return
        try:
            self._slice()
        finally:
            self._ended = time.perf_counter()
            self.worked()

    def _slice(self) -> None:
        changes = self.drain(self._held)
        self._held = None
        if self._buf and not self._redrain_set and self._set_timer is not None:
            # a flood: the next slice soon, so the model keeps up with the pipe (a slice
            # per flush interval would leave the loop idle most of the time)
            self._redrain_set = True
            self._set_timer(REDRAIN_S, self._redrain)
        now = time.monotonic()
        if changes and now - self._posted_at < FLOOD_FRAME_S:
            # a stream: keep folding, show it at most every FLOOD_FRAME_S (each post costs
            # a frame; fewer frames leave the loop to the stream); the clock stays on to
            # post what is held
            self._held = changes
            return
        if not self._buf and self._interval is not None:
            self._interval.pause()
        if changes:
            self._posted_at = now
            self._freeze_rows(len(changes.added))
            self.post(changes)

    def flush(self) -> Changes:
        """Everything buffered or held, folded at once (a run abandoned: nothing waits)."""
        changes = self._held if self._held is not None else Changes()
        self._held = None
        while self._buf:
            self.drain(changes)
        return changes

    def _redrain(self) -> None:
        self._redrain_set = False
        self.tick()

    def _freeze_rows(self, added: int) -> None:
        self._rows_since_freeze += added
        if self.freeze_every and self._rows_since_freeze >= self.freeze_every:
            # Rows live as long as the app: move what exists now out of the cyclic
            # collector's sight, so full collections stay short with 100,000 rows instead
            # of pausing the loop for a scan of every row (docs/architecture.md, 'The
            # dashboard').
            self._rows_since_freeze = 0
            gc.freeze()
