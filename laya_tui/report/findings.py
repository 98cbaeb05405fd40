"""A report's findings, as code scanning and pull-request annotations show them: each at its
call site, with the gates that fail on it and its state against the baseline.

Shared by ``--sarif`` (:mod:`laya_tui.report.sarif`) and ``--annotations``
(:mod:`laya_tui.report.annotations`); derived from the report document only. What is a
finding, and its rule: :mod:`laya_tui.report.rules`. Level: ``error`` for what a gate fails,
the rule's ``warning``/``note`` for the rest, ``none`` for a result gone since the baseline.
Paths are relative to the source root (:class:`Sources`). Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import cast

from laya_tui.core.report_types import ChangeDict, ReportDict, ResultDict, SignalDict
from laya_tui.core.results import COUNTED_KINDS, occurrences, signal_key
from laya_tui.core.shapes import as_dict, as_list
from laya_tui.report.finding_index import (
    BAD_STATES,
    FINDING_KINDS,
    BaselineIndex,
    GateIndex,
    SectionItem,
    baseline_index,
    gate_index,
    is_map,
    probe_state,
    signal_state,
    text_of,
    unique,
)
from laya_tui.report.rules import RULES, Rule, is_graph_break, probe_rule, rule_for_signal
from laya_tui.report.sarif_types import PropertyBag
from laya_tui.report.severity import rule_severity
from laya_tui.report.sources import Location, Sources
from laya_tui.report.views.text import past_limit

#: Related locations (the user stack, a kernel's buffers) kept per finding.
MAX_RELATED = 10
MESSAGE_CHARS = 600


@dataclass(slots=True)
class Finding:
    """One result: a finding signal, a probe that is not a pass, or one gone since the
    baseline (``state == "absent"``).

    The message, properties and related locations of a signal's finding are built when
    first read: a report of 100,000 signals has many more findings than a SARIF run keeps.
    """

    rule: Rule
    probe: str
    identity: tuple[str, ...]
    location: Location | None = None
    gates: list[str] = field(default_factory=list)
    state: str | None = None  # baselineState: new / unchanged / updated / absent
    order: int = 0
    sig: SignalDict | None = None  # the signal it is (None: a probe's state)
    change: SectionItem | None = None  # the baseline section's item for it
    sources: Sources | None = None
    text: str | None = None  # the message (built from ``sig`` when None)
    extra: PropertyBag | None = None  # the properties (built from ``sig`` when None)
    near: list[Location] | None = None  # the related locations (built when None)

    @property
    def message(self) -> str:
        """One line: what, where it was measured, the change since the baseline, the fix."""
        if self.text is None:
            self.text = signal_message(self.probe, self.sig or _NO_SIGNAL, self.rule,
                                       self.change["message"] if self.change else None)
        return self.text

    @property
    def props(self) -> PropertyBag:
        """Probe, kind, subject, count, bytes, value/limit and the baseline change."""
        if self.extra is None:
            self.extra = _props(self.probe, self.sig or _NO_SIGNAL)
            if self.change:
                self.extra["baseline"] = _change(self.change)
        return self.extra

    @property
    def related(self) -> list[Location]:
        """The user stack's outer frames and a kernel's buffers, in the source tree."""
        if self.near is None:
            self.near = _related(self.sources, self.sig) if self.sig and self.sources \
                else []
        return self.near

    @property
    def level(self) -> str:
        """``error`` when a gate fails on it, ``none`` when absent, else the rule's level."""
        if self.state == "absent":
            return "none"
        return "error" if self.gates else self.rule.level

    def fingerprint(self) -> str:
        """A hash of the identity (probe, kind, subject, reason): never of a line number."""
        text = "\x1f".join(self.identity)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def priority(self) -> tuple[int, int, int, int, int]:
        """Sort key: gated first, absent last; within, by severity (the table's order,
        :mod:`laya_tui.report.severity`), then new/updated against the baseline, warnings
        before notes, report order."""
        rank = {"error": 0, "warning": 1, "note": 2}.get(self.level, 3)
        head = 2 if self.state == "absent" else 0 if self.gates else 1
        return (head, rule_severity(self.rule.id, self.sig),
                0 if self.state in BAD_STATES else 1, rank, self.order)


