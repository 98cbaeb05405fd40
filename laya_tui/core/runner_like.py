"""What a front end needs from a runner: the live :class:`~laya_tui.core.runner.Runner` or
the :class:`~laya_tui.core.replay.RecordedRunner` of a saved report (docs/architecture.md,
'The dashboard'). Both have the same methods and send the same events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from laya_tui.core.events import Event
    from laya_tui.core.report_types import CellSpec, ResultDict
    from laya_tui.core.runner import Discovery
    from laya_tui.core.settings import RunOptions


class RunnerLike(Protocol):
    """A source of probe runs and their events."""

    @property
    def config(self) -> RunOptions | None:
        """The live run's configuration; None for a recording (nothing can re-run for
        real: watch mode needs a live runner)."""

    async def discover(self, *, warm: bool = False) -> Discovery: ...
    async def run(self, probes: list[CellSpec], *, use_cache: bool | None = None
                  ) -> list[ResultDict]: ...
    async def run_one(self, probe: CellSpec, *, use_cache: bool | None = None
                      ) -> ResultDict | None: ...
    async def close(self) -> None: ...
    def kill_all(self) -> None: ...
    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]: ...


#: ``factory(on_event)`` -> a runner sending its events to ``on_event``
RunnerFactory = Callable[[Callable[["Event"], None]], RunnerLike]
