"""Quantities as people read them (standard library only)."""

from __future__ import annotations


def human_bytes(n: int | float | None) -> str:
    """``1536`` -> ``1.5 KiB``; empty for None (or anything that is not a number)."""
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return ""
    value = float(n)
    size = abs(value)  # (a division by a power of two is exact: as dividing step by step)
    if size < 1024:
        return f"{int(value)} B"
    if size < 1 << 20:
        return f"{value / 1024:.1f} KiB"
    if size < 1 << 30:
        return f"{value / (1 << 20):.1f} MiB"
    if size < 1 << 40:
        return f"{value / (1 << 30):.1f} GiB"
    return f"{value / (1 << 40):.1f} TiB"
