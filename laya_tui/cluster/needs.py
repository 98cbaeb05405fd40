"""What a cell asks a cluster node for (docs/cluster.md, 'What a cell asks for').

A cell's device is its ``device`` or ``target`` parameter, else ``--device`` for the model
families: ``cuda``/``gpu`` asks for a GPU, ``rbln`` for the custom ``rbln`` resource, the
``mlx`` family for ``mlx``, ``cpu``/``c``/none for nothing but a CPU, and any other name for
the custom resource of that name. A *soft* need is one the cell can do without, as it does
locally on a machine without that device (a CUDA TileLang cell is built, not run; MLX runs
on the CPU); a *hard* need is one it cannot (RBLN and other custom resources): with no node
offering it the cell is skipped, never queued.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: Device names that ask for Ray's own ``GPU`` resource.
GPU_NAMES = frozenset({"cuda", "gpu"})
#: Device names that ask for nothing but a CPU.
CPU_NAMES = frozenset({"", "cpu", "c", "llvm", "host"})
#: Families whose cells read ``--device`` when their parameters name none.
DEVICE_FAMILIES = frozenset({"explain", "aoti"})
#: Needs a cell can do without (it runs as on a machine without the device).
SOFT = frozenset({"GPU", "mlx"})


@dataclass(frozen=True)
class Need:
    """One cell's request: a Ray resource name (None: a CPU only) and whether the cell can
    run without it (``soft``)."""

    resource: str | None = None
    soft: bool = True

    def label(self) -> str:
        """``GPU``, ``rbln``, ``cpu``: the need in one word (reasons, the report)."""
        return self.resource or "cpu"


def device_of(probe: Mapping[str, object], device: str | None = None) -> str | None:
    """The device a cell targets: its ``device``/``target`` parameter, else ``device``
    (``--device``) for the model families, else None."""
    params = probe.get("params") or {}
    for key in ("device", "target"):
        value = params.get(key) if isinstance(params, Mapping) else None
        if isinstance(value, str) and value:
            return value.split(":", 1)[0].strip().lower()
    if device and probe.get("family") in DEVICE_FAMILIES:
        return device.split(":", 1)[0].strip().lower()
    return None


def need_of(probe: Mapping[str, object], device: str | None = None) -> Need:
    """What ``probe`` (a discovered cell) asks a node for; see the module docstring."""
    dev = device_of(probe, device)
    if dev is None:
        return Need("mlx", soft=True) if probe.get("family") == "mlx" else Need()
    if dev in CPU_NAMES:
        return Need()
    if dev in GPU_NAMES:
        return Need("GPU", soft=True)
    return Need(dev, soft=dev in SOFT)
