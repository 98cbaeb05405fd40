"""Which heavy callback of the dashboard ran a moment ago, so the next one can wait.

asyncio runs every callback that is ready at the start of a pass before it polls again;
timers that fell due during a long callback join a later pass, and a sleeping task (a
heartbeat, a key's handler) needs two passes to wake. So a repaint (Textual's screen update,
30-45 ms at 160x45 for the first frames with rows), a pump slice, the widgets' update and
a step of the table's build (a sort, a filter) that follow one another hold the loop, and
a key, for all of them. Each notes when it ends; the repaint, the slice and the update,
when another's work ended less than :data:`ADJACENT_S` ago, run :data:`WAIT_S` later
instead, at most :data:`MAX_WAITS` times (a build step does not wait: a repaint follows each
of its steps; docs/architecture.md, 'The dashboard').
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: work that ended less than this long ago counts as just done: measured, a repaint began
#: 0.3-3.2 ms after the widgets' update while the heartbeat that fell due during the update
#: had not run yet
ADJACENT_S = 0.005
#: how long work that found other work just done waits: long enough for the loop to poll
#: and for what fell due meanwhile (timers, sleeping tasks) to run first
WAIT_S = 0.001
#: how often one piece of work lets another go first before it runs anyway
MAX_WAITS = 2


class LoopPass:
    """When the last heavy callback ended, and whose it was."""

    def __init__(self) -> None:
        self._worked_at = -1.0
        self._worked_by = ""

    def worked(self, by: str) -> None:
        """A heavy callback (``by``: "paint", "pump", "apply", "build") ends now."""
        self._worked_at = time.perf_counter()
        self._worked_by = by

    def just_worked(self, me: str) -> bool:
        """Another's heavy callback (not ``me``'s) ended less than :data:`ADJACENT_S` ago."""
        return self._worked_by != me and time.perf_counter() - self._worked_at < ADJACENT_S


def later(callback: Callable[..., object], *args: object) -> asyncio.TimerHandle:
    """Run ``callback(*args)`` :data:`WAIT_S` from now (a timer: after what is due)."""
    return asyncio.get_running_loop().call_later(WAIT_S, callback, *args)
