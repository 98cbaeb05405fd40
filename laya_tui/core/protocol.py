"""What the runner and the worker agree on, named once: per-family timeouts (and, below,
the operations and events of the JSON-lines protocol; docs/architecture.md, 'Worker
protocol')."""

from __future__ import annotations

#: Default per-probe timeout in seconds, per family; ``--timeout`` overrides it.
DEFAULT_TIMEOUTS: dict[str, float] = {
    "env": 60.0,
    "explain": 300.0,
    "tilelang": 180.0,
    "aoti": 600.0,
    "mlx": 300.0,
}
FALLBACK_TIMEOUT = 300.0
