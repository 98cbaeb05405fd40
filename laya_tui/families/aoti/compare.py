"""The AOTI cell's comparisons: every head on every shape against the eager reference
(tolerance signals, with AOTI vs torch.compile in the detail), and eager / torch.compile /
AOTI latency side by side. Worker side: torch is imported inside the functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from laya_tui.families.aoti.failure import describe
from laya_tui.families.aoti.measure import head_deltas, median_latencies
from laya_tui.families.aoti.records import EagerReference, FlatOutputs, ShapeResult
from laya_tui.families.aoti.targets import ShapeCase

if TYPE_CHECKING:
    import torch

    from laya_tui.families.aoti.pipeline import Pipeline


def compare_heads(pipe: Pipeline, shapes: list[ShapeCase], per_shape: dict[str, ShapeResult],
                  refs: dict[str, EagerReference], same: dict[str, FlatOutputs],
                  fresh: dict[str, FlatOutputs] | None, warm: dict[str, FlatOutputs],
                  by_compile: dict[str, FlatOutputs]) -> None:
    """Tolerance signals per head and shape: AOTI (fresh process) vs the eager reference.

    The detail also carries AOTI vs torch.compile and torch.compile vs the reference.
    """
    from laya_tui.families.numeric import max_abs_diff

    for name, _, _ in shapes:
        if name not in refs:
            continue
        ref_outs, heads = refs[name]
        outs, source = (fresh or {}).get(name), "aoti fresh process"
        if outs is None:
            outs, source = warm.get(name), "aoti warm process"
        if outs is None:
            continue
        if len(outs) != len(ref_outs):
            pipe.fail(describe("compare", ValueError(
                f"package returned {len(outs)} outputs, eager {len(ref_outs)}"), shape=name))
            continue
        fresh_vs_warm = None
        if fresh and name in fresh and name in warm:
            fresh_vs_warm = max(max_abs_diff(a, b)[0] for a, b in zip(
                fresh[name], warm[name], strict=True))
        for i, head in enumerate(heads):
            d = head_deltas(outs[i], ref_outs[i])
            limit = pipe.target.limit * max(1.0, d["ref_absmax"])
            vs_same = (max_abs_diff(outs[i], same[name][i])[0]
                       if name in same else None)
            vs_compiled = compiled_vs_ref = None
            if name in by_compile and len(by_compile[name]) == len(outs):
                vs_compiled = max_abs_diff(outs[i], by_compile[name][i])[0]
                compiled_vs_ref = max_abs_diff(by_compile[name][i], ref_outs[i])[0]
            passed_logit = d["logit"] <= limit
            passed_prob = d["prob"] <= limit
            rows = len(d["agree"])
            detail = {"argmax_agree": d["agree"], "argmax_match": sum(d["agree"]),
                      "rows": rows, "compared": source,
                      "reference": "eager fp32" if pipe.target.dtype == "fp32"
                      or same else "eager", "fresh_vs_warm": fresh_vs_warm,
                      "vs_same_dtype_eager": vs_same, "vs_compiled": vs_compiled,
                      "compiled_vs_reference": compiled_vs_ref}
            why = pipe.specialised.get(name)
            if why:
                detail["specialised"] = why
            reason = "; ".join(why) if why else None
            pipe.ctx.tolerance(f"{head}/logits[{name}]", d["logit"], limit,
                               passed=passed_logit, detail=detail,
                               **({"reason": reason} if reason and not passed_logit else {}))
            pipe.ctx.tolerance(f"{head}/probs[{name}]", d["prob"], limit,
                               passed=passed_prob, detail=detail,
                               **({"reason": reason} if reason and not passed_prob else {}))
            per_shape[name]["heads"][head] = {
                "max_logit_delta": d["logit"], "max_prob_delta": d["prob"],
                "limit": limit, "prob_limit": limit, "argmax_agree": d["agree"],
                "passed": bool(passed_logit and passed_prob),
                "vs_same_dtype_eager": vs_same, "fresh_vs_warm": fresh_vs_warm,
                "vs_compiled": vs_compiled, "compiled_vs_reference": compiled_vs_ref}

def compare_latency(pipe: Pipeline, model: torch.nn.Module,
                    compiled: Callable[..., object] | None,
                    cmodel: Callable[..., object] | None, by_compile: dict[str, FlatOutputs],
                    shapes: list[ShapeCase], per_shape: dict[str, ShapeResult]) -> None:
    """Median latency of eager, torch.compile'd and AOTI on every shape, side by side."""
    eager_fn = model if pipe.results["steps"].get("eager", {}).get("ok") else None
    run_ok = not any(f.step == "run" and f.detail.get("process") == "warm"
                     for f in pipe.failures)
    aoti_fn = compiled if run_ok else None
    for name, inputs, _ in shapes:
        row = per_shape[name]
        # torch.compile only where it ran (and compiled) in compiled_outputs
        chosen = (("eager", eager_fn),
                  ("compiled", cmodel if name in by_compile else None), ("aoti", aoti_fn))
        variants = {k: fn for k, fn in chosen if fn is not None}
        measured = median_latencies(variants, inputs)
        for variant in variants:
            got = measured[variant]
            if isinstance(got, BaseException):
                pipe.fail(describe("latency", got, variant=variant, shape=name))
                continue
            seconds, detail = got
            row["latency"][variant] = seconds
            eager = row["latency"].get("eager")
            ratio = eager / seconds if eager and variant != "eager" else None
            if ratio is not None:
                row["ratios"][f"{variant}_speedup_vs_eager"] = ratio
                detail["speedup_vs_eager"] = round(ratio, 4)
            pipe.ctx.timing(f"latency/{variant}[{name}]", seconds, detail=detail)
