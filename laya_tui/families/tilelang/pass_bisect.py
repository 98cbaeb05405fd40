"""The TileLang pass option that changes a kernel's numbers (worker side; TileLang imported
inside the functions).

When a kernel lowers, builds and runs but fails its file's own check, the cell's verdict is
out; then, within a budget of its own (:data:`BUILDS`, ``LAYA_TUI_TILELANG_BISECT_S``
seconds; ``--no-precision-plan``, the switch of the numerics searches, or ``0`` turns it
off), the kernel is built again by TileLang itself
(``tilelang.compile``) with one pass option changed at a time and the file's check made
again:

1. each option the file itself passes (``pass_configs=``) removed: a user's own
   ``tl.enable_fast_math`` or an added lowering pass can be what moves the numbers;
2. each of TileLang's switches that turns an optimising pass off (:data:`SWITCHES`:
   loop unswitching, CSE, vectorisation, storage rewrite, warp specialisation, TMA, ...).

The first change under which the check passes names the pass (tile-ai/tilelang#1804 was a
LoopUnswitching miscompile, found by hand this way). When no single change restores it,
all switches at once are tried: a pass is involved (the set is given) or the difference is
the kernel's own maths. Nothing here changes the cell's verdict; the result is the cell
detail's ``pass_bisection`` and, when a change restores the check, the finding's fix.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from laya_tui.families.tilelang.records import BisectionDict, PassConfigs

#: TileLang's switches that turn an optimising pass off (key, the value that turns it off,
#: the pass it concerns)
SWITCHES: tuple[tuple[str, bool, str], ...] = (
    ("tl.disable_loop_unswitching", True, "LoopUnswitching"),
    ("tirx.disable_cse_tir", True, "common subexpression elimination"),
    ("tirx.disable_vectorize", True, "VectorizeLoop"),
    ("tl.disable_vectorize_256", True, "256-bit vectorisation"),
    ("tirx.disable_storage_rewrite", True, "StorageRewrite"),
    ("tl.disable_shared_memory_reuse", True, "shared memory reuse"),
    ("tl.disable_warp_specialized", True, "warp specialisation"),
    ("tl.disable_tma_lower", True, "TMA lowering"),
    ("tl.disable_wgmma", True, "WGMMA"),
    ("tl.enable_fast_math", False, "fast math"),
)
BUILDS = 14  # builds at most (each a full TileLang compile)
SECONDS = 45.0  # default budget (LAYA_TUI_TILELANG_BISECT_S): well inside a cell's timeout


@dataclass
class Trial:
    change: PassConfigs  # option -> value ("<removed>": the file's own option taken out)
    passed: bool | None  # None: the build or the run raised
    note: str = ""


@dataclass
class Bisection:
    """What the search found (``detail.pass_bisection``)."""

    restored_by: PassConfigs | None = None
    pass_name: str | None = None
    verdict: str = ""
    builds: int = 0
    seconds: float = 0.0
    budget: dict[str, float] = field(default_factory=dict)
    trials: list[Trial] = field(default_factory=list)

    def as_detail(self) -> BisectionDict:
        return {"restored_by": None if self.restored_by is None else dict(self.restored_by),
                "pass_name": self.pass_name, "verdict": self.verdict, "builds": self.builds,
                "seconds": self.seconds, "budget": dict(self.budget),
                "trials": [{"change": dict(t.change), "passed": t.passed, "note": t.note}
                           for t in self.trials]}

    def fix(self) -> str | None:
        """The finding's fix when a change restores the file's check."""
        if not self.restored_by:
            return None
        shown = ", ".join(f"{k!r}: {v!r}" for k, v in self.restored_by.items()
                          if v != REMOVED)
        removed = [k for k, v in self.restored_by.items() if v == REMOVED]
        if removed:
            return (f"the kernel passes its file's check without its own pass option "
                    f"{', '.join(map(repr, removed))}: that option changes the numbers")
        return (f"the kernel passes its file's check when built with pass_configs={{{shown}}}"
                f" ({self.pass_name}): a TileLang pass changes the numbers; build with that "
                f"option until it is fixed, and report it to TileLang")


REMOVED = "<removed>"


def budget_seconds() -> float:
    raw = os.environ.get("LAYA_TUI_TILELANG_BISECT_S", "")
    try:
        return float(raw) if raw.strip() else SECONDS
    except ValueError:
        return SECONDS


def bisect_passes(base: PassConfigs,
                  check: Callable[[PassConfigs], bool | None]) -> Bisection | None:
    """Search for the pass option whose change makes ``check`` pass. ``base`` is the
    kernel's own pass configuration; ``check(config)`` builds with ``config`` and makes the
    file's check (None when that raised). None when switched off."""
    seconds = budget_seconds()
    if seconds <= 0:
        return None
    t0 = time.perf_counter()
    out = Bisection(budget={"builds": BUILDS, "seconds": seconds})
    changes: list[tuple[PassConfigs, str]] = [
        ({k: REMOVED}, f"the file's own option {k}") for k in base if _optional(k)]
    changes += [({k: v}, name) for k, v, name in SWITCHES if base.get(k) != v]

    def attempt(change: PassConfigs) -> bool | None:
        config = {k: v for k, v in base.items() if change.get(k) != REMOVED}
        config.update({k: v for k, v in change.items() if v != REMOVED})
        out.builds += 1
        try:
            passed = check(config)
            note = ""
        except Exception as exc:  # noqa: BLE001 - an option this kernel cannot take
            passed, note = None, f"{type(exc).__name__}: {str(exc).strip()[:160]}"
        out.trials.append(Trial(change=change, passed=passed, note=note))
        return passed

    def spent() -> bool:
        return out.builds >= BUILDS or time.perf_counter() - t0 > seconds

    for change, name in changes:
        if spent():
            break
        if attempt(change):
            out.restored_by, out.pass_name = change, name
            out.verdict = f"restored by {_show(change)} ({name})"
            break
    else:
        everything: PassConfigs = {k: v for k, v, _ in SWITCHES if base.get(k) != v}
        together = attempt(everything) if everything and not spent() else False
        if together:
            out.verdict = ("no single option restores the check; all of TileLang's pass "
                           "switches together do: passes interact")
        elif together is None:
            out.verdict = (f"no single pass option restores the check, and with every "
                           f"switch at once the kernel does not build "
                           f"({out.trials[-1].note[:120]})")
        elif not spent():
            out.verdict = ("no pass option restores the check: the difference is not from "
                           "an optional pass (the kernel's maths, or its reference)")
    if not out.verdict:
        out.verdict = (f"budget spent ({out.builds} builds, {seconds:g} s) before an option "
                       f"restored the check")
    out.seconds = round(time.perf_counter() - t0, 3)
    return out


def _optional(key: str) -> bool:
    """A file option whose removal is a meaningful trial (not laya-tui's line directives)."""
    return key != "tl.emit_line_directives"


def _show(change: PassConfigs) -> str:
    return ", ".join(f"{k} removed" if v == REMOVED else f"{k}={v!r}"
                     for k, v in change.items())
