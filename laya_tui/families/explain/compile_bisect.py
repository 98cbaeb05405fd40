"""Where a compiled output's difference first appears: torch's own compiler bisector, run
after a compile cell's tolerance verdict failed (worker side; torch imported inside).

``torch._inductor.compiler_bisector.CompilerBisector.do_bisect(fn)`` compiles again and
again while it narrows the difference down: first the backend (``eager``, ``aot_eager``,
``aot_eager_decomp_partition``, ``inductor``: the first whose output fails), then the
subsystem inside it (pre-grad, joint-graph and post-grad passes, decompositions, lowerings,
bisected to the one application that changes the result, or a config change such as
``fallback_random`` / ``emulate_precision_casts`` that restores it). ``fn`` here resets
Dynamo, compiles the cell's model afresh (the bisector picks the backend through
``torch.compile``) and makes the cell's own check. Bounded in runs and seconds (a run past
the bound stops the search, reported), never part of the verdict; the bisector's own output
is kept.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from laya_tui.families.explain.records import Detail, InductorConfig, Verdict, VerdictContext

RUNS = 24  # compiles at most
SECONDS = 90.0


class _Spent(Exception):
    """The search's bound was reached."""


@dataclass
class CompileBisection:
    status: str  # "found" | "no difference" | "budget" | "failed"
    backend: str | None = None
    subsystem: str | None = None
    bisect_number: int | None = None
    debug_info: str | None = None
    config: InductorConfig | None = None  # a config change that restores the output
    runs: int = 0
    seconds: float = 0.0
    output: str = ""  # the bisector's own words (its last lines)

    def detail(self) -> Detail:
        return asdict(self)

    def reason(self) -> str:
        if self.status == "found" and self.config:
            shown = ", ".join(f"{k} = {v!r}" for k, v in self.config.items())
            return (f"compiler bisector: the compiled output matches with {shown} "
                    f"({self.backend} backend; {self.runs} compiles)")
        if self.status == "found" and self.subsystem:
            n = f" application #{self.bisect_number}" if self.bisect_number else ""
            info = f": {self.debug_info}" if self.debug_info else ""
            return (f"compiler bisector: the difference first appears in {self.backend}'s "
                    f"{self.subsystem}{n}{info} ({self.runs} compiles)")
        if self.status == "found":
            return (f"compiler bisector: the difference first appears in the {self.backend} "
                    f"backend, in no subsystem it can switch off ({self.runs} compiles)")
        if self.status == "no difference":
            return (f"compiler bisector: every backend passed when compiled again "
                    f"({self.runs} compiles): the difference did not reproduce")
        if self.status == "budget":
            return (f"compiler bisector: stopped at its bound ({self.runs} compiles, "
                    f"{self.seconds:.0f} s) before it named a stage")
        return f"compiler bisector failed: {self.output[-200:]}"

    def fix(self) -> str | None:
        if self.status != "found":
            return None
        if self.config:
            lines = "\n".join(f"torch._inductor.config.{k} = {v!r}" for k, v in
                              self.config.items())
            return f"import torch._inductor.config\n{lines}"
        if self.backend and self.backend != "inductor":
            return f"torch.compile(model, backend={self.backend!r}) is where it starts"
        return None


def bisect_compile(run_compiled: Callable[[], object], good: Callable[[object], bool], *,
                   runs: int = RUNS, seconds: float = SECONDS) -> CompileBisection:
    """Run torch's compiler bisector: ``run_compiled()`` compiles (``torch.compile``) and
    runs the model, ``good(output)`` is the cell's check."""
    import torch
    from torch._inductor import compiler_bisector as cb

    t0, calls = time.perf_counter(), 0

    def fn() -> bool:
        nonlocal calls
        if calls >= runs or time.perf_counter() - t0 > seconds:
            raise _Spent
        calls += 1
        torch._dynamo.reset()
        with torch.no_grad():
            out = run_compiled()
        return bool(good(out))

    said = io.StringIO()
    out = CompileBisection(status="failed")
    try:
        with contextlib.redirect_stdout(said):
            result = cb.CompilerBisector.do_bisect(fn)
    except _Spent:
        out.status = "budget"
    except Exception as exc:  # noqa: BLE001 - the bisector's failure is reported, not raised
        said.write(f"\n{type(exc).__name__}: {exc}")
    else:
        if result is None:
            out.status = "no difference"
        else:
            out.status, out.backend = "found", result.backend
            out.subsystem, out.debug_info = result.subsystem, result.debug_info
            out.bisect_number = result.bisect_number or None
            out.config = _config_change(result.backend, result.subsystem)
    finally:
        torch._dynamo.reset()
    out.runs, out.seconds = calls, round(time.perf_counter() - t0, 3)
    out.output = "\n".join(said.getvalue().strip().splitlines()[-12:])
    return out


def _config_change(backend: str, subsystem: str | None) -> InductorConfig | None:
    """``{field: value}`` when the subsystem found is one of the bisector's config changes."""
    from torch._inductor import compiler_bisector as cb

    for sub in cb.BACKENDS.get(backend, []):
        if sub.name == subsystem and isinstance(sub, cb.ConfigChange):
            return {sub.config_field: sub.config_value}
    return None


def bisect_after_verdict(ctx: VerdictContext, subject: str, verdict: Verdict, *,
                         run_compiled: Callable[[], object],
                         good: Callable[[object], bool]) -> CompileBisection | None:
    """After a compile cell's failing tolerance verdict: the bisection as a ``log`` signal
    (``detail.compiler_bisect``; a restoring config in ``fix``). Off with
    ``--no-precision-plan`` (the numerics searches' switch)."""
    if verdict.get("passed", True) or ctx.options.get("precision_plan") is False:
        return None
    found = bisect_compile(run_compiled, good)
    ctx.log(found.reason(), subject=f"{subject} compiler bisector", fix=found.fix(),
            count=found.runs, seconds=found.seconds,
            detail={"compiler_bisect": found.detail()})
    return found
