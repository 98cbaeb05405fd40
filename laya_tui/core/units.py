"""Quantities and numbers as people read them, the same in every output (standard library
only): bytes, a tolerance value, a value against its limit."""

from __future__ import annotations

import math
from typing import SupportsFloat, SupportsIndex

from laya_tui.core.logtext import one_line


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


def number(value: object) -> str:
    """A tolerance value, a limit or a measurement: 4 significant digits, scientific
    notation outside [1e-3, 1e4); integers as they are; empty for None."""
    if value is None:
        return ""
    if isinstance(value, (bool, int)):
        return str(value)
    if not isinstance(value, float):
        if not isinstance(value, str | bytes | bytearray | SupportsFloat | SupportsIndex):
            return one_line(value)  # float() has no meaning for it
        try:
            value = float(value)
        except (TypeError, ValueError):  # a __float__ that refuses (an array of several)
            return one_line(value)
    if value != value:
        return "nan"
    if value == 0:
        return "0"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if 1e-3 <= abs(value) < 1e4:
        return f"{value:.4g}"
    return f"{value:.3e}"


def past_limit(value: object, limit: object, passed: bool | None = False) -> str:
    """``0.9085 > limit 0.05`` (``<=`` when it passed): a tolerance value against its limit,
    the same numbers and word in every output."""
    return f"{number(value)} {'<=' if passed else '>'} limit {number(limit)}"
