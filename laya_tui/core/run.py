"""One run, the same for every front end: discover (a broken probe file or an empty
``--only`` is a usage error), run the selected cells, end the workers on the way out."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable

from laya_tui.core.errors import UsageError
from laya_tui.core.events import Event
from laya_tui.core.report_types import ResultDict
from laya_tui.core.runner import Discovery, Runner
from laya_tui.core.settings import RunOptions


def _first_error(disc: Discovery) -> str:
    e = disc.errors[0]
    where = f"{e['file']}:{e['line']}" if e.get("line") else e["file"]
    more = f" (and {len(disc.errors) - 1} more)" if len(disc.errors) > 1 else ""
    return f"{where}: {e['error']}{more}"


async def discover_checked(runner: Runner) -> Discovery:
    """Discover probes; a broken probe file or an empty ``--only`` is a usage error."""
    disc = await runner.discover()
    if disc.errors:
        raise UsageError(_first_error(disc))
    if disc.unmatched_only:  # each pattern selects something (before --shard splits)
        from laya_tui.core.runner import only_error

        raise UsageError(only_error(disc.unmatched_only, disc.discovered))
    return disc


async def run_probes(config: RunOptions,
                     on_event: Callable[[Event], None] | None = None, *,
                     make_runner: Callable[..., Runner] = Runner
                     ) -> tuple[list[ResultDict], Discovery, float]:
    """Discover and run every selected probe; workers are ended on the way out.
    ``make_runner(config, on_event=...)`` builds the runner (the front end's choice:
    ``laya_tui.cluster.factory.make_runner`` under ``--cluster``)."""
    runner = make_runner(config, on_event=on_event)
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    stopped_by: list[int] = []
    installed: list[signal.Signals] = []

    def stop(signum: int) -> None:
        # the workers die now, so a read in flight ends at once even where asyncio drops
        # the cancel below; then the run is cancelled (Ctrl-C: exit 130, SIGTERM: 143)
        stopped_by.append(signum)
        runner.stop()
        if task is not None:
            task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop, signum)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    t0 = time.perf_counter()
    try:
        disc = await discover_checked(runner)
        if disc.shard and not disc.probes:
            print(f"laya-tui: shard {disc.shard['index']}/{disc.shard['count']} holds no cell "
                  f"({disc.shard['selected']} selected)", file=sys.stderr)
        results = await runner.run(disc.probes)
        if stopped_by:  # the cancel was lost, but the run ended: still a stopped run
            raise asyncio.CancelledError
    except asyncio.CancelledError:
        if stopped_by and stopped_by[0] == signal.SIGINT:
            raise KeyboardInterrupt from None
        raise
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
        runner.kill_all()
        await runner.close()
    return results, disc, time.perf_counter() - t0
