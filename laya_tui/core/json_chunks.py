"""Reading a large JSON report a piece at a time, so a thread doing it lets the event loop run.

``json.loads`` and ``bytes.decode`` are single C calls that hold the interpreter lock until
they return: parsing a 200,000-signal report (44 MB) in `laya-tui show`'s loader thread
froze the dashboard's loop for 0.8 s, decoding it for 60 ms more. Here the outer objects and
arrays are walked in Python, and a long array of objects is parsed with ``json.loads`` a
chunk of whole elements at a time (about :data:`CHUNK` characters); between the pieces the
interpreter hands the lock to the loop. The result equals ``json.loads(text)``; on any text
the walk does not follow, ``json.loads`` parses it whole and raises its own errors.
"""

from __future__ import annotations

import codecs
import json
import json.scanner
import re
from collections.abc import Callable
from typing import Any

from laya_tui.core.open_types import JsonObject

#: characters of an array parsed in one ``json.loads`` call (~1,000 signals, ~4 ms)
CHUNK = 256 * 1024
#: bytes decoded from UTF-8 in one call
DECODE_CHUNK = 4 * 2**20
#: containers this deep or less are walked; deeper values are parsed whole
WALK_DEPTH = 4

_WS = re.compile(r"[ \t\n\r]*")
#: where one object of an array ends and the next begins: ``}`` , ``{``
_NEXT_OBJECT = re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{")
#: the C scanner behind json.loads: one value from an index, (value, end)
_scan_once: Callable[[str, int], tuple[object, int]] = json.scanner.make_scanner(
    json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: the context's own type
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _skip(s: str, idx: int) -> int:
    """The index after the whitespace at ``idx`` (the pattern matches empty text too)."""
    m = _WS.match(s, idx)
    return idx if m is None else m.end()


class _NotFollowed(Exception):
    """The text is not JSON the walk can follow: parse it whole instead."""


def decode_utf8(raw: bytes) -> str:
    """``raw.decode("utf-8")``, :data:`DECODE_CHUNK` bytes per call (same errors)."""
    if len(raw) <= DECODE_CHUNK:
        return raw.decode("utf-8")
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(raw)
    parts = [decoder.decode(view[i:i + DECODE_CHUNK]) for i in range(0, len(raw), DECODE_CHUNK)]
    parts.append(decoder.decode(b"", final=True))
    return "".join(parts)


def loads(text: str) -> Any:
    """``json.loads(text)``, parsed in pieces (see the module's docstring)."""
    if len(text) <= CHUNK:
        return json.loads(text)
    try:
        value, end = _value(text, _skip(text, 0), 0)
        if _skip(text, end) != len(text):
            raise _NotFollowed
        return value
    except (_NotFollowed, ValueError, RecursionError):
        return json.loads(text)


def _value(s: str, idx: int, depth: int) -> tuple[object, int]:
    c = s[idx:idx + 1]
    if depth < WALK_DEPTH and c == "{":
        return _object(s, idx + 1, depth)
    if depth < WALK_DEPTH and c == "[":
        return _array(s, idx + 1, depth)
    try:
        return _scan_once(s, idx)
    except StopIteration:
        raise _NotFollowed from None


def _object(s: str, idx: int, depth: int) -> tuple[JsonObject, int]:
    out: JsonObject = {}
    idx = _skip(s, idx)
    if s[idx:idx + 1] == "}":
        return out, idx + 1
    while True:
        if s[idx:idx + 1] != '"':
            raise _NotFollowed
        key, idx = _scanstring(s, idx + 1)
        idx = _skip(s, idx)
        if s[idx:idx + 1] != ":":
            raise _NotFollowed
        out[key], idx = _value(s, _skip(s, idx + 1), depth + 1)
        done, idx = _after_item(s, idx, "}")
        if done:
            return out, idx


def _array(s: str, idx: int, depth: int) -> tuple[list[object], int]:
    out: list[object] = []
    idx = _skip(s, idx)
    if s[idx:idx + 1] == "]":
        return out, idx + 1
    chunked = depth + 1 == WALK_DEPTH  # its items are parsed whole: a chunk at a time
    while True:
        if chunked and s[idx:idx + 1] == "{":
            idx, chunked = _take_chunks(s, idx, out), False  # the tail: an item at a time
        value, idx = _value(s, idx, depth + 1)
        out.append(value)
        done, idx = _after_item(s, idx, "]")
        if done:
            return out, idx


def _after_item(s: str, idx: int, close: str) -> tuple[bool, int]:
    """After a container's item: (True, the index past ``close``) at the container's end,
    (False, the next item's index) after a comma."""
    idx = _skip(s, idx)
    c = s[idx:idx + 1]
    if c == close:
        return True, idx + 1
    if c != ",":
        raise _NotFollowed
    return False, _skip(s, idx + 1)


def _take_chunks(s: str, idx: int, out: list[object]) -> int:
    """Parse whole objects from ``idx`` (an object's start) into ``out``, a piece of about
    :data:`CHUNK` characters per ``json.loads``, while a boundary of the array's own follows
    within twice that; the index of the first object not taken (the array's tail, which the
    caller parses an item at a time).

    A piece that parses as an array on its own ends at a boundary between the array's own
    elements: one cut inside a string leaves it unterminated, one inside a nested value
    leaves its brackets open, and both fail to parse (then the next boundary is tried, 8 at
    most). The search runs past the array's end into the rest of the text, hence the bound:
    each array retries at most once, over at most 8 pieces of 2 x CHUNK.
    """
    start = idx
    while True:
        m = _NEXT_OBJECT.search(s, start + CHUNK, start + 2 * CHUNK)
        for _ in range(8):
            if m is None:
                return start
            try:
                part = json.loads("[" + s[start:m.start() + 1] + "]")
            except ValueError:
                m = _NEXT_OBJECT.search(s, m.end(), start + 2 * CHUNK)
                continue
            out.extend(part)
            start = m.end() - 1  # the next object's "{"
            break
        else:
            return start
