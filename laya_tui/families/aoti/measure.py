"""Calling, timing and comparing model variants (worker side, torch imported lazily)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from laya_tui.families.aoti.records import FlatOutputs, HeadDeltas, LatencyDetail
from laya_tui.families.aoti.targets import Inputs

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Latency: warm-up calls (stopping past WARMUP_SECONDS), timed groups, the wall time one
#: group aims for, and the most repetitions in a group.
WARMUP, WARMUP_SECONDS, GROUPS, GROUP_SECONDS, MAX_REPS = 3, 0.5, 5, 0.08, 64


def call(fn: Callable[..., object], inputs: Inputs) -> object:
    """``fn(*args, **kwargs)`` under ``no_grad``."""
    import torch

    args, kwargs = inputs
    with torch.no_grad():
        return fn(*args, **kwargs)


def flat_outputs(out: object) -> FlatOutputs:
    """Tensor leaves of a model output."""
    import torch
    from torch.utils import _pytree as pytree

    return [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]


def output_names(out: object, heads: tuple[str, ...] | None) -> list[str]:
    """Head names when declared, else the output's pytree paths (``out0`` for a tensor)."""
    import torch
    from torch.utils import _pytree as pytree

    pairs = [(p, x) for p, x in pytree.tree_flatten_with_path(out)[0]
             if isinstance(x, torch.Tensor)]
    if heads and len(heads) == len(pairs):
        return list(heads)
    names = [pytree.keystr(p).strip("[].'").replace("'][", ".").replace("][", ".")
             for p, _ in pairs]
    return [f"out{n}" if n.isdigit() else (n or f"out{i}") for i, n in enumerate(names)]


def sync() -> None:
    """Wait for queued CUDA work (timings of device calls must include it)."""
    import torch

    # torch leaves cuda.is_initialized unannotated
    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        torch.cuda.synchronize()


def _warm_up(fn: Callable[..., object], inputs: Inputs) -> tuple[int, float]:
    """Up to :data:`WARMUP` calls (stopping past :data:`WARMUP_SECONDS`); then one timed call."""
    t0 = time.perf_counter()
    warm = 0
    while warm < WARMUP and (warm == 0 or time.perf_counter() - t0 < WARMUP_SECONDS):
        call(fn, inputs)
        sync()
        warm += 1
    t0 = time.perf_counter()
    call(fn, inputs)
    sync()
    return warm, max(time.perf_counter() - t0, 1e-7)


def median_latencies(fns: dict[str, Callable[..., object]], inputs: Inputs
                     ) -> dict[str, tuple[float, LatencyDetail] | BaseException]:
    """Median per-call seconds of each callable, side by side.

    After warm-up, :data:`GROUPS` rounds each time every callable in turn for enough
    repetitions to last about :data:`GROUP_SECONDS` (interleaved, so load on a shared
    machine hits all of them alike). A callable that raises maps to its exception.
    """
    out: dict[str, tuple[float, LatencyDetail] | BaseException] = {}
    plan: dict[str, tuple[int, int]] = {}
    for name, fn in fns.items():
        try:
            warm, one = _warm_up(fn, inputs)
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            out[name] = exc
            continue
        plan[name] = (warm, max(1, min(MAX_REPS, int(GROUP_SECONDS / one))))
    means: dict[str, list[float]] = {name: [] for name in plan}
    for _ in range(GROUPS):
        for name, (_, reps) in plan.items():
            fn = fns[name]
            t0 = time.perf_counter()
            for _ in range(reps):
                call(fn, inputs)
            sync()
            means[name].append((time.perf_counter() - t0) / reps)
    for name, (warm, reps) in plan.items():
        m = means[name]
        out[name] = (statistics.median(m), {"warmup": warm, "groups": GROUPS, "reps": reps,
                                            "min": min(m), "max": max(m)})
    return out


def head_deltas(out: object, ref: object) -> HeadDeltas:
    """Max |logit delta|, max |softmax delta| (last axis) and argmax agreement per row."""
    import numpy as np

    from laya_tui.families.numeric import to_numpy

    a, b = to_numpy(out), to_numpy(ref)
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: output {a.shape} vs reference {b.shape}")
    finite = bool(np.all(np.isfinite(a)))
    logit = float(np.abs(a - b).max()) if a.size and finite else (0.0 if finite else float("nan"))

    def softmax(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        probs: npt.NDArray[np.float64] = e / e.sum(axis=-1, keepdims=True)
        return probs

    if a.ndim == 0 or not a.size:
        return {"logit": logit, "prob": logit, "agree": [], "ref_absmax": 0.0}
    prob = float(np.abs(softmax(a) - softmax(b)).max()) if finite else float("nan")
    a2, b2 = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    agree = [bool(x) for x in (a2.argmax(-1) == b2.argmax(-1))]
    return {"logit": logit, "prob": prob, "agree": agree, "ref_absmax": float(np.abs(b).max())}
