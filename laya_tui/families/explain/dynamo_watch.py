"""What torch.compile did inside a region: compiles, recompiles (guard failures), graph breaks.

Sources, all public-ish torch 2.x surfaces read as deltas over the region:
``torch._dynamo.utils.get_compilation_metrics()`` (one record per frame compile, with the
first guard-failure reason on a recompile; a first compile becomes a ``compile`` signal),
``graph_break_reasons`` (every graph break with its user stack, see
:mod:`laya_tui.families.explain.graph_breaks`) and ``counters["graph_break"]``, and a
compile-start callback (``torch._dynamo.callback_handler``) that records where each compile
is: the frame Dynamo compiles (the user's function, a resume function mapped back to the
function and line it resumes, or for a wrapper inside torch/transformers the module's
unwrapped ``forward``), then the user frames that called it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Protocol, cast

from laya_tui.families.explain.aggregate import Aggregator
from laya_tui.families.explain.graph_breaks import collect
from laya_tui.families.explain.records import Detail, Recompile, SiteDict
from laya_tui.families.explain.sites import (
    USER,
    code_kind,
    format_frame,
    func_name,
    plain_name,
    short_path,
    user_site,
)

if TYPE_CHECKING:
    from torch._dynamo.callback import CallbackArgs
    from torch._dynamo.output_graph import GraphCompileReason
    from torch._dynamo.utils import CompilationMetrics
    from torch.nn import Module

FIX_RECOMPILE_SHAPE = ("a new input shape recompiles: pad/bucket inputs to fixed shapes, or "
                       "compile with dynamic=True / torch._dynamo.mark_dynamic")
FIX_RECOMPILE = "a guard failed: keep that value stable between calls, or make it dynamic"
FIX_COLD = "one-time cost of the first call per frame; warm the model before timing"
#: User frames kept in ``detail.stack`` beyond the site.
STACK_DEPTH = 15
#: The reason of a ``compile`` signal (a frame's first compile: not a recompile).
FIRST_COMPILE = "first compile of this frame"

#: What the caller is running right now (e.g. "input set 2 of 3"), attached to the compiles
#: that start meanwhile: :func:`set_call_label`.
_CALL_LABEL: list[str | None] = [None]


class FrameLike(Protocol):
    """A frame as Dynamo hands it to convert_frame: a Python frame, or its interpreter
    frame (``torch._C._dynamo.eval_frame._PyInterpreterFrame``); what is read of it."""

    @property
    def f_code(self) -> CodeType: ...

    @property
    def f_lineno(self) -> int | None: ...

    @property
    def f_locals(self) -> Mapping[str, object]: ...


def set_call_label(label: str | None) -> None:
    """Name what runs next (an input set); compiles started meanwhile carry it."""
    _CALL_LABEL[0] = label


class DynamoWatch:
    """Snapshot at :meth:`start`, deltas at :meth:`stop`, turned into signals by :meth:`emit`."""

    def __init__(self, *, with_stack: bool = True) -> None:
        self.with_stack = with_stack
        self.active = False
        self.sites: dict[str, tuple[SiteDict | None, list[str]]] = {}
        self.owners: dict[str, str] = {}
        #: compile id -> the compiled function's site (its name and line, for the subject)
        self.functions: dict[str, SiteDict] = {}
        self.labels: dict[str, str] = {}
        self.metrics: list[CompilationMetrics] = []
        self.breaks: dict[str, int] = {}
        self.break_reasons: list[GraphCompileReason] = []
        #: called after each compile ends inside the region
        self.on_compiled: Callable[[], None] | None = None
        #: called as each compile starts inside the region
        self.on_compile_start: Callable[[], None] | None = None

    def start(self) -> DynamoWatch:
        """Record the baseline; a no-op when torch._dynamo was never imported."""
        dyn = sys.modules.get("torch._dynamo")
        if dyn is None:
            return self
        from torch._dynamo import utils as du
        from torch._dynamo.callback import callback_handler

        self._handler = callback_handler
        self._seen = {id(m) for m in du.get_compilation_metrics()}
        self._breaks0 = dict(du.counters["graph_break"])
        self._reasons0 = len(du.graph_break_reasons)
        callback_handler.register_start_callback(self._on_compile_start)
        callback_handler.register_end_callback(self._on_compile_end)
        self.active = True
        return self

    def _on_compile_start(self, args: CallbackArgs) -> None:
        if self.on_compile_start is not None:
            self.on_compile_start()
        cid = str(getattr(args, "compile_id", ""))
        here = sys._getframe(1)
        target = _compiled_frame(here)
        compiled = _function_site(target) if target is not None else None
        site, stack, _ = user_site(here, depth=STACK_DEPTH if self.with_stack else 0)
        if compiled is not None:
            self.functions[cid] = compiled
            if stack and site is not None and site["file"] == compiled["file"] and \
                    site["func"] == compiled["func"]:
                stack = stack[1:]  # a resume function's caller: the same function again
            site, stack = compiled, [format_frame(compiled)] + stack
        self.sites[cid] = (site, stack)
        owner = _module_name(target)
        if owner:
            self.owners[cid] = owner
        if _CALL_LABEL[0]:
            self.labels[cid] = _CALL_LABEL[0]

    def _on_compile_end(self, args: CallbackArgs) -> None:
        if self.on_compiled is not None:
            self.on_compiled()

    def stop(self) -> None:
        """Collect what was compiled and what broke since :meth:`start`."""
        if not self.active:
            return
        self.active = False
        for remove, cb in ((self._handler.remove_start_callback, self._on_compile_start),
                           (self._handler.remove_end_callback, self._on_compile_end)):
            try:
                remove(cb)
            except ValueError:
                pass
        from torch._dynamo import utils as du

        self.metrics = [m for m in du.get_compilation_metrics()
                        if id(m) not in self._seen and not getattr(m, "is_runtime", False)]
        now = dict(du.counters["graph_break"])
        self.breaks = {k: v - self._breaks0.get(k, 0) for k, v in now.items()
                       if v - self._breaks0.get(k, 0) > 0}
        reasons = du.graph_break_reasons
        self.break_reasons = list(reasons[self._reasons0:]) if len(reasons) >= self._reasons0 \
            else list(reasons)

    def emit(self, agg: Aggregator, region: str, phase: str | None) -> None:
        """Add compile / recompile / fallback entries for what :meth:`stop` collected.

        A frame's first compile is a ``compile`` signal; ``recompile`` is only a real
        recompile (a guard failed), with the guard text and the call site.
        """
        base = {"region": region, "phase": phase}
        for m in self.metrics:
            cid = str(m.compile_id)
            frame = self.subject(m)
            site, stack = self.sites.get(cid, (None, []))
            seconds = m.entire_frame_compile_time_s
            detail: Detail = dict(base, compile_id=cid, frame=frame)
            if self.with_stack and stack:
                detail["stack"] = stack
            if m.fail_type:
                agg.add("fallback", frame, reason=f"compile failed, ran eager: {m.fail_type}: "
                        f"{str(m.fail_reason or '').splitlines()[0][:300]}", site=site,
                        seconds=seconds, fix="fix the failing construct or graph-break around it",
                        detail=detail)
                continue
            label = self.labels.get(cid)
            if label:
                detail["input_set"] = label
            guard = m.recompile_reason
            if not guard:
                e = agg.add("compile", frame, reason=FIRST_COMPILE, site=site, seconds=seconds,
                            fix=FIX_COLD, detail=detail)
                e.detail.setdefault("compile_ids", []).append(cid)
                continue
            first = guard.strip().splitlines()[0]
            fix = FIX_RECOMPILE_SHAPE if "size mismatch" in first or "stride mismatch" in first \
                else FIX_RECOMPILE
            e = agg.add("recompile", frame, reason=first, site=site, seconds=seconds, fix=fix,
                        detail=dict(detail, guard=guard[:2000]))
            e.detail.setdefault("compile_ids", []).append(cid)
        # Graph breaks: every recorded reason (with its user stack), deduplicated by
        # (reason, user frame); counter entries only where no reason matches.
        for gb in collect(self.break_reasons, self.breaks, with_stack=self.with_stack):
            agg.add("fallback", "graph break", reason=gb.headline, site=gb.site, count=gb.count,
                    fix=gb.fix(), detail=dict(base, **gb.detail()))

    def subject(self, m: CompilationMetrics) -> str:
        """``Owner: Class.function (file:line)`` of a compilation metric."""
        cid = str(m.compile_id)
        fn = self.functions.get(cid)
        if fn is not None:
            name, where = str(fn["func"]), f"{short_path(fn['file'])}:{fn['line']}"
        else:
            name = plain_name(str(m.co_name))
            where = f"{short_path(m.co_filename or '')}:{m.co_firstlineno}"
        owner = self.owners.get(cid)
        if owner and not name.startswith(owner + "."):
            name = f"{owner}: {name}"
        return f"{name} ({where})"

    def recompiles(self) -> list[Recompile]:
        """What :meth:`stop` collected, as plain facts: one dict per real recompile
        (``subject``, ``guard``, ``reason``, ``site``, ``stack``, ``seconds``, ``compile_id``)."""
        out: list[Recompile] = []
        for m in self.metrics:
            guard = m.recompile_reason
            if not guard or m.fail_type:
                continue
            cid = str(m.compile_id)
            site, stack = self.sites.get(cid, (None, []))
            out.append({"compile_id": cid, "subject": self.subject(m), "guard": guard,
                        "reason": guard.strip().splitlines()[0], "site": site,
                        "stack": stack, "seconds": m.entire_frame_compile_time_s})
        return out


def _compiled_frame(frame: FrameType | None) -> FrameLike | None:
    """The frame Dynamo is about to compile: the ``frame`` argument of convert_frame's
    callers, found walking out from the compile-start callback (None when not found)."""
    f, hops = frame, 0
    while f is not None and hops < 40:
        if "convert_frame" in f.f_code.co_filename:
            target = f.f_locals.get("frame")
            if target is not None and hasattr(target, "f_code"):
                return cast("FrameLike", target)  # convert_frame's own argument
        f = f.f_back
        hops += 1
    return None


def _module_of(target: FrameLike) -> Module | None:
    """The nn.Module whose method the frame runs: ``self``, or ``args[0]`` (transformers'
    forward wrappers); None otherwise."""
    try:
        loc = target.f_locals
    except Exception:  # noqa: BLE001 - an interpreter frame we cannot read
        return None
    obj = loc.get("self")
    args = loc.get("args")
    if obj is None and isinstance(args, tuple) and args:
        obj = args[0]
    if obj is None or "torch.nn" not in sys.modules:
        return None
    from torch.nn import Module

    return obj if isinstance(obj, Module) else None


def _module_name(target: FrameLike | None) -> str | None:
    """Class name of the nn.Module whose frame Dynamo is about to compile (best effort)."""
    obj = None if target is None else _module_of(target)
    return None if obj is None else type(obj).__name__


def _function_site(target: FrameLike) -> SiteDict | None:
    """Where the compiled function is in the user's code: the frame itself when it is user
    code (a resume function's line is where it resumes), else the unwrapped ``forward`` of
    its module (a decorator wrapper in torch or transformers compiles it); None otherwise."""
    code = target.f_code
    if code_kind(code) == USER:
        line = getattr(target, "f_lineno", None)
        return {"file": code.co_filename, "line": line or code.co_firstlineno,
                "func": func_name(code)}
    obj = _module_of(target)
    if obj is None:
        return None
    import inspect

    try:
        fn = inspect.unwrap(type(obj).forward)
    except (AttributeError, ValueError):
        return None
    inner = getattr(fn, "__code__", None)
    if inner is None or code_kind(inner) != USER:
        return None
    return {"file": inner.co_filename, "line": inner.co_firstlineno, "func": func_name(inner)}