#: What a finding without a signal reads as its signal (never: each is built with its
#: message and properties).
_NO_SIGNAL = cast(SignalDict, {})


# -- the findings ---------------------------------------------------------------------------

def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1] + "…"


def signal_message(pid: str, sig: SignalDict, rule: Rule,
                   change: str | None = None) -> str:
    """One line: what happened, the probe that measured it, what changed since the baseline
    (``change``), and the fix."""
    kind, subject, reason = sig.get("kind"), text_of(sig.get("subject")), text_of(
        sig.get("reason"))
    d = as_dict(sig.get("detail"))
    n = occurrences(sig if type(sig) is dict else dict(sig))
    if is_graph_break(sig):
        gb = d.get("graph_break_id")
        head = f"graph break {gb}: {reason}" if gb else f"graph break: {reason}"
        if d.get("explanation") and d.get("explanation") != reason:
            head += f" ({d['explanation']})"
    elif kind == "tolerance" and rule.id == "laya/kernel-output":
        head = (f"{subject}: output differs from reference: max error "
                f"{past_limit(sig.get('value'), sig.get('limit'))}"
                + (f" ({reason})" if reason else "") + f", under the file's {d.get('check')}")
    elif kind == "tolerance":
        head = f"tolerance {subject}: " + past_limit(sig.get("value"), sig.get("limit"),
                                                      sig.get("passed"))
    elif kind == "lowering" and rule.id in ("laya/kernel-build", "laya/kernel-run"):
        head = f"{subject}: {reason}"
    elif kind == "lowering":
        where = rule.id.removeprefix("laya/lowering").lstrip("/")
        head = f"{subject} does not lower" + (f" ({where})" if where else "") + f": {reason}"
    else:
        head = f"{kind} {subject}".rstrip() + (f" ({reason})" if reason else "")
    extra = []
    if kind in COUNTED_KINDS and n != 1:
        extra.append(f"{n}x")
    if isinstance(sig.get("bytes"), int) and sig["bytes"]:
        extra.append(_bytes(sig["bytes"]))
    text = head.rstrip(". ") + (f", {', '.join(extra)}" if extra else "") + f". Probe {pid}."
    if change:
        text += f" Since the baseline: {change}."
    if sig.get("fix"):
        text += f" Fix: {sig['fix']}"
    return _clip(text)


def _related(sources: Sources, sig: SignalDict) -> list[Location]:
    d = as_dict(sig.get("detail"))
    primary = _site(sources, sig)
    out: list[Location] = []
    seen = {(primary.path, primary.line)} if primary else set()
    stack = as_list(d.get("stack"))
    for i, frame in enumerate(stack):
        loc = sources.frame(frame, "where the finding occurred" if i == 0 else "called from")
        if loc and (loc.path, loc.line) not in seen:
            seen.add((loc.path, loc.line))
            out.append(loc)
    definition = d.get("kernel_site")
    if sig.get("site") and isinstance(definition, Mapping):  # where the kernel is defined
        loc = sources.site(definition, "the kernel's definition")
        if loc and (loc.path, loc.line) not in seen:
            seen.add((loc.path, loc.line))
            out.append(loc)
    for buf in as_list(d.get("buffers")):
        if isinstance(buf, Mapping):
            loc = sources.site(buf, f"buffer {buf.get('name')} ({buf.get('scope')}) "
                               "allocated here")
            if loc and (loc.path, loc.line) not in seen:
                seen.add((loc.path, loc.line))
                out.append(loc)
    return out[:MAX_RELATED]


