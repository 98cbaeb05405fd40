"""Precision bisection: the few modules that, kept in fp32, bring a bf16/fp16 output in limit.

When a low-precision model's output fails its limit against the fp32 reference, this
searches for a small set of modules to keep in fp32 and proves it with a re-run:

- A kept module runs as the model's own code with fp32 weights (the fp32 reference's,
  when given, else its own upcast) and fp32 inputs. Its output is cast back to the
  model's dtype where it leaves the kept set; a cast-back output handed straight to
  another kept module reaches it as the fp32 value it was cast from (no re-rounding
  between kept modules). A kept module
  covers its submodules; the root (the whole model) is never a plan.
- Search: the first module past its limit (the drift attribution's ranking, then each
  plan run's own per-module comparison against the fp32 reference) is added until the
  output holds its limit; then delta debugging removes what is not needed; then a fresh
  run with the plan applied gives the verified error.
- Bounded by forwards and seconds (both reported); a search that runs out says so.
  Before searching, the whole model in fp32 on the same device is run once: when that
  fails too, the drift is not a precision problem and no plan is searched; when only its
  output rounded to the model's dtype fails, the limit is tighter than that dtype holds
  and no module plan can meet it. These first two
  forwards (the model as it is, and in fp32) always run; every later one fits the bound.

Worker side (imports torch inside functions). :func:`plan_after_verdict` is the probe's
entry; :func:`search_plan` the search; :func:`snippet` the code a user pastes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, TypeVar

from laya_tui.families.explain.drift import DEFAULT_LIMITS, ROOT, _leaves, _masked
from laya_tui.families.explain.plan_applier import Applier, map_floats, model_dtype, normalize
from laya_tui.families.explain.plan_modules import class_sites, module_sites, ranking_from_drift
from laya_tui.families.explain.records import (
    Detail,
    DriftSummary,
    PlanTrial,
    ProbeOptions,
    Verdict,
    VerdictContext,
)

if TYPE_CHECKING:
    from torch import Tensor
    from torch.nn import Module

T = TypeVar("T")

__all__ = ["BUDGET", "FOUND", "LOW_PRECISION", "MAX_FORWARDS", "MAX_SECONDS", "MAX_TRIALS",
           "NO_PLAN", "NOT_NEEDED", "NOT_PRECISION", "SKIPPED", "Applier", "Check", "Plan",
           "class_sites", "enabled", "module_sites", "normalize", "plan_after_verdict",
           "ranking_from_drift", "search_plan", "snippet"]

#: Default budget of one search: model forwards (the reference run included) and seconds.
MAX_FORWARDS = 40
MAX_SECONDS = 30.0
#: Plan runs kept in the detail's ``trials`` list.
MAX_TRIALS = 24
LOW_PRECISION = ("bfloat16", "float16")

#: ``status`` values of a :class:`Plan`.
FOUND, NOT_NEEDED, NO_PLAN, NOT_PRECISION, BUDGET, SKIPPED = (
    "found", "not_needed", "no_plan", "not_precision", "budget", "skipped")

#: The cell's own verdict on an output: (error, passed).
Check = Callable[[object], "tuple[float, bool]"]


@dataclass
class Plan:
    """The outcome of one search (``detail()`` is the JSON payload on the cell)."""

    status: str
    limit: float
    fp32_modules: list[str] = field(default_factory=list)
    verified_error: float | None = None
    baseline_error: float | None = None
    fp32_error: float | None = None
    forwards: int = 0
    seconds: float = 0.0
    max_forwards: int = MAX_FORWARDS
    max_seconds: float = MAX_SECONDS
    dtype: str | None = None
    reason: str = ""
    trials: list[PlanTrial] = field(default_factory=list)

    def detail(self) -> Detail:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 4)
        for key in ("verified_error", "baseline_error", "fp32_error"):
            out[key] = _r(out[key])
        return out


def _r(x: float | None) -> float | None:
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return None
    return float(f"{x:.4g}")


def _fmt(x: float | None) -> str:
    return "non-finite" if x is None or x != x or x in (float("inf"), float("-inf")) \
        else f"{x:.3g}"


# -- the search ------------------------------------------------------------------------------

class _Budget:
    def __init__(self, max_forwards: int, max_seconds: float) -> None:
        self.max_forwards, self.max_seconds = max_forwards, max_seconds
        self.forwards = 0
        self.t0 = time.perf_counter()
        self.slowest = 0.0

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def allows(self) -> bool:
        """Room for one more forward (by count, and by the slowest one so far in time)."""
        return self.forwards < self.max_forwards and \
            self.elapsed() + self.slowest <= self.max_seconds

    def timed(self, fn: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.forwards += 1
            self.slowest = max(self.slowest, time.perf_counter() - t0)


class _Search:
    def __init__(self, model: Module, reference: Module | None,
                 forward: Callable[[Module], object],
                 forward_reference: Callable[[Module], object] | None, check: Check,
                 limit: float, budget: _Budget, mask: Tensor | None) -> None:
        self.model, self.reference = model, reference
        self.forward, self.forward_reference = forward, forward_reference
        self.check, self.limit, self.budget = check, limit, budget
        self.applier = Applier(model, reference)
        self.mask = None if mask is None else mask.detach().bool().cpu()
        self.names = {id(m): n for n, m in model.named_modules()}
        self.ref_out: dict[str, list[list[Tensor | None] | None]] | None = None
        self.trials: list[PlanTrial] = []
        self.last_output: object = None

    def reference_outputs(self) -> None:
        """Every module's fp32 reference output (CPU), for the per-module comparison."""
        import torch

        run_ref, reference = self.forward_reference, self.reference
        if reference is None or run_ref is None:
            return
        names = {id(m): n for n, m in reference.named_modules()}
        store: dict[str, list[list[Tensor | None] | None]] = {}

        def hook(m: Module, _a: tuple[object, ...], out: object) -> None:
            leaves = _leaves(out, torch)
            store.setdefault(names.get(id(m), "?") or ROOT, []).append(None if leaves is None
                else [_masked(t.detach().float().cpu(), self.mask) if t.is_floating_point()
                      else None for t in leaves])

        handles = [m.register_forward_hook(hook) for m in reference.modules()]
        try:
            with torch.no_grad():
                self.budget.timed(lambda: run_ref(reference))
        finally:
            for h in handles:
                h.remove()
        self.ref_out = store

    def run(self, plan: list[str], *, per_module: bool = False
            ) -> tuple[float, bool, list[tuple[str, float]]]:
        """The output's (error, passed) with ``plan`` applied, and, with ``per_module``, the
        modules' (name, error/limit) in return order."""
        import torch

        ratios: list[tuple[str, float]] = []
        seen: dict[str, int] = {}

        def hook(m: Module, _a: tuple[object, ...], out: object) -> None:
            name = self.names.get(id(m), kept.get(id(m)))
            if name is None or self.ref_out is None:
                return
            name = name or ROOT
            idx = seen.get(name, 0)
            seen[name] = idx + 1
            refs = self.ref_out.get(name)
            leaves = _leaves(out, torch)
            if refs is None or idx >= len(refs) or refs[idx] is None or leaves is None \
                    or len(leaves) != len(refs[idx] or []):
                return
            worst = 0.0
            for t, r in zip(leaves, refs[idx] or [], strict=True):
                if r is None or not t.is_floating_point():
                    continue
                a = _masked(t.detach(), self.mask).float().cpu()
                if a.shape != r.shape or a.numel() == 0:
                    continue
                d = (a - r).abs().max()
                dt = str(t.dtype).removeprefix("torch.")
                lim = DEFAULT_LIMITS.get(dt, DEFAULT_LIMITS["bfloat16"]) * max(
                    1.0, float(r.abs().max()))
                ratio = float(d) / lim if bool(torch.isfinite(d)) else float("inf")
                worst = max(worst, ratio)
            ratios.append((name, worst))

        with self.applier.applied(plan) as model:
            kept = {id(self.applier.copies[n]): n for n in normalize(plan)}
            handles = [m.register_forward_hook(hook) for m in model.modules()
                       if id(m) in self.names or id(m) in kept] if per_module else []
            try:
                with torch.no_grad():
                    out = self.budget.timed(lambda: self.forward(model))
            finally:
                for h in handles:
                    h.remove()
        self.last_output = out
        value, passed = self.check(out)
        if len(self.trials) < MAX_TRIALS:
            self.trials.append({"fp32_modules": list(plan), "error": _r(value),
                                "passed": passed})
        return value, passed, ratios


