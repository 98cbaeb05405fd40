"""Where the drift starts: every module's output against its fp32 CPU reference, in order.

Forward hooks on every submodule of the model and of its fp32 reference (a copy with the
same module names) record each call's output; the reference run's floating outputs are
kept as fp32 CPU copies, the model's are compared as they come, so memory stays one
reference activation set. Each module call is compared with the reference call of the same
module name and call index: max |diff| over its floating tensors (masked rows only, when
a ``(batch, tokens)`` mask is given and a tensor starts with those dims), against the limit
of the output's dtype scaled by max(1, max|reference|). The first module past its limit in
execution order (hooks fire as a module returns, so inner modules come before the module
that holds them) is where the drift starts. Modules whose outputs do not match between the
runs (not called in the reference, another structure, another shape) are named and
skipped. Any ``nn.Module``; tuple, list, dict and ``ModelOutput`` outputs. Worker side.

Forward pre-hooks also record the order of module calls in both runs: when the model calls
another sequence of modules than the reference, the runs took different branches
(:mod:`laya_tui.families.explain.control_flow`). That is the finding (``diverged``), and the
first module past its limit is looked for only among the calls that finished before the
paths parted (after it, the two runs computed different things).

``torch.cond`` branches run as a plain ``if`` during both runs
(:mod:`laya_tui.families.explain.cond_branches`): the branch that ran is compared module by
module, the modules only the other branch calls are in ``skipped`` as not run, and ``cond``
says which branch each run took.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from laya_tui.families.explain.cond_branches import CondRecord, eager_cond, not_run
from laya_tui.families.explain.control_flow import divergence
from laya_tui.families.explain.records import (
    CondCall,
    Detail,
    Divergence,
    DriftCall,
    DriftPoint,
    DriftResult,
    DriftSummary,
    ProbeOptions,
    SiteDict,
)
from laya_tui.families.explain.sites import user_site

if TYPE_CHECKING:
    from torch import Tensor
    from torch.nn import Module

    from laya_tui.core.report_types import SignalDict
    from laya_tui.families.probe_context import ProbeContext

#: max |diff| limits per output dtype (scaled by max(1, max|reference|)).
DEFAULT_LIMITS = {"float32": 1e-4, "float64": 1e-6, "bfloat16": 0.05, "float16": 0.05}
#: Points kept in the signal detail; the artifact holds every module call.
MAX_POINTS = 120
ROOT = "(model)"


def _leaves(out: object, torch: ModuleType) -> list[Tensor] | None:
    """The tensors of a module output in a stable order; None when it holds none."""
    found: list[Tensor] = []
    tensor: type[Tensor] = torch.Tensor

    def walk(x: object, depth: int) -> None:
        if depth > 6:
            return
        if isinstance(x, tensor):
            found.append(x)
        elif isinstance(x, dict):
            for k in x:
                walk(x[k], depth + 1)
        elif isinstance(x, (tuple, list)):
            for v in x:
                walk(v, depth + 1)

    walk(out, 0)
    return found or None


def _masked(t: Tensor, mask: Tensor | None) -> Tensor:
    if mask is not None and t.dim() >= mask.dim() and tuple(t.shape[:mask.dim()]) == \
            tuple(mask.shape):
        return t[mask.to(t.device)]
    return t


def module_drift(model: Module, reference: Module, run_model: Callable[[], object],
                 run_reference: Callable[[], object], *, mask: Tensor | None = None,
                 limits: dict[str, float] | None = None) -> DriftResult:
    """Run both with hooks; returns ``{"calls", "first_past_limit", "diverged", "skipped",
    ...}``.

    ``reference_output`` and ``model_output`` hold what the two calls returned. ``calls``
    lists every compared module call in the model's execution order as
    ``{"module", "type", "call", "dtype", "max_diff", "limit", "past", "order"}``
    (``order``: how many module calls had started when it returned). ``diverged`` is None,
    or where the two runs called different modules
    (:func:`laya_tui.families.explain.control_flow.divergence`).
    """
    import torch

    lim = dict(DEFAULT_LIMITS, **(limits or {}))
    cpu_mask = None if mask is None else mask.detach().bool().cpu()
    ref_out: dict[str, list[list[Tensor | None] | None]] = {}

    def name_of(named: dict[int, str], m: Module) -> str:
        return named.get(id(m), "?") or ROOT

    recs = {"ref": CondRecord(), "model": CondRecord()}

    def shadowing() -> bool:
        return recs["ref"].shadow or recs["model"].shadow

    def ref_hook(m: Module, _args: tuple[object, ...], out: object) -> None:
        if shadowing():
            return
        leaves = _leaves(out, torch)
        kept = None if leaves is None else [
            _masked(t.detach().float().cpu().clone(), cpu_mask) if t.is_floating_point()
            else None for t in leaves]
        ref_out.setdefault(name_of(ref_names, m), []).append(kept)

    calls: list[DriftCall] = []
    skipped: dict[str, str] = {}
    seen: dict[str, int] = {}
    ref_order: list[tuple[str, SiteDict | None]] = []
    model_order: list[tuple[str, SiteDict | None]] = []

    def pre_hook(order: list[tuple[str, SiteDict | None]],
                 names: dict[int, str]) -> Callable[[Module, tuple[object, ...]], None]:
        def hook(m: Module, _args: tuple[object, ...]) -> None:
            if shadowing():
                return
            order.append((name_of(names, m), user_site(sys._getframe(1))[0]))
        return hook

    def model_hook(m: Module, _args: tuple[object, ...], out: object) -> None:
        if shadowing():
            return
        name = name_of(model_names, m)
        idx = seen.get(name, 0)
        seen[name] = idx + 1
        leaves = _leaves(out, torch)
        if leaves is None or not any(t.is_floating_point() for t in leaves):
            return
        refs = ref_out.get(name)
        if refs is None or idx >= len(refs):
            skipped.setdefault(name, "not called (that often) in the reference run")
            return
        ref = refs[idx]
        if ref is None or len(ref) != len(leaves):
            skipped.setdefault(name, f"output structure differs: {len(leaves)} tensor(s) vs "
                                     f"{0 if ref is None else len(ref)} in the reference")
            return
        worst, limit, dtype = 0.0, None, None
        for t, r in zip(leaves, ref, strict=True):
            if not t.is_floating_point() or r is None:
                continue
            a = _masked(t.detach(), None if cpu_mask is None else cpu_mask).float().cpu()
            if tuple(a.shape) != tuple(r.shape):
                skipped.setdefault(name, f"shape {tuple(a.shape)} vs {tuple(r.shape)} in the "
                                         "reference")
                return
            if a.numel() == 0:
                continue
            diff = (a - r).abs()
            d = float(diff.max()) if bool(torch.isfinite(diff).all()) else float("inf")
            dt = str(t.dtype).removeprefix("torch.")
            scale = max(1.0, float(r.abs().max()))
            this_limit = lim.get(dt, lim["bfloat16"]) * scale
            if limit is None or d / this_limit > worst / limit:
                worst, limit, dtype = d, this_limit, dt
        if limit is None:
            return
        calls.append({"module": name, "type": type(m).__name__, "call": idx, "dtype": dtype,
                      "max_diff": worst, "limit": limit, "past": worst > limit,
                      "order": len(model_order)})

    ref_names = {id(m): n for n, m in reference.named_modules()}
    model_names = {id(m): n for n, m in model.named_modules()}
    t0 = time.perf_counter()
    handles = [m.register_forward_hook(ref_hook) for m in reference.modules()]
    handles += [m.register_forward_pre_hook(pre_hook(ref_order, ref_names))
                for m in reference.modules()]
    try:
        with torch.no_grad(), eager_cond(recs["ref"]):
            ref_output = run_reference()
    finally:
        for h in handles:
            h.remove()
    t_ref = time.perf_counter() - t0
    handles = [m.register_forward_hook(model_hook) for m in model.modules()]
    handles += [m.register_forward_pre_hook(pre_hook(model_order, model_names))
                for m in model.modules()]
    t0 = time.perf_counter()
    try:
        with torch.no_grad(), eager_cond(recs["model"]):
            model_output = run_model()
    finally:
        for h in handles:
            h.remove()
    t_model = time.perf_counter() - t0
    for name, why in not_run(recs["model"], model_names,
                             {n for n, _ in model_order}).items():
        skipped.setdefault(name, why)
    diverged = divergence(model_order, ref_order, dtype=_dtype_of(model))
    cut = None if diverged is None else diverged["index"]
    first = next((c for c in calls if c["past"] and (cut is None or c["order"] <= cut)), None)
    return {"calls": calls, "first_past_limit": first, "diverged": diverged,
            "skipped": [{"module": k, "reason": v} for k, v in skipped.items()],
            "cond": _cond_detail(recs["model"], recs["ref"]),
            "compared": len(calls), "seconds": {"reference": round(t_ref, 6),
                                                "model": round(t_model, 6)},
            "reference_output": ref_output, "model_output": model_output}


def _cond_detail(model: CondRecord, ref: CondRecord) -> list[CondCall]:
    """Per ``torch.cond`` call: its site and the branch each run took."""
    from laya_tui.families.explain.sites import format_frame

    out: list[CondCall] = []
    for i, entry in enumerate(model.calls):
        other = ref.calls[i]["ran"] if i < len(ref.calls) else None
        call: CondCall = {"site": format_frame(entry["site"]) if entry["site"] else None,
                          "ran": entry["ran"], "reference_ran": other}
        if entry["error"]:
            call["other_branch_error"] = entry["error"]
        out.append(call)
    return out


def _dtype_of(model: Module) -> str:
    """The model's floating dtype name (its first floating parameter), else "the model"."""
    for p in model.parameters():
        if p.is_floating_point():
            return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(
                str(p.dtype).removeprefix("torch."), str(p.dtype).removeprefix("torch."))
    return "the model"


