"""What a report says about its findings before they are built: which failed gates name
which signal or probe (:class:`GateIndex`), and what the baseline section (and the baseline
report, when it can be read) says about each (:class:`BaselineIndex`). Used by
:mod:`laya_tui.report.findings`. Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from laya_tui.core.report_types import BaselineDict, ChangeDict, ReportDict, SignalDict
from laya_tui.core.results import COUNTED_KINDS, SignalKey, failing, signal_key

#: Baseline states that are bad news (new or changed since the baseline).
BAD_STATES = ("new", "updated")


# -- which gates fail on what ----------------------------------------------------------------

@dataclass
class GateIndex:
    """The failed gates by what they name: a signal's identity, a check (probe, kind,
    subject), a kind (``--max``), a probe, a status (``--fail-on failed``), probe files."""

    signals: dict[SignalKey, list[str]] = field(default_factory=dict)
    checks: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    kinds: dict[str, list[str]] = field(default_factory=dict)
    probes: dict[str, list[str]] = field(default_factory=dict)
    statuses: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def for_signal(self, key: SignalKey) -> list[str]:
        """The failed gates that name the signal of identity ``key``."""
        pid, kind, subject, _ = key
        out = self.signals.get(key)
        checks = self.checks.get((pid, kind, subject)) if kind in _CHECKS else None
        kinds = self.kinds.get(kind)
        if not (checks or kinds):
            return list(out) if out else []
        if not (out or checks) and kinds:
            return list(kinds)
        return unique([*(out or ()), *(checks or ()), *(kinds or ())])


_CHECKS = frozenset(("tolerance", "lowering"))
#: Kinds a finding can be of (the rest are facts); see report.rules.rule_for_signal.
FINDING_KINDS = frozenset(("fallback", "recompile", "host_bounce", "cast", "lowering",
                            "tolerance"))


def is_map(value: object) -> bool:
    """A JSON object (the dict test first: it is the common case and the cheap one)."""
    return type(value) is dict or isinstance(value, Mapping)


def text_of(value: object) -> str:
    """A field as the text of a signal key (None -> "")."""
    return value if isinstance(value, str) else ("" if value is None else str(value))


def unique(names: list[str]) -> list[str]:
    """``names`` without repeats, in order."""
    return list(dict.fromkeys(names))


def gate_index(report: ReportDict) -> GateIndex:
    """Index the report's failed gates by what each failure entry names."""
    idx = GateIndex()
    for g in report.get("gates") or ():
        if not isinstance(g, Mapping) or g.get("passed"):
            continue
        name = str(g.get("name"))
        fails = [f for f in g.get("failures") or () if isinstance(f, Mapping)]
        if name in ("no-crash", "no-timeout", "no-probe-error"):
            for f in fails:
                idx.probes.setdefault(text_of(f.get("probe")), []).append(name)
        elif name == "tolerance":
            for f in fails:
                key = (text_of(f.get("probe")), "tolerance", text_of(f.get("subject")))
                idx.checks.setdefault(key, []).append(name)
        elif name.startswith(("fail-on:", "max:")):
            kind = name.partition(":")[2]
            if kind in ("failed", "skipped"):
                idx.statuses.setdefault(kind, []).append(name)
            elif name.startswith("max:"):
                idx.kinds.setdefault(kind, []).append(name)
            else:
                for f in fails:
                    skey = (text_of(f.get("probe")), kind, text_of(f.get("subject")),
                            text_of(f.get("reason")))
                    idx.signals.setdefault(skey, []).append(name)
        elif name == "probe-files":
            idx.files.append(name)
        elif name == "baseline":
            for f in fails:
                _baseline_gate(idx, f, name)
    return idx


def _baseline_gate(idx: GateIndex, item: Mapping[str, object], name: str) -> None:
    pid, kind = text_of(item.get("probe")), text_of(item.get("kind"))
    if kind == "probe":
        idx.probes.setdefault(pid, []).append(name)
    elif kind == "lowering":
        idx.checks.setdefault((pid, kind, text_of(item.get("subject"))), []).append(name)
    else:
        key = (pid, kind, text_of(item.get("subject")), text_of(item.get("reason")))
        idx.signals.setdefault(key, []).append(name)