def _props(pid: str, sig: SignalDict) -> PropertyBag:
    out: PropertyBag = {"probe": pid, "kind": sig.get("kind")}
    for k in ("subject", "count", "bytes", "value", "limit", "reason"):
        v = sig.get(k)
        if v is not None and (k != "value" or isinstance(v, (int, float))):
            out[k] = v
    d = as_dict(sig.get("detail"))
    if d.get("graph_break_id"):
        out["graph_break_id"] = d["graph_break_id"]
    return out


def _merged(found: Iterator[Finding]) -> list[Finding]:
    """One finding per (rule, identity, place) of a probe: the same cast or fallback seen at
    several library lines (now one user line) or in several regions is one result, its
    occurrences and bytes summed, not the same result twice."""
    out: list[Finding] = []
    #: (rule, identity, (path, line) or None) -> the first finding of that key
    first: dict[tuple[str, tuple[str, ...], tuple[str, int | None] | None], Finding] = {}
    for f in found:
        place = (f.location.path, f.location.line) if f.location else None
        key = (f.rule.id, f.identity, place)
        head = first.get(key)
        if head is None or f.sig is None or head.sig is None:
            first.setdefault(key, f)
            out.append(f)
            continue
        sig: SignalDict = {**head.sig}
        n = occurrences(sig) + occurrences(dict(f.sig))
        if sig.get("kind") in COUNTED_KINDS:
            sig["count"] = n
        mine, theirs = sig.get("bytes"), f.sig.get("bytes")
        if isinstance(mine, int) and isinstance(theirs, int):
            sig["bytes"] = mine + theirs
        head.sig, head.text, head.extra = sig, None, None
        head.gates = unique(head.gates + f.gates)
    return out


def _user_frame(sources: Sources, sig: SignalDict) -> Location | None:
    """The innermost frame of the signal's stack that lies in the user's files."""
    for frame in as_list(as_dict(sig.get("detail")).get("stack")):
        loc = sources.frame(frame) if isinstance(frame, str) else \
            sources.site(frame) if isinstance(frame, Mapping) else None
        if loc is not None:
            return loc
    return None


def _probe_file(sources: Sources, probe: ResultDict) -> Location | None:
    """The probe's file, when it is the user's (a probe file of the workspace)."""
    return sources.site({"file": probe.get("file")}) if probe.get("file") else None


def _failure_site(sources: Sources, probe: ResultDict) -> Location | None:
    """Where a failed probe's own signals place its failure in the user's files (the
    failing step's site: an export's log), when one does."""
    for sig in probe.get("signals") or ():
        if is_map(sig) and sig.get("kind") not in ("environment", "artifact", "timing"):
            loc = _site(sources, sig)
            if loc is not None:
                return loc
    return None


#: ``explain/model:mypkg.models:build[eager]``, ``aoti/model[mypkg.models:build]``.
_MODEL_CELL = re.compile(r"^(?:explain|aoti)/model(?::|\[)([\w.]+):(\w+)")


