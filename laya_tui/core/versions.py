"""Library versions read from package metadata (cheap; imports nothing heavy)."""

from __future__ import annotations

import sys
from functools import lru_cache

#: This tool's own version (``laya_tui.__version__``, and the report's ``tool.version``).
TOOL_VERSION = "0.1.0"

#: Distributions whose versions matter to probe results (and so to cache keys).
TRACKED = ("torch", "transformers", "tilelang", "mlx", "torch-rbln", "numpy", "textual",
           "laya-tui")


@lru_cache(maxsize=1)
def library_versions() -> dict[str, str | None]:
    """``{distribution: version or None}`` for :data:`TRACKED`, plus Python."""
    import platform
    from importlib import metadata  # ~35 stdlib modules: only when versions are read

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in TRACKED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def host_facts() -> dict[str, object]:
    """Facts about this machine that cost nothing to gather."""
    import os
    import platform

    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python_executable": sys.executable,
        "cpu_count": os.cpu_count(),
        "hostname": platform.node(),
    }
