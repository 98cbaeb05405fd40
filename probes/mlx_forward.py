"""mlx probes: the tiny ModernBERT encoder forward in MLX against the torch fp32 reference.

Cells: ``mlx/encoder[fp32|fp16, eager|compiled]`` (parity on several shapes, cold and warm
phase timings, torch eager on the same inputs), ``mlx/encoder[fp32,retrace]`` (what a
shape change after ``mx.compile`` costs) and ``mlx/encoder[fp32,bucketed]`` (length
buckets bound the retraces and cost padding). A parity comparison that fails (or any with
``--numerics``) gets the encoder's gap table by the torch model's module names
(:mod:`laya_tui.families.mlx.gap`). Heavy imports stay inside the functions.
"""

from __future__ import annotations

import sys
from typing import Any

from laya_tui import param, probe
from laya_tui.api import options

FUNC = "encoder_forward"
#: Parity batches: shorter than the local window (|q-k| <= 8), past it with padded rows,
#: and mixed lengths with heavy right padding (the warm timings use the last one).
PARITY_LENGTHS: tuple[list[int], ...] = ([8], [40, 17, 3], [93, 60, 31, 5])
WARM_RUNS = 20
#: Retrace scenario: (what the step shows, row lengths).
RETRACE_STEPS: tuple[tuple[str, list[int]], ...] = (
    ("first shape", [40, 25]),
    ("repeated shape", [40, 25]),
    ("repeated shape", [40, 25]),
    ("new batch size", [40, 25, 12]),
    ("new length", [56, 25]),
    ("repeated new length", [56, 25]),
)
#: Bucketed scenario: a stream of batches whose widths all differ.
STREAM: tuple[list[int], ...] = ([33, 20], [37, 12], [40, 40], [45, 3], [47, 30],
                                 [60, 41], [61, 61], [93, 50])


def _demo(*cells: Any) -> Any:
    """The encoder is part of the demo: its cells exist only in a run that includes it."""
    return lambda: list(cells) if options().get("demo", True) else []


def _install_hint() -> str:
    pkg = "mlx" if sys.platform == "darwin" else "mlx[cpu]"
    return f"pip install '{pkg}' (or 'laya-tui[mlx]')"


def _libs(ctx: Any) -> tuple[Any, Any]:
    """``(mlx.core, torch)`` or a skip with the install hint."""
    try:
        import mlx.core as mx
    except ImportError as exc:
        ctx.skip(f"mlx not installed ({exc}): {_install_hint()}")
    try:
        import torch
        import transformers  # noqa: F401 - the reference model needs it
    except ImportError as exc:
        ctx.skip(f"torch/transformers not installed ({exc}): pip install 'laya-tui[torch]'")
    from laya_tui.families.mlx.encoder import blas_library, kernel_cache_dir

    ctx.environment("mlx", mx.__version__, detail={
        "device": str(mx.default_device()), "kernel_cache": str(kernel_cache_dir()),
        "blas": blas_library()})
    return mx, torch


def _reference(model: Any, batch: dict[str, Any]) -> Any:
    import torch

    with torch.no_grad():
        return model(**batch).last_hidden_state


def _valid(batch: dict[str, Any]) -> Any:
    return batch["attention_mask"].bool()[..., None]


def _report_traces(ctx: Any, enc: Any, seen: int, subject: str = FUNC) -> int:
    """One signal per trace since ``seen``: the first trace is a ``compile``, every later one a
    ``recompile`` (a new shape); returns the new trace count."""
    for n in range(seen, len(enc.traces)):
        ctx.signal("compile" if n == 0 else "recompile", subject=subject, count=n + 1,
                   reason=f"new input shape {enc.traces[n]}",
                   detail={"phase": "cold" if n == 0 else "warm",
                           "shapes": [list(s) for s in enc.traces[: n + 1]]})
    return len(enc.traces)


def _padding_log(ctx: Any, batch: Any, label: str) -> None:
    ctx.log(f"{label}: rows {list(batch.lengths)} padded to width {batch.width}, "
            f"{batch.padded_tokens}/{batch.total_tokens} tokens are padding",
            subject="padding", value=round(batch.padding_waste, 6), detail=batch.waste_detail())