def _model_factory(sources: Sources, pid: str) -> Location | None:
    """The ``def`` of the ``--model MODULE:CALLABLE`` a model cell examines, in the
    workspace (``MODULE`` a file or a package, also under ``src/``): where a finding about
    the whole model (its output out of tolerance) is the user's to read."""
    m = _MODEL_CELL.match(pid)
    if m is None:
        return None
    module, name = m.groups()
    rel = module.replace(".", os.sep)
    at = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(|^{re.escape(name)}\s*=")
    for base in (sources.workspace, os.path.join(sources.workspace, "src")):
        for path in (os.path.join(base, rel + ".py"), os.path.join(base, rel, "__init__.py")):
            try:
                with open(path, encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            line = next((i for i, text in enumerate(lines, 1) if at.match(text)), None)
            return sources.site({"file": path, "line": line, "func": name})
    return None


def _fallback_location(sources: Sources, file: str | None) -> Location | None:
    """The probe's ``file``, else the workspace's pyproject.toml (what asked for the run)."""
    loc = sources.site({"file": file}) if file else None
    return loc or sources.site({"file": os.path.join(sources.workspace, "pyproject.toml")})


def _change(item: ChangeDict | None) -> PropertyBag | None:
    if not item:
        return None
    return {k: item.get(k) for k in ("change", "before", "after", "message")}


def collect_findings(report: ReportDict, sources: Sources,
                     baseline: ReportDict | None = None) -> list[Finding]:
    """Every finding of ``report``, in report order (see the module docstring).

    ``baseline``: the baseline report itself, when it could be read; its statuses and
    signals make the states of probe-level findings exact and place absent findings at
    their old sites. Without it, states come from the report's baseline section alone.
    """
    gates = gate_index(report)
    section = report.get("baseline")
    base = baseline_index(section, baseline) if isinstance(section, Mapping) else None
    out: list[Finding] = []
    probes: dict[str, ResultDict] = {}
    for p in report.get("probes") or ():
        if isinstance(p, Mapping) and isinstance(p.get("id"), str):
            probes[p["id"]] = p
            out.extend(_merged(_probe_findings(p, gates, base, sources)))
    for err in report.get("errors") or ():
        if isinstance(err, Mapping):
            loc = sources.site({"file": err.get("file"), "line": err.get("line")})
            msg = _clip(f"probe file {err.get('file')} does not import: {err.get('error')}")
            out.append(Finding(RULES["laya/probe-file"], "",
                               ("", "probe-file", text_of(err.get("file")), ""), loc,
                               list(gates.files), "new" if base else None, text=msg,
                               extra={"file": err.get("file")}))
    if base:
        out.extend(_absent(base, probes, sources))
    for i, f in enumerate(out):
        f.order = i
    return out


def _probe_findings(p: ResultDict, gates: GateIndex, base: BaselineIndex | None,
                    sources: Sources) -> Iterator[Finding]:
    pid = str(p["id"])
    found: list[Finding] = []
    for sig in p.get("signals") or ():
        if not is_map(sig) or sig.get("kind") not in FINDING_KINDS:
            continue
        key = signal_key(sig, pid)
        on = gates.for_signal(key)
        rule = rule_for_signal(sig, drifted=bool(on) and key[1] == "tolerance")
        if rule is None:
            continue
        state, item = signal_state(base, key) if base else (None, None)
        # in the user's code: the site, else the nearest user frame of its stack; else the
        # finding has no place and SARIF makes it a run-level notification
        loc = (_site(sources, sig) or _user_frame(sources, sig) or _probe_file(sources, p)
               or _model_factory(sources, pid))
        found.append(Finding(rule, pid, key, loc, on, state, sig=sig, change=item,
                             sources=sources))
    status = _status_findings(p, len(found), gates, base, sources)
    on_probe = _probe_gates(p, gates)
    if found and on_probe and not status:  # a gate on the failed probe: its findings carry it
        for f in found:
            f.gates = unique(f.gates + on_probe)
    yield from found
    yield from status


def _site(sources: Sources, sig: SignalDict) -> Location | None:
    """The signal's site in the source tree (a lowering cell's: the kernel's line)."""
    loc = sources.site(sig.get("site"))
    if loc is None:
        loc = sources.site(as_dict(sig.get("detail")).get("kernel_site"))
    return loc


_WORDS = {"error": "could not be examined", "crashed": "crashed", "timeout": "timed out",
          "raised": "raised", "failed": "failed", "skipped": "was skipped"}


def _probe_gates(p: ResultDict, gates: GateIndex) -> list[str]:
    """The failed gates that name the probe itself (its status, a crash, a baseline status
    change)."""
    return unique(list(gates.probes.get(str(p["id"]), ()))
                   + list(gates.statuses.get(str(p.get("status")), ())))


def _status_findings(p: ResultDict, n_signals: int, gates: GateIndex,
                     base: BaselineIndex | None, sources: Sources) -> list[Finding]:
    """The probe-level findings: could not be examined, crashed, timed out, raised; a
    failed probe when no finding signal of its own carries it (gated or not), a skipped one
    only when a gate names it."""
    pid, status = str(p["id"]), str(p.get("status"))
    on = _probe_gates(p, gates)
    out: list[Finding] = []
    states = []
    if status in ("error", "crashed", "timeout"):
        states.append(status)
    err = p.get("error") if isinstance(p.get("error"), Mapping) else None
    if err is not None and status != "error":
        states.append("raised")
    if not states and status in ("failed", "skipped") and on and (
            status == "skipped" or not n_signals):
        states.append(status)  # gated, and no finding of its own carries the gate
    elif not states and status == "failed" and not n_signals:
        # a finding no gate reads, with no finding signal to carry it (an aoti export that
        # fails: a log signal): the summary, markdown and JUnit list it, so SARIF does too
        states.append(status)
    reason = text_of(p.get("reason")).strip()
    first = reason.splitlines()[0] if reason else ""
    for state in states:
        loc = (sources.site(err.get("site")) if err is not None and state == "raised"
               else _failure_site(sources, p) if state == "failed"
               else None) or _model_factory(sources, pid) \
            or _fallback_location(sources, p.get("file"))
        msg = _clip(f"probe {pid} {_WORDS[state]}" + (f": {first}" if first else ""))
        props: PropertyBag = {"probe": pid, "status": status}
        item = base.status_items.get(pid) if base else None
        if item:
            props["baseline"] = _change(item)
        out.append(Finding(probe_rule(state), pid, (pid, "probe", state, ""), loc, on,
                           probe_state(base, pid, state) if base else None, text=msg,
                           extra=props))
    return out


def _absent(base: BaselineIndex, probes: Mapping[str, ResultDict],
            sources: Sources) -> Iterator[Finding]:
    """Findings of the baseline that this run no longer has: signals gone or now passing
    in a compared probe, and probe states (could not be examined, crashed, timed out,
    raised) a probe of both runs no longer has."""
    for item in base.gone:
        pid, kind = text_of(item.get("probe")), text_of(item.get("kind"))
        subject, reason = text_of(item.get("subject")), text_of(item.get("reason"))
        probe = probes.get(pid)
        if kind == "lowering":
            before = as_dict(item.get("before"))
            reason = text_of(before.get("reason"))
            old = base.failing_cells.get((pid, subject))
        else:
            old = base.signals.get((pid, kind, subject, reason))
        sig: dict[str, object] = dict(old) if old else {}  # the old signal, as it is now
        sig.update(kind=kind, subject=subject, reason=reason, passed=False)
        sig.pop("count", None)
        rule = rule_for_signal(sig)
        if rule is None:
            continue
        loc = (_site(sources, old) if old else None) or _fallback_location(
            sources, probe.get("file") if probe else None)
        yield Finding(rule, pid, (pid, kind, subject, reason), loc, [], "absent",
                      text=_clip(f"fixed since the baseline: {item.get('message')}. "
                                 f"Probe {pid}."),
                      extra={"probe": pid, "kind": kind, "baseline": _change(item)})
    if base.statuses is None:
        return
    for pid, (old_status, old_raised) in base.statuses.items():
        p = probes.get(pid)
        if p is None:
            continue  # not run this time: not examined, so not fixed either
        now_raised = is_map(p.get("error"))
        for state, had, has in (
                (old_status, old_status in ("error", "crashed", "timeout"),
                 p.get("status") == old_status),
                ("raised", old_raised and old_status != "error", now_raised)):
            if had and not has:
                yield Finding(probe_rule(state), pid, (pid, "probe", state, ""),
                              _fallback_location(sources, p.get("file")), [], "absent",
                              text=_clip(f"fixed since the baseline: probe {pid} no longer "
                                         f"{_WORDS[state]} (now {p.get('status')})"),
                              extra={"probe": pid, "status": p.get("status")})


def prioritised(findings: list[Finding]) -> list[Finding]:
    """Gated first, then new/updated against the baseline, then by level; absent last."""
    return sorted(findings, key=Finding.priority)
