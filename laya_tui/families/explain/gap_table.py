"""The gap table: each module's error against the fp32 run, and its own (local) error.

For every module call of a low-precision (or compiled-from-eager) run compared with the fp32
reference run of the same module names:

- ``error``: max |diff| of the module's output against the reference's output (what it
  returns, with everything it inherited from the modules before it);
- ``local``: max |diff| of the module re-run on the *reference's* inputs (cast to the
  dtype and device the model's call received) against the reference's output: its own
  error, separated from what it inherits;
- ``limit``: the drift's limit for the output dtype, scaled by max(1, max|reference|)
  (:data:`laya_tui.families.explain.drift.DEFAULT_LIMITS`); the whole model's row after a
  verdict carries the verdict's own limit, so the table and the tolerance agree on it;
- ``share``: local / error (capped at 1): how much of the module's output error is its
  own (near 1: it makes the error; near 0: it passes on what it was given).

Rows are ranked by local / limit, the whole model left out (its local error is the output
error): the module that makes the error comes first, not the ones downstream of it. A
module with submodules that is fed no floating input (a transformers model's inner
``model`` fed token ids) recomputes everything from scratch like the whole model: it is
ranked after the rest. Equal local errors keep execution order (an enclosing module before
the module inside it that makes all of its error).

Streamed with hooks under a memory budget. The reference run records each module call's
fp32 inputs (stored as the call starts, so the inputs of the calls still running, one per
nesting level, are counted and spilled like the rest) and output (CPU copies); the model
run then compares each call as it returns and drops that record at once, so a record lives
only until its call is compared. Records fit in ``budget_bytes`` of memory; beyond it they
are spilled with ``torch.save`` into a temporary folder under the run's artifact folder
(deleted afterwards), earliest kept in memory (they are compared first); a spilled record
read back for its comparison first spills later ones when it does not fit beside them.
``peak_bytes`` is the most the records held in memory at once, the one under comparison
included (within the budget unless one call's record alone is larger);
``activation_bytes`` what all of them come to (the memory without a budget).

Non-tensor arguments of a re-run (a KV-cache object, a config) are the model call's own,
copied as they were when the call started, so a re-run never changes the model's state.
A re-run that raises leaves ``local`` empty with the reason. Worker side (torch inside
functions).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from laya_tui.families.explain.drift import DEFAULT_LIMITS, ROOT, _leaves, _masked
from laya_tui.families.explain.gap_rows import (
    MAX_ROWS,
    WHOLE,
    GapTable,
    Row,
    ranking,
    rounded,
    summary,
    write_artifact,
)
from laya_tui.families.explain.gap_store import DEFAULT_BUDGET_MB, Store, budget_bytes
from laya_tui.families.explain.records import ProbeOptions, Verdict, VerdictContext

if TYPE_CHECKING:
    from torch import Tensor
    from torch.nn import Module

__all__ = ["AOTI", "AOTI_NOTE", "COMPILED", "COMPILED_NOTE", "DEFAULT_BUDGET_MB", "MAX_ROWS",
           "MAX_SECONDS", "ROOT", "WHOLE", "GapTable", "Row", "Store", "budget_bytes",
           "gap_table", "leaves_compiled", "ranking", "summary", "table_after_verdict",
           "wanted", "write_artifact"]

#: Seconds of local re-runs before the rest are left empty (said in ``note``).
MAX_SECONDS = 60.0
_PRIMITIVE = (int, float, bool, str, bytes, type(None))


# -- the two runs ----------------------------------------------------------------------------

class HookState(TypedDict):
    """The hooks' shared state: a module re-run in progress (hooks stand by), calls so far."""

    busy: bool
    order: int


class ReferenceCall(TypedDict):
    """One module call of the reference run, back from the store: its tensor inputs and
    its output's tensors (None when it kept none)."""

    inputs: list[Tensor | None]
    output: list[Tensor | None] | None


#: A reference record in the store: a call's tensor inputs, or its output's tensors (None
#: for a non-floating one), or None (no tensor output).
Record: TypeAlias = "list[Tensor | None] | None"
#: A model call's arguments as they were when it started: (args, kwargs).
Snapshot: TypeAlias = "tuple[tuple[object, ...], dict[str, object]]"


def _inputs(args: tuple[object, ...], kwargs: Mapping[str, object],
            torch: ModuleType) -> list[Tensor] | None:
    return _leaves((tuple(args), dict(kwargs)), torch)