# -- the baseline's view of each finding -----------------------------------------------------

class SectionItem(ChangeDict):
    """A baseline section's change with the list it sits in (``cls``: regressions,
    improvements or notes)."""

    cls: str


@dataclass
class BaselineIndex:
    """The baseline section's changes by key, and (when the baseline report could be read)
    its probe statuses and signals."""

    changes: dict[SignalKey, SectionItem] = field(default_factory=dict)
    cells: dict[tuple[str, str], SectionItem] = field(default_factory=dict)
    not_compared: set[str] = field(default_factory=set)
    gone: list[ChangeDict] = field(default_factory=list)
    statuses: dict[str, tuple[str, bool]] | None = None  # probe -> (status, raised)
    signals: dict[SignalKey, SignalDict] = field(default_factory=dict)
    failing_cells: dict[tuple[str, str], SignalDict] = field(default_factory=dict)
    status_items: dict[str, SectionItem] = field(default_factory=dict)


def baseline_index(section: BaselineDict, doc: ReportDict | None) -> BaselineIndex:
    """Index the baseline section (``doc``: the baseline report, None when unreadable)."""
    idx = BaselineIndex()
    for cls, items in (("regressions", section.get("regressions")),
                       ("improvements", section.get("improvements")),
                       ("notes", section.get("notes"))):
        for item in items or ():
            if not isinstance(item, Mapping):
                continue
            pid, kind = text_of(item.get("probe")), text_of(item.get("kind"))
            change = text_of(item.get("change"))
            if change == "not-compared":
                idx.not_compared.add(pid)
            elif kind == "probe" and change == "status":
                idx.status_items[pid] = {**item, "cls": cls}
            elif kind == "lowering" and change != "gone-check":
                idx.cells[(pid, text_of(item.get("subject")))] = {**item, "cls": cls}
            elif (kind in COUNTED_KINDS or kind == "tolerance") and change != "gone-check":
                key = (pid, kind, text_of(item.get("subject")), text_of(item.get("reason")))
                idx.changes[key] = {**item, "cls": cls}
            if cls == "improvements" and change in ("gone", "now-passing"):
                idx.gone.append({**item})
    if doc is not None:
        idx.statuses = {}
        gone = {text_of(i.get("probe")) for i in idx.gone}  # where old signals are looked up
        for p in doc.get("probes") or ():
            if not (is_map(p) and isinstance(p.get("id"), str)):
                continue
            pid = p["id"]
            idx.statuses[pid] = (str(p.get("status")), is_map(p.get("error")))
            if pid not in gone:
                continue
            for s in p.get("signals") or ():
                if is_map(s):
                    idx.signals.setdefault(signal_key(s, pid), s)
                    if s.get("kind") == "lowering" and failing(s):
                        idx.failing_cells.setdefault((pid, text_of(s.get("subject"))), s)
    return idx


def signal_state(b: BaselineIndex, key: SignalKey) -> tuple[str, SectionItem | None]:
    """The baselineState of a present signal finding, and the section's item for it."""
    pid, kind, subject, _ = key
    if pid in b.not_compared or (b.statuses is not None and pid not in b.statuses):
        return "new", None
    if kind == "lowering":
        item = b.cells.get((pid, subject))
        if item is None:
            return "unchanged", None
        return ("new" if item["change"] == "now-failing" else "updated"), item
    item = b.changes.get(key)
    if item is None:
        return "unchanged", None
    return ("new" if item["change"] in ("new", "now-failing") else "updated"), item


def probe_state(b: BaselineIndex, pid: str, state: str) -> str:
    """The baselineState of a probe-level finding (``state``: a status, or raised)."""
    if b.statuses is None:  # only the section: a status change from ok, or a new probe
        item = b.status_items.get(pid)
        return "new" if (item and item["cls"] == "regressions") or pid in b.not_compared \
            else "unchanged"
    old = b.statuses.get(pid)
    if old is None:
        return "new"
    had = old[1] if state == "raised" else old[0] == state
    return "unchanged" if had else "new"
