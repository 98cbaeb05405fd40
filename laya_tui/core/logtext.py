"""Clean-ups for captured stderr before it is shown or stored."""

from __future__ import annotations

import re

_EXTENSIONS = re.compile(r"^Extension modules: .*?\(total: (\d+)\)$", re.M)
#: C0 controls except tab and newline, DEL and C1: what a probe may print (a raw NUL, an
#: escape sequence) that would draw a box, move the cursor or recolour a terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()):02x}"


def printable(text: object) -> str:
    """``text`` with every control character written as an escape (``\\x00``, ``\\x1b``);
    tabs and newlines stay, ``\\r\\n`` and a lone ``\\r`` become newlines. Everything a
    probe wrote goes through this before a page, a terminal or the dashboard shows it."""
    if type(text) is str and text.isprintable():  # the usual case, 3x faster than the search
        return text
    s = "" if text is None else str(text)
    if _CONTROL.search(s) is None:
        return s
    if "\r" in s:
        s = s.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(_escape, s)


def trim_faulthandler(text: str) -> str:
    """Replace faulthandler's list of loaded extension modules with its count.

    The list can run to thousands of characters and push the crash's stack out of a
    log tail.
    """
    return _EXTENSIONS.sub(r"Extension modules: (\1 loaded; list omitted)", text)


#: one_line's texts so far, by (text, limit): a flood repeats its kinds, reasons and fixes.
_LINES: dict[tuple[str, int], str] = {}


def one_line(text: object, limit: int = 300) -> str:
    """The first line of ``text`` (printable), at most ``limit`` characters."""
    if type(text) is str and len(text) <= 1000:
        found = _LINES.get((text, limit))
        if found is None:
            if len(_LINES) >= 65536:
                _LINES.clear()
            found = _LINES[(text, limit)] = _one_line(text, limit)
        return found
    return _one_line(text, limit)


def _one_line(text: object, limit: int) -> str:
    if text is None:
        return ""
    s = printable(text)
    if "\n" not in s:  # the usual one-liner
        s = s.strip()
        return s if len(s) <= limit else s[: limit - 1] + "…"
    lines = s.strip().splitlines()
    first = lines[0] if lines else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"