def _next_candidate(ratios: list[tuple[str, float]], plan: list[str],
                    ranking: list[str]) -> str | None:
    """The next module to keep in fp32, from a plan run's (module, error/limit) list in
    return order: the first module past its limit that is not kept (nor inside a kept
    one); but when a kept module comes first and is still past its limit, its inputs are
    wrong: its nearest called enclosing module (whose own ops feed it), else the nearest
    free module that returned before it. Else the
    drift's ranking, else the worst free module within its limit."""
    def free(n: str) -> bool:
        return n not in ("", ROOT) and not any(n == k or n.startswith(k + ".") for k in plan)

    for i, (name, ratio) in enumerate(ratios):
        if ratio <= 1.0:
            continue
        if free(name):
            return name
        if name in plan:  # kept and still wrong: what feeds it is
            called = {n for n, _ in ratios[i + 1:]}
            parts = name.split(".")
            for cut in range(len(parts) - 1, 0, -1):  # the enclosing module's own ops
                anc = ".".join(parts[:cut])
                if anc in called and free(anc):
                    return anc
            upstream = [n for n, r in ratios[:i] if free(n) and r > 0]
            if upstream:
                return upstream[-1]
    for name in ranking:
        if free(name):
            return name
    rest = [(r, n) for n, r in ratios if free(n) and r > 0]
    return max(rest)[1] if rest else None


