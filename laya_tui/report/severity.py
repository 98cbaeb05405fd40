"""How severe a signal, a probe or a finding is: the one order every output lists them in
(issue 42, 'Findings first').

Lower is more severe. Findings come first: a probe that could not examine its subject
(or crashed, or timed out), an output outside its tolerance or a check that failed, then
fallbacks and graph breaks, recompiles, host bounces and casts. What is not a finding
comes after them: checks that passed, facts (timings, artifacts, logs, first compiles),
counted kinds that did not occur (count 0) and, last, the environment.

Used by the signal table's default order, ``--markdown``, ``--annotations``/``--sarif``
and ``diff --pr-comment``. Standard library only, and cheap: the table ranks 200,000 rows
with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import IntEnum

from laya_tui.core.report_types import ResultDict, SignalDict
from laya_tui.core.results import SignalLike, failing


class Severity(IntEnum):
    """The bands, most severe first; a band below :attr:`PASSED` is a finding."""

    NOT_EXAMINED = 0  # could not be examined, crashed, timed out
    FAILED_CHECK = 1  # output outside its tolerance, ranks diverge, does not lower
    FALLBACK = 2  # fallbacks and graph breaks
    RECOMPILE = 3
    HOST_BOUNCE = 4
    CAST = 5
    OTHER = 6  # a finding of no band above (a probe that failed without a failing signal)
    PASSED = 7  # a check that passed
    FACT = 8  # timing, artifact, log, a frame's first compile
    ZERO = 9  # a counted kind that did not occur (count 0)
    ENVIRONMENT = 10


#: The band of a counted kind that occurred.
_COUNTED: dict[str, Severity] = {
    "fallback": Severity.FALLBACK, "recompile": Severity.RECOMPILE,
    "host_bounce": Severity.HOST_BOUNCE, "cast": Severity.CAST,
}
_CHECKS = frozenset(("tolerance", "lowering"))
#: Probe statuses and the band of the probe (a ``failed`` probe: its worst signal's band).
_STATUS: dict[str, Severity] = {
    "error": Severity.NOT_EXAMINED, "crashed": Severity.NOT_EXAMINED,
    "timeout": Severity.NOT_EXAMINED, "raised": Severity.NOT_EXAMINED,
}
#: The band of a finding of each kind (a ``diff`` item's kind; ``probe``: a cell that broke).
KIND_SEVERITY: dict[str, Severity] = {
    "probe": Severity.NOT_EXAMINED, "tolerance": Severity.FAILED_CHECK,
    "lowering": Severity.FAILED_CHECK, **_COUNTED,
}


def severity(kind: object, is_failing: bool, count: object) -> Severity:
    """The band of a signal of ``kind`` that states a failure (``is_failing``) and carries
    ``count`` (None: absent, one occurrence)."""
    if is_failing:
        return Severity.FAILED_CHECK
    band = _COUNTED.get(kind) if isinstance(kind, str) else None
    if band is not None:
        return Severity.ZERO if count == 0 and type(count) is int else band
    if kind == "environment":
        return Severity.ENVIRONMENT
    return Severity.PASSED if kind in _CHECKS else Severity.FACT


def signal_severity(sig: SignalLike) -> Severity:
    """The band of one signal (a report's dict or a frozen ``Signal``)."""
    return severity(sig.get("kind"), failing(sig), sig.get("count"))


def is_finding(band: int) -> bool:
    """Whether a band is a finding's (not a passed check, a fact or nothing that occurred)."""
    return band < Severity.PASSED


def probe_severity(probe: ResultDict) -> Severity:
    """A probe's band: not examined / crashed / timed out, else its worst signal's, and a
    ``failed`` probe is a finding at least (:attr:`Severity.OTHER`)."""
    band = _STATUS.get(str(probe.get("status")))
    if band is not None:
        return band
    sigs: Iterable[object] = probe.get("signals") or ()
    worst = min((signal_severity(s) for s in sigs if isinstance(s, Mapping)),
                default=Severity.ENVIRONMENT)
    if probe.get("status") == "failed":
        return min(worst, Severity.OTHER)
    return worst


#: The band of a probe-state finding, by its rule (``report.rules.PROBE_RULES``).
_RULE_BAND: dict[str, Severity] = {
    "laya/not-examined": Severity.NOT_EXAMINED, "laya/probe/crashed": Severity.NOT_EXAMINED,
    "laya/probe/timeout": Severity.NOT_EXAMINED, "laya/probe/raised": Severity.NOT_EXAMINED,
}


def rule_severity(rule_id: str, sig: SignalDict | None) -> Severity:
    """A SARIF/annotation finding's band: its signal's (a check that passed but a baseline
    gate fails on: its kind's), else (a probe's state) its rule's."""
    if sig is None:
        return _RULE_BAND.get(rule_id, Severity.OTHER)
    band = signal_severity(sig)
    return band if is_finding(band) else KIND_SEVERITY.get(str(sig.get("kind")), Severity.OTHER)