def _phase_signals(ctx: Any, times: list[Any], phase: str, extra: dict[str, Any]) -> Any:
    """Per-phase medians plus the median per-run total (never a sum of medians)."""
    from laya_tui.families.mlx.encoder import PHASES, summarize

    stats = summarize(times)
    for name in PHASES:
        detail = {"phase": phase, "runs": stats.runs, "median": stats.medians[name], **extra}
        if name != "forward":
            detail.pop("padding_waste", None)
        ctx.timing(name, stats.medians[name], detail=detail)
    ctx.timing("total", stats.total, detail={"phase": phase, "runs": stats.runs,
                                             "median": stats.total, **extra})
    return stats


def _torch_median(model: Any, batch: dict[str, Any], runs: int) -> float:
    import statistics
    import time

    import torch

    with torch.no_grad():
        model(**batch)
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            model(**batch)
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


@probe(family="mlx", name="encoder",
       params=_demo(*(param(f"{dt},{mode}", dtype=dt, compiled=mode == "compiled")
                      for dt in ("fp32", "fp16") for mode in ("eager", "compiled"))))
def encoder_parity(ctx: Any, dtype: str, compiled: bool) -> None:
    """Parity on several shapes, cold/warm phase timings and torch eager on the same input."""
    mx, torch = _libs(ctx)
    from laya_tui.families.mlx.encoder import LIMITS, MlxEncoder, kernel_count, timed_forward
    from laya_tui.presets import tiny_modernbert, token_batch

    model = tiny_modernbert()
    enc = MlxEncoder.from_torch(model, dtype)
    limit, seen = LIMITS[dtype], 0
    mode = "compiled" if compiled else "eager"
    for i, lengths in enumerate(PARITY_LENGTHS):
        inputs = token_batch(lengths)
        ref = _reference(model, inputs)
        k0 = kernel_count()
        out, t, batch = timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                      compiled=compiled)
        if i == 0:
            _phase_signals(ctx, [t], "cold", {
                "mode": mode, "shape": list(batch.shape), "padding_waste": batch.padding_waste,
                "jit_kernels_built": kernel_count() - k0, "jit_kernels_cached_before": k0})
        seen = _report_traces(ctx, enc, seen)
        subject = f"last_hidden_state[{batch.shape[0]}x{batch.shape[1]}]"
        sig = ctx.compare(subject, out, ref, atol=limit, mask=_valid(inputs),
                          detail={"dtype": dtype, "mode": mode, "lengths": lengths,
                                  "reference": "torch fp32 ModernBertModel"})
        from laya_tui.families.mlx.gap import table_after_compare

        table_after_compare(ctx, subject, sig, enc=enc, model=model, inputs=inputs,
                            compiled=compiled)  # failing, or --numerics (issue 43)
        _padding_log(ctx, batch, f"parity batch {i}")
    inputs = token_batch(PARITY_LENGTHS[-1])
    args = (inputs["input_ids"], inputs["attention_mask"])
    times = [timed_forward(enc, *args, compiled=compiled)[1] for _ in range(WARM_RUNS)]
    _, _, batch = timed_forward(enc, *args, compiled=compiled)
    stats = _phase_signals(ctx, times, "warm", {
        "mode": mode, "shape": list(batch.shape), "padding_waste": batch.padding_waste,
        "unique_inputs": batch.unique_inputs})
    seen = _report_traces(ctx, enc, seen)
    torch_s = _torch_median(model, inputs, WARM_RUNS)
    ctx.timing("torch_eager", torch_s, detail={
        "phase": "warm", "runs": WARM_RUNS, "median": torch_s, "shape": list(batch.shape),
        "torch_over_mlx_total": round(torch_s / stats.total, 3) if stats.total else None,
        "threads": torch.get_num_threads()})


