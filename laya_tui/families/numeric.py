"""Numeric comparison helpers used inside workers (numpy imported lazily)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from laya_tui.core.open_types import Detail

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def to_numpy(x: object) -> npt.NDArray[np.float64]:
    """Convert a torch tensor, mlx array or array-like to a float64 numpy array."""
    import numpy as np

    mod = type(x).__module__
    if mod.startswith("torch"):  # torch is loaded already: x is one of its objects
        import torch

        if isinstance(x, torch.Tensor):
            x = x.detach().to("cpu").double().numpy()
    elif mod.startswith("mlx"):
        import mlx.core as mx

        if isinstance(x, mx.array):
            x = np.array(x.astype(mx.float32))
    return np.asarray(x, dtype=np.float64)


def max_abs_diff(out: object, ref: object, *, mask: object = None) -> tuple[float, Detail]:
    """Max |out - ref| over (masked) positions, plus drill-down detail."""
    import numpy as np

    a, b = to_numpy(out), to_numpy(ref)
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: output {a.shape} vs reference {b.shape}")
    diff = np.abs(a - b)
    if mask is not None:
        m = np.broadcast_to(to_numpy(mask).astype(bool), diff.shape)
        diff = diff[m]
    detail: Detail = {"shape": list(a.shape), "compared": int(diff.size)}
    if diff.size == 0:
        return 0.0, detail
    if not np.all(np.isfinite(a if mask is None else a[np.broadcast_to(m, a.shape)])):
        detail["non_finite"] = True
        return float("nan"), detail
    detail["mean_abs_diff"] = float(diff.mean())
    return float(diff.max()), detail

