"""Aggregation of region events into signals: one per (kind, subject, reason, site).

Pure standard library, so the RBLN mapping and the log parser can use it without torch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from laya_tui.families.explain.records import Detail, EntryFields, SignalDict, SiteDict

SiteKey = tuple[str, int | None, str | None]


def site_key(site: SiteDict | None) -> SiteKey | None:
    """Hashable identity of a site dict."""
    if not site:
        return None
    return (str(site.get("file", "")), site.get("line"), site.get("func"))


@dataclass
class Entry:
    """One aggregated signal in the making."""

    kind: str
    subject: str
    reason: str | None
    site: SiteDict | None
    count: int = 0
    bytes: int | None = None
    seconds: float | None = None
    fix: str | None = None
    detail: Detail = field(default_factory=dict)

    def fields(self) -> EntryFields:
        """Keyword arguments for ``ctx.signal(kind, **fields)``."""
        return {"subject": self.subject, "count": self.count, "bytes": self.bytes,
                "reason": self.reason, "site": self.site, "fix": self.fix,
                "seconds": None if self.seconds is None else round(self.seconds, 6),
                "detail": self.detail or None}


class Aggregator:
    """Collects events; the same (kind, subject, reason, site) adds to one entry."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, str | None, SiteKey | None], Entry] = {}

    def add(self, kind: str, subject: str, *, reason: str | None = None,
            site: SiteDict | None = None, count: int = 1, nbytes: int | None = None,
            seconds: float | None = None, fix: str | None = None,
            detail: Detail | None = None) -> Entry:
        """Add ``count`` occurrences (and ``nbytes`` bytes) to the matching entry."""
        key = (kind, subject, reason, site_key(site))
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = Entry(kind, subject, reason, site, fix=fix,
                                              detail=dict(detail or {}))
        entry.count += count
        if nbytes is not None:
            entry.bytes = (entry.bytes or 0) + int(nbytes)
        if seconds is not None:
            entry.seconds = (entry.seconds or 0.0) + float(seconds)
        if fix and not entry.fix:
            entry.fix = fix
        return entry

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)


def signal_identity(sig: SignalDict) -> tuple[str, str, str]:
    """(kind, subject, reason) of a signal: how the steady diff matches cold and warm."""
    return (str(sig.get("kind", "")), str(sig.get("subject", "")), str(sig.get("reason", "")))


OVERHEAD_KINDS = ("fallback", "recompile", "compile", "host_bounce", "cast")


def steady_diff(cold: list[SignalDict], warm: list[SignalDict],
                again: set[tuple[str, str, str]] | None = None) -> dict[str, list[str]]:
    """What persists into the warm region, what is gone, what appeared; and, given the
    identities ``again`` seen in the next call of the warm work, which warm signals recur
    (``recurring``) and which were one-off work of the warm call (``one_off``).

    Only overhead signals with a non-zero count take part; entries read
    ``kind subject (reason) xN``. Without ``again`` every warm signal counts as recurring.
    """
    def index(sigs: list[SignalDict]) -> dict[tuple[str, str, str], int]:
        out: dict[tuple[str, str, str], int] = {}
        for s in sigs:
            if s.get("kind") in OVERHEAD_KINDS and (s.get("count") or 0) > 0:
                key = signal_identity(s)
                out[key] = out.get(key, 0) + int(s.get("count") or 0)
        return out

    def label(key: tuple[str, str, str], n: int) -> str:
        kind, subject, reason = key
        return f"{kind} {subject}" + (f" ({reason.splitlines()[0][:120]})" if reason else "") \
            + f" x{n}"

    a, b = index(cold), index(warm)
    return {
        "persists": [label(k, n) for k, n in b.items() if k in a],
        "appeared": [label(k, n) for k, n in b.items() if k not in a],
        "gone": [label(k, n) for k, n in a.items() if k not in b],
        "recurring": [label(k, n) for k, n in b.items() if again is None or k in again],
        "one_off": [label(k, n) for k, n in b.items() if again is not None and k not in again],
    }