def _nbytes(tensors: Sequence[Tensor | None]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def _namedtuple(x: tuple[object, ...]) -> Callable[..., tuple[object, ...]]:
    """A named tuple's class: built from its fields as positional arguments."""
    return type(x)


def _snapshot_call(args: tuple[object, ...], kwargs: Mapping[str, object],
                   tensor: type[Tensor]) -> Snapshot:
    """A model call's arguments kept by :func:`_snapshot` (each one level down)."""
    return (tuple(_snapshot(v, tensor, 1) for v in args),
            {k: _snapshot(v, tensor, 1) for k, v in kwargs.items()})


def _snapshot(x: object, tensor: type[Tensor], depth: int = 0) -> object:
    """``x`` with every tensor kept as it is and other objects copied (a cache that a call
    changes: the copy is as it was when the call started); an object that cannot be copied
    is kept."""
    if isinstance(x, tensor) or isinstance(x, _PRIMITIVE) or depth > 6:
        return x
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return _namedtuple(x)(*(_snapshot(v, tensor, depth + 1) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_snapshot(v, tensor, depth + 1) for v in x)
    if isinstance(x, dict) and type(x) is dict:
        return {k: _snapshot(v, tensor, depth + 1) for k, v in x.items()}
    try:
        return copy.deepcopy(x)
    except Exception:  # noqa: BLE001 - not copyable: the object itself
        return x


def _substitute_call(snap: Snapshot, refs: list[Tensor | None], tensor: type[Tensor]
                     ) -> Snapshot:
    """A snapshot's args and kwargs with :func:`_substitute` (each one level down)."""
    args, kwargs = snap
    at = [0]
    call_args = tuple(_substitute(v, refs, tensor, at, 1) for v in args)
    return call_args, {k: _substitute(kwargs[k], refs, tensor, at, 1) for k in kwargs}


def _substitute(x: object, refs: list[Tensor | None], tensor: type[Tensor], at: list[int],
                depth: int = 0) -> object:
    """``x`` (the model call's arguments) with its tensors, in :func:`_leaves` order,
    replaced by the reference's (cast to each tensor's dtype and device)."""
    if isinstance(x, tensor):
        r = refs[at[0]]
        at[0] += 1
        if r is None:
            return x
        if tuple(r.shape) != tuple(x.shape):
            raise ValueError(f"input shape {tuple(x.shape)} vs {tuple(r.shape)} in the "
                             "reference")
        return r.to(device=x.device, dtype=x.dtype)
    if depth > 6:
        return x
    if isinstance(x, dict):
        return {k: _substitute(x[k], refs, tensor, at, depth + 1) for k in x}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return _namedtuple(x)(*(_substitute(v, refs, tensor, at, depth + 1) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_substitute(v, refs, tensor, at, depth + 1) for v in x)
    return x


def _worst(out: object, ref: Record, mask: Tensor | None, lim: dict[str, float],
           torch: ModuleType) -> tuple[float, float, str] | str:
    """(max |diff|, limit, dtype) of the leaf furthest past its limit, or why the output
    cannot be compared."""
    leaves = _leaves(out, torch)
    if leaves is None or ref is None:
        return "no tensor output"
    if len(leaves) != len(ref):
        return f"output structure differs: {len(leaves)} tensor(s) vs {len(ref)}"
    best: tuple[float, float, str] | None = None
    for t, r in zip(leaves, ref, strict=True):
        if r is None or not t.is_floating_point():
            continue
        a = _masked(t.detach(), mask).float().cpu()
        if tuple(a.shape) != tuple(r.shape):
            return f"shape {tuple(a.shape)} vs {tuple(r.shape)} in the reference"
        if a.numel() == 0:
            continue
        diff = (a - r).abs()
        d = float(diff.max()) if bool(torch.isfinite(diff).all()) else float("inf")
        dt = str(t.dtype).removeprefix("torch.")
        limit = lim.get(dt, lim["bfloat16"]) * max(1.0, float(r.abs().max()))
        if best is None or d / limit > best[0] / best[1]:
            best = (d, limit, dt)
    return best if best is not None else "no floating output"


def gap_table(model: Module, reference: Module, run_model: Callable[[], object],
              run_reference: Callable[[], object], *, mask: Tensor | None = None,
              budget: int | None = None, folder: str | None = None,
              limits: dict[str, float] | None = None,
              max_seconds: float = MAX_SECONDS) -> GapTable:
    """Run the reference, then the model, with hooks; the table of every module call the
    two runs share (names, call index), local errors from re-runs on the reference's
    inputs. ``budget``: bytes of records kept in memory (None: no bound); ``folder``:
    where the spill folder is made."""
    import torch

    lim = dict(DEFAULT_LIMITS, **(limits or {}))
    cpu_mask = None if mask is None else mask.detach().bool().cpu()
    store: Store[tuple[str, int, str], Record] = Store(budget, folder)
    table = GapTable(budget_bytes=budget)
    t_start = time.perf_counter()
    ref_names = {id(m): n or ROOT for n, m in reference.named_modules()}
    model_names = {id(m): n or ROOT for n, m in model.named_modules()}
    state: HookState = {"busy": False, "order": 0}
    ref_open: dict[str, list[int]] = {}  # call index, per module call still running
    model_open: dict[str, list[tuple[int, int, Snapshot | None]]] = {}  # and order, args
    counts: dict[str, int] = {}

    def ref_pre(m: Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        name = ref_names.get(id(m), "?")
        idx = counts.get(name, 0)
        counts[name] = idx + 1
        leaves = _inputs(args, kwargs, torch) or []
        kept: list[Tensor | None] = [
            t.detach().float().cpu().clone() if t.is_floating_point()
            else t.detach().cpu().clone() for t in leaves]
        store.put((name, idx, "inputs"), kept, _nbytes(kept))  # counted while the call runs
        ref_open.setdefault(name, []).append(idx)

    def ref_post(m: Module, _args: tuple[object, ...], _kwargs: dict[str, object],
                 out: object) -> None:
        name = ref_names.get(id(m), "?")
        idx = ref_open[name].pop()
        leaves = _leaves(out, torch)
        outs: Record = None if leaves is None else [
            _masked(t.detach().float().cpu().clone(), cpu_mask) if t.is_floating_point()
            else None for t in leaves]
        store.put((name, idx, "output"), outs, _nbytes(outs or []))

    handles = [m.register_forward_pre_hook(ref_pre, with_kwargs=True)
               for m in reference.modules()]
    handles += [m.register_forward_hook(ref_post, with_kwargs=True)
                for m in reference.modules()]
    try:
        with torch.no_grad():
            run_reference()
    finally:
        for h in handles:
            h.remove()
    counts.clear()

    def model_pre(m: Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        if state["busy"]:
            return
        name = model_names.get(id(m), "?")
        idx = counts.get(name, 0)
        counts[name] = idx + 1
        state["order"] += 1
        snap = None if name == ROOT else _snapshot_call(args, kwargs, torch.Tensor)
        model_open.setdefault(name, []).append((idx, state["order"], snap))

    def model_post(m: Module, _args: tuple[object, ...], _kwargs: dict[str, object],
                   out: object) -> None:
        if state["busy"]:
            return
        name = model_names.get(id(m), "?")
        idx, order, snap = model_open[name].pop()
        inputs, output = store.take_all([(name, idx, "inputs"), (name, idx, "output")])
        if inputs is None:
            table.skipped.setdefault(name, "not called (that often) in the reference run")
            return
        rec: ReferenceCall = {"inputs": inputs, "output": output}
        got = _worst(out, rec["output"], cpu_mask, lim, torch)
        if isinstance(got, str):
            if got not in ("no tensor output", "no floating output"):
                table.skipped.setdefault(name, got)
            return
        error, limit, dtype = got
        row = Row(name, type(m).__name__, idx, dtype, error, None, limit, order)
        if name == ROOT:
            row.note = "the whole model: its local error is its output error"
        elif time.perf_counter() - t_start > max_seconds:
            row.note = "not re-run: the time bound was spent"
            table.note = f"local errors stop after {max_seconds:g} s"
        else:
            row.local, row.note = _local(m, snap, rec, cpu_mask, lim, state)
            if row.local is not None and next(m.children(), None) is not None and not any(
                    t is not None and t.is_floating_point() for t in rec["inputs"]):
                row.whole = True
                row.note = WHOLE
        table.rows.append(row)

    handles = [m.register_forward_pre_hook(model_pre, with_kwargs=True)
               for m in model.modules()]
    handles += [m.register_forward_hook(model_post, with_kwargs=True)
                for m in model.modules()]
    try:
        with torch.no_grad():
            run_model()
    finally:
        for h in handles:
            h.remove()
        table.peak_bytes, table.activation_bytes = store.peak, store.total
        table.spilled_bytes, table.spilled_files = store.spilled, store.files
        store.close()
    table.seconds = time.perf_counter() - t_start
    return table


def _local(m: Module, snap: Snapshot | None, rec: ReferenceCall, mask: Tensor | None,
           lim: dict[str, float], state: HookState) -> tuple[float | None, str]:
    """The module re-run on the reference's inputs: (max |diff| vs the reference output,
    note)."""
    import torch

    assert snap is not None  # only the whole model's call has none, and it is not re-run
    try:
        call_args, call_kwargs = _substitute_call(snap, rec["inputs"], torch.Tensor)
    except (ValueError, IndexError) as exc:
        return None, f"not re-run: {exc}"
    state["busy"] = True
    try:
        with torch.no_grad():
            out = m(*call_args, **call_kwargs)
    except Exception as exc:  # noqa: BLE001 - a module that cannot be re-run alone
        return None, f"re-run raised {type(exc).__name__}: {exc}"[:200]
    finally:
        state["busy"] = False
    got = _worst(out, rec["output"], mask, lim, torch)
    if isinstance(got, str):
        return None, f"re-run: {got}"
    return got[0], ""


# -- the probe's entry -----------------------------------------------------------------------

def wanted(opts: ProbeOptions, passed: bool | None) -> bool:
    """After a failing verdict unless ``--no-precision-plan``; for any cell with
    ``--numerics``."""
    if opts.get("numerics"):
        return True
    return passed is False and opts.get("precision_plan", True) is not False


COMPILED = "compile"
COMPILED_NOTE = ("compiled module by module: each leaf module's forward compiled alone "
                 "(torch.compile, Inductor), so fusions across module boundaries are not "
                 "those of the cell's whole-graph compile, which has no module boundaries "
                 "to compare at")
AOTI = "aoti"
AOTI_NOTE = ("the AOTI package has no module boundaries: its modules are compared compiled "
             "one by one by Inductor, the compiler AOTInductor packages (fusions across "
             "modules are not the package's)")
_NOTES = {COMPILED: COMPILED_NOTE, AOTI: AOTI_NOTE}


@contextmanager
def leaves_compiled(model: Module) -> Iterator[None]:
    """Every leaf module's ``forward`` compiled alone (Inductor) for the duration; hooks
    stay eager around it. Dynamo's recompile limits are raised meanwhile (one graph per
    module instance and shape)."""
    import torch

    leaves = [m for m in model.modules() if next(m.children(), None) is None]
    for m in leaves:
        m.forward = torch.compile(m.forward, dynamic=False)
    try:
        with torch._dynamo.config.patch(recompile_limit=4096,
                                        accumulated_recompile_limit=65536):
            yield
    finally:
        for m in leaves:
            if "forward" in m.__dict__:
                del m.forward


def _verdict_limit(table: GapTable, verdict: Verdict) -> None:
    """The whole model's row takes the tolerance verdict's limit (the module rows keep
    theirs, scaled by each output's magnitude): one output, one limit in every view."""
    limit = verdict.get("limit")
    if not isinstance(limit, (int, float)) or isinstance(limit, bool):
        return
    for r in table.rows:
        if r.module == ROOT:
            r.limit = float(limit)
            r.note = "; ".join(x for x in (r.note, "limit: the cell's tolerance") if x)


def table_after_verdict(ctx: VerdictContext, subject: str, verdict: Verdict, *, model: Module,
                        reference: Module, forward: Callable[[Module], object],
                        forward_reference: Callable[[Module], object],
                        mask: Tensor | None = None,
                        path: str = "eager") -> GapTable | None:
    """After a verdict: the gap table when :func:`wanted`, as a ``log`` signal
    (``detail.gap_table``) and a JSON artifact (``path`` :data:`COMPILED` or :data:`AOTI`:
    with :func:`leaves_compiled`). Never raises: a failure is a log line."""
    if not wanted(ctx.options, verdict.get("passed")):
        return None
    from laya_tui.core.files import artifact_dir

    ctx.step("gap table")
    folder = artifact_dir(ctx.options, "numerics")
    try:
        with leaves_compiled(model) if path in _NOTES else nullcontext():
            table = gap_table(model, reference, lambda: forward(model),
                              lambda: forward_reference(reference), mask=mask,
                              budget=budget_bytes(), folder=folder)
        if path in _NOTES:
            table.note = "; ".join(x for x in (_NOTES[path], table.note) if x)
        _verdict_limit(table, verdict)
    except Exception as exc:  # noqa: BLE001 - the table must never hide the verdict
        ctx.log(f"gap table failed: {type(exc).__name__}: {exc}"[:300],
                subject=f"{subject} gap table")
        return None
    artifact = write_artifact(table, folder, f"{ctx.id}-{subject}", path)
    top = next(iter(table.ranked()), None)
    ctx.log(summary(table), subject=f"{subject} gap table",
            value=None if top is None else rounded(top.local), limit=None if top is None
            else rounded(top.limit), seconds=round(table.seconds, 4),
            detail={"gap_table": table.detail(path=path, artifact=artifact)})
    return table
