"""A signal as a row of the signal tables (the dashboard's and the page's): its columns, the
text of each cell, the raw value each column sorts on, what the text filter searches and
whether it fails. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from laya_tui.core import cellid
from laya_tui.core.results import SignalLike, failing
from laya_tui.core.signals import KINDS
from laya_tui.report.views.text import (
    human_bytes,
    human_seconds,
    number,
    one_line,
    short_site,
)


@dataclass(frozen=True, slots=True)
class Column:
    """A column of the signal table: ``numeric`` ones align right and sort descending first;
    ``distinct`` ones are worth their width only where their values differ between rows
    (the probe in one probe's table); ``wide`` ones take the width that is left."""

    key: str
    label: str
    numeric: bool = False
    wide: bool = False
    distinct: bool = False
    #: the most a narrow column takes (characters); wide ones share what is left
    cap: int = 0


COLUMNS: tuple[Column, ...] = (
    Column("kind", "kind", cap=11),
    Column("subject", "subject", wide=True),
    Column("count", "count", numeric=True, cap=7),
    Column("bytes", "bytes", numeric=True, cap=10),
    Column("value", "value", numeric=True, cap=24),
    Column("reason", "reason", wide=True),
    Column("site", "call site", wide=True),
    Column("fix", "fix", wide=True),
    Column("probe", "probe", distinct=True, cap=36),
)
COLUMN_KEYS: tuple[str, ...] = tuple(c.key for c in COLUMNS)
_KIND_ORDER = {k: i for i, k in enumerate(KINDS)}
_ABSENT = float("-inf")


def value_text(sig: SignalLike) -> str:
    """The measured value of a signal: ``7.2e-07 ≤ 2.000e-05`` (a tolerance, ``>`` when it
    failed), ``0.70 s`` (a timing), an environment's value, a number."""
    value, limit, seconds = sig.get("value"), sig.get("limit"), sig.get("seconds")
    if sig.get("kind") == "tolerance" and value is not None and limit is not None:
        return f"{number(value)} {'>' if sig.get('passed') is False else '≤'} {number(limit)}"
    if value is not None:
        return number(value) if isinstance(value, (int, float)) else one_line(value, 120)
    if seconds is not None:
        return human_seconds(seconds)
    return ""


def signal_cells(sig: SignalLike, probe: str) -> tuple[str, ...]:
    """The text of each of :data:`COLUMNS` for ``sig`` of cell ``probe`` (printable)."""
    count = sig.get("count")
    return (one_line(sig.get("kind"), 40), one_line(sig.get("subject"), 200),
            "" if count is None else number(count), human_bytes(sig.get("bytes")),
            value_text(sig), one_line(sig.get("reason"), 300), short_site(sig.get("site")),
            one_line(sig.get("fix"), 300), cellid.leaf_name(probe))


def _num(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(
        value, bool) else _ABSENT


def _value_key(sig: SignalLike, probe: str) -> tuple[int, float, str]:
    value = sig.get("value")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (1, float(value), "")
    if value is not None:
        return (2, 0.0, str(value).lower())
    seconds = sig.get("seconds")
    return (1, _num(seconds), "") if seconds is not None else (0, 0.0, "")


def _text_key(column: str) -> Callable[[SignalLike, str], str]:
    def key(sig: SignalLike, probe: str) -> str:
        value = sig.get(column)
        return value.lower() if type(value) is str else str(value or "").lower()
    return key


#: A column's sort value: a kind's rank, a number, case-folded text, or the value
#: column's ``(rank, number, text)``.
ColumnValue: TypeAlias = int | float | str | tuple[int, float, str]
#: What each column sorts on, as a function of ``(signal, probe)``: numbers as numbers
#: (absent ones first), text case-folded; the values of one column always compare.
SORT_KEYS: dict[str, Callable[[SignalLike, str], ColumnValue]] = {
    "kind": lambda sig, probe: _KIND_ORDER.get(str(sig.get("kind")), 99),
    "subject": _text_key("subject"),
    "count": lambda sig, probe: _num(sig.get("count")),
    "bytes": lambda sig, probe: _num(sig.get("bytes")),
    "value": _value_key,
    "reason": _text_key("reason"),
    "site": lambda sig, probe: short_site(sig.get("site")).lower(),
    "fix": _text_key("fix"),
    "probe": lambda sig, probe: cellid.leaf_name(probe).lower(),
}


def sort_value(sig: SignalLike, probe: str, column: str) -> ColumnValue:
    """The raw value ``column`` sorts on (:data:`SORT_KEYS`)."""
    return SORT_KEYS[column](sig, probe)


def haystack(sig: SignalLike, probe: str) -> str:
    """What the text filter searches: every column's raw text, lower-cased."""
    site = sig.get("site")
    where = f"{site.get('file', '')}:{site.get('line', '')}({site.get('func', '')})" \
        if isinstance(site, Mapping) else ""
    return (f"{sig.get('kind', '')}\x00{sig.get('subject') or ''}\x00"
            f"{sig.get('reason') or ''}\x00{where}\x00"
            f"{sig.get('fix') or ''}\x00{probe}").lower()


def is_failing(sig: SignalLike) -> bool:
    """Whether the signal states a failure (``core.results.failing``)."""
    return failing(sig)


#: Wide columns in the order they give their width up when it is short (never the subject).
_DROP_ORDER = ("fix", "site", "reason")
#: Narrow columns in the order they give their width up when they would take more than
#: NARROW_SHARE of the table (the probe is the tree's selection; the detail has them all).
_NARROW_DROP_ORDER = ("probe", "count", "bytes")
NARROW_SHARE = 0.6
#: the subject's width (cut at its start: its last 10 characters) when the reason takes
#: the room of a narrow table
NARROW_SUBJECT = 11
_WIDE_INDEX = {c.key: i for i, c in enumerate(COLUMNS)}


def column_widths(needs: list[int], total: int, *, least: int = 14) -> list[int]:
    """Widths (characters) for columns needing ``needs`` (0: hidden) within ``total``.

    A narrow column gets its need up to its cap. The subject (what tells rows apart) then
    gets its need, up to half of what is left, then the reason the same way; the call site
    and the fix share the rest so that one needing less than an equal share gets its need
    and the other what remains.
    Under ``2 * least`` for both (a table at 80 columns), the reason gets the room and the
    subject :data:`NARROW_SUBJECT` (cut at its start: its end tells rows apart).
    When that leaves a wide column under ``least`` characters, the fix, then the call site,
    then the reason give their width up (the detail shows them). What is left once every
    column has its need goes to the wide columns. In :data:`COLUMNS` order."""
    widths = [0] * len(COLUMNS)
    for i, (col, need) in enumerate(zip(COLUMNS, needs, strict=True)):
        if need > 0 and not col.wide:
            widths[i] = max(min(need, col.cap), len(col.label))
    most = int(total * NARROW_SHARE)  # narrow columns leave the wide ones 40% at least
    for key in _NARROW_DROP_ORDER:
        if sum(widths) <= most:
            break
        widths[_WIDE_INDEX[key]] = 0
    value = _WIDE_INDEX["value"]
    over = sum(widths) - most
    if over > 0 and widths[value]:
        widths[value] = max(len(COLUMNS[value].label) + 3, widths[value] - over)
    room = max(0, total - sum(widths))
    wide = [i for i, c in enumerate(COLUMNS) if c.wide and needs[i] > 0]
    subject, reason = _WIDE_INDEX["subject"], _WIDE_INDEX["reason"]
    want = NARROW_SUBJECT + min(least, needs[reason])
    if needs[subject] and needs[reason] and room < want and widths[value]:
        give = min(widths[value] - len(COLUMNS[value].label) - 3, want - room)
        if give > 0:  # (80 columns) the value gives the reason its room (the detail has it)
            widths[value] -= give
            room += give
    dropped: set[int] = set()
    while True:
        shown = [i for i in wide if i not in dropped]
        alloc = dict.fromkeys(shown, 0)
        left = room
        for first in (subject, reason):  # each its need, up to half of what is left
            if first in alloc:
                alloc[first] = min(needs[first], max(least, left // 2))
                left -= alloc[first]
        narrow = subject in alloc and reason in alloc and room < 2 * least
        if narrow:  # (80 columns) the reason gets the room; the subject keeps its end
            alloc[subject] = min(needs[subject], max(NARROW_SUBJECT, room - needs[reason]))
            alloc[reason] = min(needs[reason], room - alloc[subject])
            left = room - alloc[subject] - alloc[reason]
        _share(alloc, [i for i in shown if i not in (subject, reason)], needs, max(0, left))
        short = [i for i in shown if i != subject and alloc[i] < min(least, needs[i])
                 and not (narrow and i == reason)]
        victim = next((_WIDE_INDEX[k] for k in _DROP_ORDER if _WIDE_INDEX[k] in shown
                       and _WIDE_INDEX[k] != subject), None)
        if not short or victim is None or len(shown) <= 1:
            break
        dropped.add(victim)
    spare = room - sum(alloc.values())
    if spare > 0 and alloc:  # everything fits: the spare width to the wide columns
        keys = list(alloc)
        for j, k in enumerate(keys):
            alloc[k] += spare // len(keys) + (1 if j < spare % len(keys) else 0)
    for i, w in alloc.items():
        widths[i] = w
    return widths


def _share(alloc: dict[int, int], cols: list[int], needs: list[int], room: int) -> None:
    """Max-min fair shares of ``room`` for ``cols``: each its need when under an equal
    share, the others the rest in equal parts."""
    active = sorted(cols, key=lambda i: needs[i])
    while active:
        fair = room // len(active)
        if needs[active[0]] > fair:
            for j, k in enumerate(active):
                alloc[k] = fair + (1 if j < room % len(active) else 0)
            return
        i = active.pop(0)
        alloc[i] = needs[i]
        room -= needs[i]


def column_needs(rows: list[tuple[str, ...]], *, cap: int = 120) -> list[int]:
    """What each column needs to show ``rows`` (their cell texts) whole, up to ``cap``;
    0 for a column with nothing to show, and for the probe when every row has the same one
    or every subject names its probe already (``gemm_kernel[c,fp32,gpu]/lower``)."""
    needs = []
    subject, probe = COLUMN_KEYS.index("subject"), COLUMN_KEYS.index("probe")
    for i, col in enumerate(COLUMNS):
        values = [r[i] for r in rows]
        if col.distinct and (len(set(values)) <= 1 or (
                i == probe and all(r[subject].startswith(r[probe]) for r in rows))):
            needs.append(0)
            continue
        longest = max((len(v) for v in values), default=0)
        needs.append(0 if longest == 0 else max(len(col.label), min(cap, longest)))
    return needs
