"""Whether the event loop's current pass has already repainted the screen.

asyncio runs every callback that is ready at the start of a pass before it polls again, so
a repaint (Textual's screen update, 30-45 ms at 160x45 while rows stream in) and a pump
slice or the widgets' update that happen to be ready together hold the
loop for all of them. Work that can wait asks :meth:`PaintedPass.painted` and, when the pass
has painted, goes to a later pass (docs/architecture.md, 'The dashboard')."""

from __future__ import annotations

import asyncio


class PaintedPass:
    """Set by the screen's repaint; cleared by a callback that runs in the next pass."""

    def __init__(self) -> None:
        self._painted = False

    def mark(self) -> None:
        """The screen repainted in this pass (called at the end of its update)."""
        if self._painted:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._painted = True
        loop.call_soon(self._clear)  # queued now: runs in the next pass, not this one

    def _clear(self) -> None:
        self._painted = False

    def painted(self) -> bool:
        """This loop pass has already repainted the screen."""
        return self._painted