def diverged_detail(diverged: Divergence | None) -> Detail | None:
    """The JSON-ready ``diverged`` entry (its site formatted)."""
    if diverged is None:
        return None
    out: Detail = {k: v for k, v in diverged.items() if k != "site"}
    site = diverged.get("site")
    if site:
        from laya_tui.families.explain.sites import format_frame

        out["branch"] = format_frame(site)
    return out


FIX_DIVERGED = ("a data-dependent branch decides differently in low precision: compute its "
                "condition in fp32 (or with a margin), or make the code branchless "
                "(torch.where) so both dtypes take one path")


def emit_divergence(ctx: ProbeContext, subject: str,
                    result: DriftResult) -> SignalDict | None:
    """A failing ``tolerance`` signal for a control-flow divergence (None when the runs
    called the same modules): value = module calls that differ between the runs, limit 0,
    site = the branch."""
    diverged = result.get("diverged")
    if not diverged:
        return None
    return ctx.tolerance(f"{subject} control flow", float(diverged["differing"]), 0.0,
                         passed=False, reason=diverged["text"], site=diverged.get("site"),
                         fix=FIX_DIVERGED, detail={"control_flow": diverged_detail(diverged)})


def summary_detail(result: DriftResult, artifact: str | None = None) -> DriftSummary:
    """The ``drift`` entry of a tolerance signal's detail (curve thinned to MAX_POINTS)."""
    calls = result["calls"]
    step = max(1, -(-len(calls) // MAX_POINTS))
    keep = [c for i, c in enumerate(calls) if i % step == 0 or c["past"] and c is
            result["first_past_limit"]]
    first = result["first_past_limit"]
    diverged = result["diverged"]
    cut = None if diverged is None else diverged["index"]
    before = [c for c in calls if cut is None or c["order"] <= cut]
    out: DriftSummary = {
        "first_past_limit": None if first is None else _point(first),
        "index": None if first is None else calls.index(first),
        "curve_first": None if first is None else next(
            i for i, c in enumerate(keep) if c is first),
        "worst": None if not before else _worst(before),
        "compared": len(calls),
        "diverged": diverged_detail(result.get("diverged")),
        "curve": [[c["module"], _r(c["max_diff"]), _r(c["limit"])] for c in keep],
        "skipped": result["skipped"][:20],
    }
    if result.get("cond"):
        out["cond"] = result["cond"][:20]
    if step > 1:
        out["curve_every"] = step
    if artifact:
        out["artifact"] = artifact
    return out


def _worst(before: list[DriftCall]) -> DriftPoint:
    """The call closest to its limit (its error/limit as ``ratio``)."""
    point = _point(max(before, key=lambda c: c["max_diff"] / c["limit"] if c["limit"] else 0))
    point["ratio"] = _r(max(c["max_diff"] / c["limit"] if c["limit"] else 0 for c in before))
    return point


def _point(c: DriftCall) -> DriftPoint:
    return {"module": c["module"], "type": c["type"], "call": c["call"], "dtype": c["dtype"],
            "max_diff": _r(c["max_diff"]), "limit": _r(c["limit"])}


def _r(x: float) -> float | None:
    if x != x or x in (float("inf"), float("-inf")):
        return None
    return float(f"{x:.4g}")


def write_artifact(result: DriftResult, folder: str, name: str) -> str:
    """The full per-module curve as JSON in ``folder``; returns its path."""
    os.makedirs(folder, exist_ok=True)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:120]
    path = os.path.join(folder, f"{safe}.drift.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"calls": [dict(c, max_diff=_r(c["max_diff"]), limit=_r(c["limit"]))
                             for c in result["calls"]],
                   "first_past_limit": None if result["first_past_limit"] is None
                   else _point(result["first_past_limit"]),
                   "diverged": diverged_detail(result.get("diverged")),
                   "skipped": result["skipped"]}, fh, indent=1)
    return path


def artifact_folder(opts: ProbeOptions) -> str:
    """``--out``/drift, or the per-user cache's drift folder."""
    from laya_tui.core.files import artifact_dir

    return artifact_dir(opts, "drift")
