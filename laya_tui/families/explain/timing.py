"""Latency of a forward without instrumentation: median of repeated calls after warm-up."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from laya_tui.families.explain.records import Latency

WARMUP = 2
REPEATS = 10


def median_latency(fn: Callable[[], object], *, warmup: int = WARMUP, repeats: int = REPEATS,
                   sync: Callable[[], object] | None = None) -> Latency:
    """``{"median_s", "min_s", "samples", "warmup"}`` for ``fn()`` (``sync`` after each call)."""
    for _ in range(max(0, warmup)):
        fn()
        if sync is not None:
            sync()
    samples = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        if sync is not None:
            sync()
        samples.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(samples), "min_s": min(samples),
            "samples": len(samples), "warmup": warmup}


def device_sync(device: str | None) -> Callable[[], object] | None:
    """A synchronize for accelerator devices (so a timed call includes its kernels)."""
    if not device or device == "cpu":
        return None
    import torch

    kind = device.split(":")[0]
    mod = getattr(torch, kind, None)
    fn = getattr(mod, "synchronize", None)
    return fn if callable(fn) else None
