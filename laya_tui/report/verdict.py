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
from typing import Any

from laya_tui.core.results import failing

#: ``detail.outcome`` of a lowering cell that passed without running.
NOT_RUN_OUTCOMES = ("built", "lowered")
#: How to gate findings, said wherever ungated ones are counted.
GATE_HINT = ("to fail on them: --fail-on failed, or record a baseline (--json base.json, then "
             "--baseline base.json) so only new ones fail")


def gate_hint(n: int) -> str:
    """``they do not fail the run; to fail on them: ...`` (``it``/``them`` for one)."""
    if n == 1:
        return "it does not fail the run; " + GATE_HINT.replace("on them", "on it", 1)
    return "they do not fail the run; " + GATE_HINT


def not_run(probe: Mapping[str, Any]) -> str | None:
    """Why an ``ok`` cell was lowered or built but never run (``"no GPU"``, from its
    lowering signal's ``detail.not_run``); None for a cell that ran or did not pass."""
    if probe.get("status") != "ok":
        return None
    for sig in probe.get("signals") or ():
        if sig.get("kind") != "lowering":
            continue
        detail = sig.get("detail")
        if isinstance(detail, Mapping) and detail.get("outcome") in NOT_RUN_OUTCOMES:
            if detail.get("not_run"):
                return str(detail["not_run"])
            # a report written before ``not_run``: the cell's own words said why
            skipped = str(detail.get("run_skipped") or "")
            return "no GPU" if "torch.cuda.is_available() is False" in skipped else "not run"
    return None


def not_run_counts(probes: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{cause: cells}`` of the cells built but not run, most first."""
    counts = Counter(why for why in map(not_run, probes) if why)
    return dict(counts.most_common())


def not_run_text(why: Mapping[str, int]) -> str:
    """``9 built, not run: no GPU`` (or ``9 built, not run: no GPU 7, no nvcc 2``)."""
    n = sum(why.values())
    if len(why) == 1:
        return f"{n} built, not run: {next(iter(why))}"
    return f"{n} built, not run: " + ", ".join(f"{k} {v}" for k, v in why.items())


def finding_kind(probe: Mapping[str, Any]) -> str:
    """What a failed probe found, in one word: its first failing signal's kind
    (``lowering``, ``tolerance``), else its family (``aoti``: an export that failed)."""
    for sig in probe.get("signals") or ():
        if failing(sig):
            return str(sig.get("kind"))
    return str(probe.get("family") or "probe")


def ungated_probes(probes: Iterable[Mapping[str, Any]],
                   gates: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
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


def ungated(probes: Iterable[Mapping[str, Any]],
            gates: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{kind: probes}`` of :func:`ungated_probes`, most first."""
    return dict(Counter(finding_kind(p) for p in ungated_probes(probes, gates)).most_common())


def ungated_text(kinds: Mapping[str, int]) -> str:
    """``14 findings no gate reads (lowering 9, aoti 5)``."""
    n = sum(kinds.values())
    what = ", ".join(f"{k} {v}" for k, v in kinds.items())
    return f"{n} finding{'s' if n != 1 else ''} no gate reads ({what})"



def verdict_notes(report: Mapping[str, Any]) -> list[str]:
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


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def describe_failure(gate: str, entry: dict[str, Any]) -> str:
    """One line for one failure entry of ``gate`` (JUnit messages, markdown, stderr)."""
    if "message" in entry:
        return str(entry["message"])
    if gate == "tolerance":
        return (f"tolerance {entry.get('subject') or ''}: {_fmt(entry.get('value'))} > limit "
                f"{_fmt(entry.get('limit'))}").replace("  ", " ")
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