def _ddmin(plan: list[str], passes: Callable[[list[str]], bool | None]) -> list[str]:
    """Delta debugging (ddmin): a 1-minimal passing subset of ``plan`` (which passes);
    ``passes`` returns None when the budget is spent (the smallest passing set so far is
    kept)."""
    n = 2
    while len(plan) >= 2:
        size = -(-len(plan) // n)
        chunks = [plan[i:i + size] for i in range(0, len(plan), size)]
        tries = (chunks if n > 2 else []) + [
            [x for j, c in enumerate(chunks) if j != i for x in c] for i in range(len(chunks))]
        for subset in tries:
            ok = passes(subset)
            if ok is None:
                return plan
            if ok:
                n = 2 if len(subset) <= size else max(n - 1, 2)
                plan = subset
                break
        else:
            if n >= len(plan):
                break
            n = min(len(plan), 2 * n)
    return plan


def search_plan(model: Module, forward: Callable[[Module], object], check: Check,
                limit: float, *, reference: Module | None = None,
                forward_reference: Callable[[Module], object] | None = None,
                ranking: list[str] | None = None, mask: Tensor | None = None,
                max_forwards: int = MAX_FORWARDS, max_seconds: float = MAX_SECONDS) -> Plan:
    """Search the fp32 modules that bring ``check(forward(model))`` within its limit.

    ``forward(m)`` runs the model (or the model with a plan applied) on its inputs;
    ``check(output)`` returns ``(error, passed)`` of the cell's own verdict;
    ``reference``/``forward_reference`` are the fp32 reference (same module names) and its
    run, giving the kept modules' fp32 weights and the per-module comparison that picks the
    next candidate; ``ranking``: module names from the drift attribution, tried first.
    """
    import torch

    budget = _Budget(max_forwards, max_seconds)
    dtype = str(model_dtype(model)).removeprefix("torch.")
    plan = Plan(status=SKIPPED, limit=limit, max_forwards=max_forwards,
                max_seconds=max_seconds, dtype=dtype)

    def done(status: str, reason: str) -> Plan:
        plan.status, plan.reason = status, reason
        plan.forwards, plan.seconds = budget.forwards, budget.elapsed()
        return plan

    if dtype not in LOW_PRECISION:
        return done(SKIPPED, f"the model runs in {dtype}, not bf16/fp16: nothing to keep "
                             "in fp32")
    s = _Search(model, reference, forward, forward_reference, check, limit, budget, mask)
    ranking = [n for n in (ranking or []) if n not in ("", ROOT)]
    try:
        base, ok, _ = s.run([])
        plan.baseline_error = base
        if ok:
            return done(NOT_NEEDED, f"the {dtype} output holds its limit ({_fmt(base)} <= "
                                    f"{limit:.3g}): no plan needed")
        whole, whole_ok, _ = s.run([""])
        plan.fp32_error = whole
        if not whole_ok:
            return done(NOT_PRECISION, f"the whole model in fp32 fails too ({_fmt(whole)} > "
                                       f"{limit:.3g}): not a precision problem")
        low = model_dtype(model)
        rounded, rounded_ok = check(map_floats(s.last_output, lambda t: t.to(low), torch))
        s.last_output = None
        if not rounded_ok:  # every plan's output is in the model's dtype
            return done(NO_PLAN, f"the fp32 output rounded to {dtype} fails already "
                                 f"({_fmt(rounded)} > {limit:.3g}): the limit is tighter "
                                 f"than a {dtype} output holds; no module plan can meet it")
        if not budget.allows():
            return done(BUDGET, _spent(budget, []))
        s.reference_outputs()
        kept: list[str] = []
        ratios: list[tuple[str, float]] = []
        tested: dict[frozenset[str], bool] = {frozenset(): False}
        if not ranking and budget.allows():  # no drift attribution: the model's own
            ratios = s.run([], per_module=True)[2]
        ok = False
        while not ok:
            if not budget.allows():
                return done(BUDGET, _spent(budget, kept))
            cand = _next_candidate(ratios, kept, ranking)
            if cand is None:
                return done(NO_PLAN, f"no set of modules short of the whole model brings "
                                     f"the output within {limit:.3g} (tried "
                                     f"{len(kept)} module(s))")
            kept = normalize(kept + [cand])
            _, ok, ratios = s.run(kept, per_module=True)
            tested[frozenset(kept)] = ok


        def passes(subset: list[str]) -> bool | None:
            key = frozenset(subset)
            if key not in tested:
                if not budget.allows():
                    return None
                tested[key] = s.run(subset)[1]
            return tested[key]

        kept = _ddmin(kept, passes)
        if not budget.allows():
            return done(BUDGET, _spent(budget, kept) + "; the plan was not verified")
        verified, ok, _ = s.run(kept)
        plan.fp32_modules, plan.verified_error = kept, verified
        if not ok:  # a model whose runs differ (nondeterminism): said, never hidden
            return done(NO_PLAN, f"the plan {kept} passed in the search but its re-run "
                                 f"gives {_fmt(verified)} > {limit:.3g}")
        return done(FOUND, f"keep {len(kept)} module(s) in fp32: {', '.join(kept)}; "
                           f"verified {_fmt(verified)} <= {limit:.3g} (was {_fmt(base)})")
    finally:
        plan.trials = s.trials
        plan.forwards, plan.seconds = budget.forwards, budget.elapsed()


def _spent(budget: _Budget, kept: list[str]) -> str:
    return (f"no plan within the bound ({budget.max_forwards} forwards, "
            f"{budget.max_seconds:g} s; spent {budget.forwards} forwards, "
            f"{budget.elapsed():.1f} s; {len(kept)} module(s) kept so far)")


# -- what the user pastes --------------------------------------------------------------------

SNIPPET = '''\
# laya-tui precision plan: {summary}
import torch

KEEP_FP32 = {names!r}


def cast_keeping_fp32(model, dtype=torch.{dtype}, keep=KEEP_FP32):
    """Cast an fp32 model to dtype except `keep` (fp32 weights and inputs); a kept output
    goes back to dtype where it leaves the kept set (fp32 into another kept module)."""
    import weakref
    states = {{n: {{k: v.clone() for k, v in model.get_submodule(n).state_dict().items()}}
              for n in keep}}
    model.to(dtype)
    handed = {{}}  # id(cast-back tensor) -> (weakref, its fp32 value, its version)

    def each(x, fn):
        if torch.is_tensor(x):
            return fn(x) if x.is_floating_point() else x
        if isinstance(x, (tuple, list)):
            return type(x)(each(v, fn) for v in x)
        if isinstance(x, dict):
            return {{k: each(v, fn) for k, v in x.items()}}
        return x

    def up(t):
        hit = handed.get(id(t))
        return hit[1] if hit and hit[0]() is t and hit[2] == t._version else t.float()

    def down(t):
        low = t.to(dtype)
        handed[id(low)] = (weakref.ref(low), t, low._version)
        return low

    for n in keep:
        m = model.get_submodule(n).float()
        m.load_state_dict(states[n])
        m.register_forward_pre_hook(lambda _m, a, k: (each(a, up), each(k, up)),
                                    with_kwargs=True)
        m.register_forward_hook(lambda _m, _a, out: each(out, down))
    model.register_forward_pre_hook(lambda *_: handed.clear())
    return model
'''


def snippet(plan: Plan) -> str:
    """Code that casts an fp32 model to the plan's dtype keeping its modules in fp32."""
    summary = (f"{len(plan.fp32_modules)} module(s) in fp32, verified max|diff| "
               f"{_fmt(plan.verified_error)} <= {plan.limit:.3g}")
    return SNIPPET.format(summary=summary, names=list(plan.fp32_modules),
                          dtype=plan.dtype or "bfloat16")


# -- the probe's entry -----------------------------------------------------------------------

def enabled(opts: ProbeOptions) -> bool:
    """On unless ``--no-precision-plan`` (option ``precision_plan`` False)."""
    return opts.get("precision_plan", True) is not False


def plan_after_verdict(ctx: VerdictContext, subject: str, verdict: Verdict, *, model: Module,
                       reference: Module, forward: Callable[[Module], object],
                       forward_reference: Callable[[Module], object], check: Check,
                       drift: DriftSummary | None = None, mask: Tensor | None = None,
                       ranking: list[str] | None = None) -> Plan | None:
    """After a failing tolerance verdict of a bf16/fp16 eager cell: search, verify, and emit
    the plan as a ``log`` signal (``detail.precision_plan``; ``fix`` holds the snippet).
    ``ranking``: the gap table's (modules past their limit by their own error), tried
    first; else the drift's. Never raises: a search that fails is a log line."""
    if verdict.get("passed") is not False or not enabled(ctx.options):
        return None
    limit = float(verdict.get("limit") or 0.0)
    ctx.step("precision plan")
    try:
        plan = search_plan(model, forward, check, limit, reference=reference,
                           forward_reference=forward_reference,
                           ranking=ranking or ranking_from_drift(drift), mask=mask,
                           max_forwards=int(ctx.options.get("precision_plan_forwards")
                                            or MAX_FORWARDS),
                           max_seconds=float(ctx.options.get("precision_plan_seconds")
                                             or MAX_SECONDS))
    except Exception as exc:  # noqa: BLE001 - the search must never hide the verdict
        ctx.log(f"precision plan failed: {type(exc).__name__}: {exc}"[:300],
                subject=f"{subject} precision plan")
        return None
    if plan.status == SKIPPED:
        return plan
    detail = plan.detail()
    fix = site = None
    if plan.status == FOUND:
        detail["snippet"] = fix = snippet(plan)
        sites = module_sites(model, plan.fp32_modules)
        if sites:
            from laya_tui.families.explain.sites import format_frame

            detail["sites"] = {n: format_frame(v) for n, v in sites.items()}
            site = next(iter(sites.values()))  # the first kept module's forward
        classes = class_sites(model, plan.fp32_modules)
        if classes:  # the class lines (report.sarif's fix location)
            detail["class_sites"] = classes
    ctx.log(plan.reason, subject=f"{subject} precision plan", fix=fix, site=site,
            value=plan.verified_error if plan.status == FOUND else None,
            limit=plan.limit, count=plan.forwards, seconds=round(plan.seconds, 4),
            detail={"precision_plan": detail})
    return plan
