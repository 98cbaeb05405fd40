"""What the lowering pipeline did, through TileLang's own instrumentation (worker side).

``tilelang.lower`` runs its passes under a compile session of
:mod:`tilelang.instrumentation`; a cell lowers under a session of its own holding two tools:

* TileLang's :class:`tilelang.tools.pass_timing.PassTimingTool` (the ``TL_PASS_PROFILE``
  tool, its report kept instead of logged): inclusive and self seconds per pass;
* a recorder built on :class:`tilelang.instrumentation.StackedPassInstrument` (the event
  pairing ``tilelang.tools.lower_trace`` uses) that keeps *references* to the modules each
  pass received and returned (passes build new modules, so nothing is copied or printed
  while lowering succeeds). When a pass raises, the instrument drains the open frames: the
  innermost one is the failing pass and holds the IR it received.

Only a failing cell pays for TVMScript: the IR before the failing pass and the diff made by
the last pass that completed are written as artifacts. TileLang and TVM are imported inside
the functions.
"""

from __future__ import annotations

import difflib
import os
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from laya_tui.families.tilelang.records import CellArtifacts, PassTimings
from laya_tui.families.tilelang.tl_objects import IRModule, PassTimer

#: Completed passes remembered for the "last successful pass" diff.
KEEP = 64
#: Slowest passes kept in a cell's detail.
SLOWEST = 6


class PassInput(NamedTuple):
    """A pass and the module it received (or ``after <pass>`` and that pass's output)."""

    name: str
    mod: IRModule


class _PassEvent(Protocol):
    """A pass event of TileLang's instrumentation: the pass's name is read."""

    @property
    def name(self) -> object: ...


class _OpenPass(_PassEvent, Protocol):
    """A pass still open when lowering raised: its name and the module it received."""

    @property
    def state(self) -> IRModule: ...


@dataclass
class PassLog:
    """What one lowering's passes did: completed passes, the failing one, per-pass seconds."""

    #: (name, module before, module after)
    completed: deque[tuple[str, IRModule | None, IRModule | None]] = field(
        default_factory=lambda: deque(maxlen=KEEP))
    failing: PassInput | None = None
    timing: PassTimer | None = None  # tilelang's PassTimingTool
    count: int = 0

    def innermost(self) -> PassInput | None:
        """(failing pass, its input module), else the last completed pass's output."""
        if self.failing is not None:
            return self.failing
        if self.completed:
            name, _before, after = self.completed[-1]
            return None if after is None else PassInput(f"after {name}", after)
        return None

    def timings(self) -> PassTimings | None:
        """``{"passes", "total_s", "slowest": [[name, self seconds, runs], ...]}``; None
        when no pass ran under the timing tool."""
        records = list(self.timing.records) if self.timing is not None else []
        if not records:
            return None
        total = sum(r.duration_s for r in records if r.depth == 0)
        by_name: dict[str, list[float]] = {}
        for r in records:  # a pass that runs several times (tl.Simplify) is summed
            entry = by_name.setdefault(r.name, [0.0, 0])
            entry[0] += r.self_duration_s
            entry[1] += 1
        slow = sorted(by_name.items(), key=lambda kv: kv[1][0], reverse=True)[:SLOWEST]
        return {"passes": len(records), "total_s": round(total, 6),
                "slowest": [[name, round(sec, 6), int(n)] for name, (sec, n) in slow]}

    def timing_report(self) -> str:
        return self.timing.report() if self.timing is not None else ""


