"""Text and numbers as every view shows them: the dashboard, the HTML page and the terminal
summary format with these, so a value reads the same everywhere. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from laya_tui.core.logtext import one_line, printable
from laya_tui.core.signals import format_site
from laya_tui.core.units import human_bytes, number, past_limit

__all__ = ["exact_bytes", "human_bytes", "human_seconds", "number", "one_line", "past_limit",
           "pass_seconds", "plain", "printable", "short_site", "site_key", "site_text", "yes_no"]

def exact_bytes(n: object) -> str:
    """``1.5 MiB  (1,572,864 B)``: the short form and the exact count."""
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return printable(n)
    return f"{human_bytes(n)}  ({int(n):,} B)"


def human_seconds(s: object) -> str:
    """A short duration: ``4.2 ms``, ``0.31 s``, ``3.2 s``, ``42 s``, ``2m05s`` (empty for
    None); below 0.1 s in ms (µs below 1 ms), so a fast stage is not ``0.00 s``."""
    if not isinstance(s, (int, float)) or isinstance(s, bool):
        return "" if s is None else printable(s)
    if not math.isfinite(s):
        return f"{s} s"
    if s < 0.1:
        return f"{s * 1e6:.0f} µs" if s < 1e-3 else f"{s * 1000:.1f} ms"
    if s < 10:
        return f"{s:.2f} s" if s < 1 else f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    return f"{int(s // 60)}m{int(s % 60):02d}s"


def pass_seconds(s: object) -> str:
    """A compiler pass's seconds: milliseconds below one second (most passes take a few)."""
    if not isinstance(s, (int, float)) or isinstance(s, bool):
        return printable(s)
    return f"{s * 1000:.1f} ms" if s < 1 else human_seconds(s)


def yes_no(value: object) -> str:
    """``passed``: yes / no / empty."""
    return "yes" if value is True else "no" if value is False else ""


#: Call sites written so far, by :func:`site_key`: a 100,000-signal report has a few hundred.
_SITES: dict[tuple[object, ...], str] = {}


def site_key(site: object) -> tuple[object, ...] | None:
    """What :func:`site_text` reads of a call site, as a key (the types too: 1, 1.0 and
    True differ); None when it is no mapping or holds a field that is no scalar."""
    if type(site) is not dict and not isinstance(site, Mapping):
        return None
    file, line, func = site.get("file", ""), site.get("line"), site.get("func")
    key = (file, line, func, type(file), type(line), type(func))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def site_text(site: object) -> str:
    """``file:line(func)`` of a call site (printable), or an empty string."""
    if not isinstance(site, Mapping):
        return ""
    key = site_key(site)
    if key is None:
        return printable(format_site(dict(site)))
    text = _SITES.get(key)
    if text is None:
        if len(_SITES) >= 4096:
            _SITES.clear()
        text = _SITES[key] = printable(format_site(dict(site)))
    return text


def short_site(site: object) -> str:
    """``file.py:12(func)`` with the folder dropped."""
    return site_text(site).rsplit("/", 1)[-1]


def plain(value: object) -> str:
    """A value of any type as one printable string (numbers formatted, None empty)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return number(value)
    return printable(value)
