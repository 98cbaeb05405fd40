"""What a verdict does not say by itself, said next to it (docs/architecture.md, 'Gates and
exit codes'): cells built but never run (a ``cuda`` kernel on a machine without a GPU is
lowered and built, not run: no output was compared), and findings no gate reads (a failed
lowering or export is a finding; the default gates fail only on crashes, timeouts, probe
errors and failed tolerances). The summary, the markdown, the JUnit file, the HTML page and
the dashboard header all take their words from here.

Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from laya_tui.core.report_types import GateDict, ReportDict, ResultDict
from laya_tui.core.results import failing
from laya_tui.report.views.legend import (
    NOT_RUN_OUTCOMES,
    STATE_MARKS,
    State,
    not_run,
    not_run_state,
    state_counts,
)
from laya_tui.report.views.text import past_limit

__all__ = ["NOT_RUN_OUTCOMES", "not_run", "verdict_line", "verdict_parts"]

#: How to gate findings, said wherever ungated ones are counted.
GATE_HINT = ("to fail on them: --fail-on failed, or record a baseline (--json base.json, then "
             "--baseline base.json) so only new ones fail")


def gate_hint(n: int) -> str:
    """``they do not fail the run; to fail on them: ...`` (``it``/``them`` for one)."""
    if n == 1:
        return "it does not fail the run; " + GATE_HINT.replace("on them", "on it", 1)
    return "they do not fail the run; " + GATE_HINT


def not_run_counts(probes: Iterable[ResultDict]) -> dict[str, int]:
    """``{cause: cells}`` of the cells built but not run, most first."""
    counts = Counter(why for why in map(not_run, probes) if why)
    return dict(counts.most_common())


def not_run_text(why: Mapping[str, int]) -> str:
    """``9 built, not run: no GPU`` (or ``9 built, not run: no GPU 7, no nvcc 2``)."""
    n = sum(why.values())
    if len(why) == 1:
        return f"{n} built, not run: {next(iter(why))}"
    return f"{n} built, not run: " + ", ".join(f"{k} {v}" for k, v in why.items())


def finding_kind(probe: ResultDict) -> str:
    """What a failed probe found, in one word: its first failing signal's kind
    (``lowering``, ``tolerance``), else its family (``aoti``: an export that failed)."""
    for sig in probe.get("signals") or ():
        if failing(sig):
            return str(sig.get("kind"))
    return str(probe.get("family") or "probe")


def ungated_probes(probes: Iterable[ResultDict],
                   gates: Iterable[GateDict]) -> list[ResultDict]:
    """The failed probes (findings) that no gate reads: none names them, no ``fail-on`` or
    ``max`` gate covers ``failed`` or their kind, and there is no baseline gate (which
    reads every finding: only new ones fail)."""
    covered: set[str] = set()
    named: set[str] = set()
    for g in gates:
        name = str(g.get("name", ""))
        if name == "baseline":
            return []
        head, _, kind = name.partition(":")
        if head in ("fail-on", "max"):
            covered.add(kind)
        if not g.get("passed", True):
            named |= {f["probe"] for f in g.get("failures") or ()
                      if isinstance(f, Mapping) and f.get("probe")}
    if "failed" in covered:
        return []
    return [p for p in probes if p.get("status") == "failed" and p.get("id") not in named
            and finding_kind(p) not in covered]


def ungated(probes: Iterable[ResultDict],
            gates: Iterable[GateDict]) -> dict[str, int]:
    """``{kind: probes}`` of :func:`ungated_probes`, most first; between kinds of as many,
    the most severe first (report.severity: the markdown table's order)."""
    from laya_tui.report.severity import probe_severity

    found = sorted(ungated_probes(probes, gates), key=probe_severity)
    return dict(Counter(finding_kind(p) for p in found).most_common())


def ungated_text(kinds: Mapping[str, int]) -> str:
    """``14 findings no gate reads (lowering 9, aoti 5)``."""
    n = sum(kinds.values())
    what = ", ".join(f"{k} {v}" for k, v in kinds.items())
    return f"{n} finding{'s' if n != 1 else ''} no gate reads ({what})"



#: The short way to gate findings, in the verdict line.
GATE_SHORT = "gate them: --fail-on failed, or a baseline"


def _causes(causes: Mapping[str, int]) -> str:
    """``no GPU`` / ``no GPU 3, no nvcc 1``."""
    if len(causes) == 1:
        return next(iter(causes))
    return ", ".join(f"{k} {v}" for k, v in causes.items())


def verdict_parts(passed: bool | None, states: Mapping[str, int], ungated_n: int,
                  causes: Mapping[str, int]) -> list[str]:
    """The verdict line's parts: the gate verdict (None: not decided yet), the findings and
    how many no gate reads, the cells built but not run or not compared (with why), the
    crashed and timed-out ones, the cells not examined (always said, 0 too), and last how
    to gate the findings no gate reads.

    ``states``: :func:`laya_tui.report.views.legend.state_counts`; ``causes``: ``{why:
    cells}`` of the cells built but not run or compared (:func:`not_run_counts`)."""
    parts = ["…" if passed is None else ("PASS" if passed else "FAIL")]
    findings = states.get(State.FINDING, 0)
    loose = min(ungated_n, findings) if findings else 0
    noun = "finding" if findings == 1 else "findings"
    if findings and loose == findings:
        parts.append(f"{findings} {noun} not gated")
    elif loose:
        parts.append(f"{findings} {noun}, {loose} not gated")
    else:
        parts.append(f"{findings} {noun}")
    for state in (State.NOT_RUN, State.NOT_COMPARED):
        n = states.get(state, 0)
        if n:
            why = {k: v for k, v in causes.items()
                   if not_run_state(k) == state and k != "not run"}  # (an old report's)
            parts.append(f"{n} {STATE_MARKS[state].word}" + (f" ({_causes(why)})" if why else ""))
    for state in (State.CRASHED, State.TIMEOUT):
        if states.get(state):
            parts.append(f"{states[state]} {STATE_MARKS[state].word}")
    parts.append(f"{states.get(State.NOT_EXAMINED, 0)} {STATE_MARKS[State.NOT_EXAMINED].word}")
    if loose:  # the advice after the counts: a narrow screen cuts it, not them
        parts.append(GATE_SHORT)
    return parts


def verdict_line(report: ReportDict) -> str:
    """``PASS · 10 findings not gated · 4 built, not run (no GPU) · 0 not examined · gate
    them: ...``: what the headless summary, markdown and the step summary lead with."""
    s = report.get("summary") or {}
    probes = report.get("probes") or []
    given = s.get("states")
    states: Mapping[str, int] = given if isinstance(given, Mapping) else state_counts(probes)
    return " · ".join(verdict_parts(bool(s.get("passed")), states,
                                    findings_not_gated(report), not_run_counts(probes)))


def findings_not_gated(report: ReportDict) -> int:
    """How many findings no gate reads (a PASS beside them is not plain green anywhere)."""
    s = report.get("summary") or {}
    if isinstance(s.get("ungated"), Mapping):
        return int(s["ungated"].get("count", 0) or 0)
    # an older report (its summary normalised on reading may already hold "states"):
    # counted from its probes and gates
    return len(ungated_probes(report.get("probes") or [], report.get("gates") or []))


def verdict_notes(report: ReportDict) -> list[str]:
    """The lines a page or a header shows beside the verdict (from the report's summary)."""
    s = report.get("summary") or {}
    notes = []
    if s.get("not_run"):
        notes.append(f"{not_run_text(s['not_run']['why'])}: nothing compared for them")
    if s.get("ungated"):
        notes.append(f"{ungated_text(s['ungated']['kinds'])}: "
                     f"{gate_hint(s['ungated']['count'])}")
    return notes


#: Probe statuses that ``--fail-on`` / ``--max`` accept beside the signal kinds.
STATUS_KINDS: tuple[str, ...] = ("failed", "skipped")


def describe_failure(gate: str, entry: Mapping[str, object]) -> str:
    """One line for one failure entry of ``gate`` (JUnit messages, markdown, stderr)."""
    if "message" in entry:
        return str(entry["message"])
    if gate == "tolerance":
        return (f"tolerance {entry.get('subject') or ''}: "
                f"{past_limit(entry.get('value'), entry.get('limit'))}").replace("  ", " ")
    if gate.startswith("max:"):
        return f"{entry['kind']}: {entry['count']} occurrences > max {entry['limit']}"
    if gate == "probe-files":
        return f"{entry.get('file')}: {entry.get('reason')}"
    if gate.startswith("fail-on:"):
        kind = gate.partition(":")[2]
        if kind in STATUS_KINDS:
            return f"probe {kind}: {entry.get('reason') or ''}".rstrip(": ")
        text = kind + (f" {entry['subject']}" if entry.get("subject") else "")
        if entry.get("count", 1) != 1:
            text += f" x{entry['count']}"
        return text + (f": {entry['reason']}" if entry.get("reason") else "")
    status = {"no-crash": "crashed", "no-timeout": "timeout", "no-probe-error": "raised"}
    head = status.get(gate, gate)
    return f"{head}: {entry.get('reason')}" if entry.get("reason") else head