def lowering_session(name: str, log: PassLog
                     ) -> tuple[AbstractContextManager[object], Callable[[], object]]:
    """``(session context manager, instruments factory)`` recording into ``log``.

    Use as::

        session, instruments = lowering_session(cell, log)
        with session, PassContext(opt_level=3, config=..., instruments=instruments()), tgt:
            tilelang.lower(...)
    """
    from tilelang.instrumentation import (
        PassEventObserver,
        PassInstrumentationTool,
        StackedPassInstrument,
        compile_pass_instrumentation,
        create_pass_instruments,
    )
    from tilelang.tools.pass_timing import PassTimingTool

    class Observer(PassEventObserver):  # type: ignore[misc] # TileLang is untyped
        def pass_started(self, mod: IRModule, event: _PassEvent) -> IRModule:
            log.count += 1
            return mod

        def pass_finished(self, mod: IRModule, event: _PassEvent, state: IRModule) -> None:
            log.completed.append((str(event.name), state, mod))

        def passes_incomplete(self, passes: Sequence[_OpenPass],
                              error: BaseException | None) -> None:
            if passes and log.failing is None:
                inner = passes[-1]  # outermost first: the last is nearest to the failure
                log.failing = PassInput(str(inner.name), inner.state)

    class Recorder(PassInstrumentationTool):  # type: ignore[misc]
        pass_instrument_priority = 0

        def create_pass_instrument(self) -> object:
            return StackedPassInstrument(Observer(), capture_nested=True)

    class Timing(PassTimingTool):  # type: ignore[misc]
        def finish(self, error: BaseException | None) -> None:  # keep, do not log
            self._finished = True

    import logging

    # a failing pass leaves an open timing frame; TileLang warns about discarding it
    logging.getLogger("tilelang.pass_timing").setLevel(logging.ERROR)
    log.timing = timing = Timing()
    session: AbstractContextManager[object] = compile_pass_instrumentation(
        name=name, tools=[timing, Recorder()], include_default_tools=False,
        reuse_existing=False)
    return session, lambda: create_pass_instruments(context=f"laya-tui {name}")


def script(mod: IRModule) -> str:
    """TVMScript of a module (``str`` when scripting fails)."""
    try:
        return str(mod.script())
    except Exception:  # noqa: BLE001 - printing must never hide the diagnostic
        return str(mod)


def last_change(log: PassLog, limit: int = 30) -> tuple[str, str, int] | None:
    """(pass name, unified diff, no-op passes after it) of the last completed pass that
    changed the IR, looking back at most ``limit`` passes."""
    skipped = 0
    for name, before, after in list(reversed(log.completed))[:limit]:
        if before is None or after is None or before.same_as(after):
            skipped += 1
            continue
        a, b = script(before).rstrip("\n") + "\n", script(after).rstrip("\n") + "\n"
        if a == b:
            skipped += 1
            continue
        diff = "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                            f"before {name}", f"after {name}", n=3))
        return name, diff, skipped
    return None


def write_failure_artifacts(log: PassLog, folder: str, *, failing_pass: str | None,
                            message: str) -> CellArtifacts:
    """Write ``ir_before.py`` (TVMScript the failing pass received) and ``last_pass.diff``;
    the detail keys describing them."""
    os.makedirs(folder, exist_ok=True)
    out: CellArtifacts = {}
    inner = log.innermost()
    if inner is not None:
        name, mod = inner
        head = (f"# The IR {('pass ' + name) if not name.startswith('after ') else name} "
                f"received{' (it raised)' if log.failing else ''}.\n"
                f"# {message.splitlines()[0][:300] if message else ''}\n")
        path = os.path.join(folder, "ir_before.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(head + script(mod))
        out["ir_before"] = path
        out["ir_before_pass"] = failing_pass or name
    change = last_change(log)
    if change is not None:
        name, diff, skipped = change
        path = os.path.join(folder, "last_pass.diff")
        with open(path, "w", encoding="utf-8") as f:
            f.write(diff)
        out["last_pass_diff"] = path
        out["last_pass"] = name + (f" ({skipped} no-op pass{'es' if skipped != 1 else ''} "
                                   "after it)" if skipped else "")
    report = log.timing_report()
    if report:
        path = os.path.join(folder, "pass_timing.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(report + "\n")
        out["pass_timing_report"] = path
    return out