@probe(family="mlx", name="encoder", params=_demo(param("fp32,retrace")))
def encoder_retrace(ctx: Any) -> None:
    """A shape change after ``mx.compile``: each new (B, L) retraces, a repeat does not."""
    mx, _torch = _libs(ctx)
    from laya_tui.families.mlx.encoder import LIMITS, MlxEncoder, kernel_count, timed_forward
    from laya_tui.presets import tiny_modernbert, token_batch

    model = tiny_modernbert()
    enc = MlxEncoder.from_torch(model, "fp32")
    seen = 0
    first_calls: dict[tuple[int, int], tuple[Any, int, str]] = {}
    for label, lengths in RETRACE_STEPS:
        inputs = token_batch(lengths)
        before, k0 = len(enc.traces), kernel_count()
        out, t, batch = timed_forward(enc, inputs["input_ids"], inputs["attention_mask"],
                                      compiled=True)
        retraced = len(enc.traces) - before
        seen = _report_traces(ctx, enc, seen)
        ctx.log(f"{label} {batch.shape}: {'retraced' if retraced else 'cached'}",
                subject="trace", value=retraced,
                detail={"step": label, "shape": list(batch.shape), "traces": len(enc.traces),
                        "graph_s": t.graph, "forward_s": t.forward})
        if retraced and batch.shape not in first_calls:
            first_calls[batch.shape] = (t, kernel_count() - k0, label)
            ctx.compare(f"last_hidden_state[{batch.shape[0]}x{batch.shape[1]}]", out,
                        _reference(model, inputs), atol=LIMITS["fp32"], mask=_valid(inputs),
                        detail={"lengths": lengths, "step": label})
    for (b, width), (t, built, label) in first_calls.items():
        lengths = next(ln for lab, ln in RETRACE_STEPS if lab == label)
        inputs = token_batch(lengths)
        warm = sorted(x.graph + x.forward for x in (
            timed_forward(enc, inputs["input_ids"], inputs["attention_mask"], compiled=True)[1]
            for _ in range(WARM_RUNS)))
        warm_median = warm[len(warm) // 2]
        first = t.graph + t.forward
        # the first call past the warm median; on a busy machine the median can come out
        # slower than that first call: no negative seconds (the schema forbids them)
        ctx.timing("retrace", max(0.0, first - warm_median), detail={
            "phase": "cold" if label == "first shape" else "warm", "step": label,
            "shape": [b, width], "first_call_s": first, "trace_s": t.graph,
            "first_forward_s": t.forward, "warm_median_s": warm_median, "runs": WARM_RUNS,
            "jit_kernels_built": built})
    _report_traces(ctx, enc, seen)


@probe(family="mlx", name="encoder", params=_demo(param("fp32,bucketed", bucket=16)))
def encoder_bucketed(ctx: Any, bucket: int) -> None:
    """A stream of widths, unbucketed vs bucketed: retraces bounded, padding paid."""
    mx, _torch = _libs(ctx)
    import time

    from laya_tui.families.mlx.encoder import LIMITS, MlxEncoder, timed_forward
    from laya_tui.families.numeric import max_abs_diff
    from laya_tui.presets import tiny_modernbert, token_batch

    model = tiny_modernbert()
    streams = [token_batch(lengths) for lengths in STREAM]
    refs = [_reference(model, inputs) for inputs in streams]
    summary: dict[str, dict[str, Any]] = {}
    for label, bk in (("unbucketed", None), (f"bucket={bucket}", bucket)):
        enc = MlxEncoder.from_torch(model, "fp32")
        subject = FUNC if bk else f"{FUNC}(unbucketed)"
        worst, padded, total, seen, rows = 0.0, 0, 0, 0, set()
        for phase in ("cold", "warm"):
            t0 = time.perf_counter()
            for i, inputs in enumerate(streams):
                out, _t, batch = timed_forward(enc, inputs["input_ids"],
                                               inputs["attention_mask"], compiled=True,
                                               bucket=bk)
                if phase == "cold":
                    worst = max(worst, max_abs_diff(out, refs[i], mask=_valid(inputs))[0])
                    padded, total = padded + batch.padded_tokens, total + batch.total_tokens
                    ids = inputs["input_ids"]
                    rows |= {tuple(ids[r, :n].tolist()) for r, n in enumerate(STREAM[i])}
                    if bk:
                        _padding_log(ctx, batch, f"stream batch {i}")
            ctx.timing("stream", time.perf_counter() - t0, detail={
                "phase": phase, "variant": label, "batches": len(streams),
                "traces": len(enc.traces), "padding_waste": padded / total})
            seen = _report_traces(ctx, enc, seen, subject)
        ctx.tolerance(f"last_hidden_state[stream,{label}]", worst, LIMITS["fp32"],
                      detail={"batches": len(streams), "bucket": bk})
        summary[label] = {"traces": len(enc.traces), "padded_tokens": padded,
                          "total_tokens": total, "padding_waste": round(padded / total, 6),
                          "unique_inputs": len(rows)}
    mine, base = summary[f"bucket={bucket}"], summary["unbucketed"]
    ctx.log(f"bucket {bucket}: {mine['traces']} traces vs {base['traces']} unbucketed; "
            f"padding {mine['padding_waste']:.1%} vs {base['padding_waste']:.1%}",
            subject="padding", value=mine["padding_waste"],
            detail={**mine, "bucket": bucket, "questions": sum(len(s) for s in STREAM),
                    "unbucketed": base})
