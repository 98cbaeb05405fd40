"""Plain formatting helpers shared by widgets and screens (no Textual imports)."""

from __future__ import annotations

import re
from typing import Any

from laya_tui.core.signals import format_site

#: What a probe can be doing before it has a final status.
LIVE_STATES: tuple[str, ...] = ("pending", "queued", "running")

STATUS_GLYPH: dict[str, str] = {
    "pending": "·",
    "queued": "○",
    "running": "▶",
    "ok": "✓",
    "failed": "✗",
    "error": "⚠",
    "skipped": "⊘",
    "crashed": "✹",
    "timeout": "◷",
}

_CELL_RE = re.compile(r"^(?P<name>[^\[]+)\[(?P<cell>[^\]]*)\]$")


def human_bytes(n: int | float | None) -> str:
    """``1536`` -> ``1.5 KiB``; empty for None."""
    if n is None:
        return ""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            if unit == "B":
                return f"{int(value)} B"
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns


def human_seconds(s: float | None) -> str:
    """A short duration: ``0.04 s``, ``3.2 s``, ``2m05s``."""
    if s is None:
        return ""
    if s < 10:
        return f"{s:.2f} s" if s < 1 else f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    return f"{int(s // 60)}m{int(s % 60):02d}s"


def number(value: Any) -> str:
    """Compact display of a tolerance value or limit."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if v != v:
        return "nan"
    if v == 0:
        return "0"
    if 1e-3 <= abs(v) < 1e4:
        return f"{v:.4g}"
    return f"{v:.3e}"


def short_site(site: dict[str, Any] | None) -> str:
    """``file.py:12(func)`` with the folder dropped."""
    text = format_site(site)
    return text.rsplit("/", 1)[-1]


def leaf_name(probe_id: str) -> str:
    """``tilelang/gemm_kernel[c,bf16,gpu]`` -> ``gemm_kernel[c,bf16,gpu]``."""
    return probe_id.split("/", 1)[-1]


def split_cell(probe_id: str) -> tuple[str, list[str]] | None:
    """``tilelang/gemm_kernel[c,bf16,gpu]`` -> ``("gemm_kernel", ["c", "bf16", "gpu"])``."""
    m = _CELL_RE.match(leaf_name(probe_id))
    if not m:
        return None
    return m.group("name"), [p.strip() for p in m.group("cell").split(",")]


def one_line(text: Any, limit: int = 300) -> str:
    """First line of ``text``, at most ``limit`` characters."""
    if text is None:
        return ""
    s = str(text).strip().splitlines()
    first = s[0] if s else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"
