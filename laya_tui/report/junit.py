"""``--junit PATH``: the report as JUnit XML, so CI systems show probe cells natively.

One ``<testsuite>`` per probe family, one ``<testcase>`` per probe cell (classname = family,
name = the cell's id inside it). A cell named by a failed gate gets one ``<failure>`` (type
= the gates it failed, message = the first failure and how many more, body = every one); a
cell with status ``error`` (the probe could not examine its subject: kernel arguments
unknown, a file that does not import) gets an ``<error type="not-examined">`` instead of
the ``no-probe-error`` failure, counted in ``errors``, since nothing was found about the
subject; a skipped cell gets ``<skipped>`` with its reason, and so does a cell built but not
run (``built, not run: no GPU``). A suite's ``time`` is its family's wall span, the root's
the run's wall time. Gates that are not about one cell (``max:KIND``, ``probe-files``) form
a last suite, ``laya-tui.gates``. Follows the Jenkins xUnit ``junit-10.xsd`` dialect, which
GitHub, GitLab, Azure and Jenkins all read.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import SupportsFloat

from laya_tui.core.report_types import ReportDict, ResultDict
from laya_tui.report.gates import failures_by_probe
from laya_tui.report.verdict import describe_failure
from laya_tui.report.views.legend import State, cell_state, not_run, state_mark

#: Characters XML 1.0 forbids (ANSI escapes from compiler logs, NULs...).
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
AGGREGATE_GATE_PREFIXES = ("max:", "probe-files", "shards")
MESSAGE_CHARS = 500


def _clean(text: object) -> str:
    return _BAD_XML.sub("\ufffd", str(text))


def _seconds(value: object) -> str:
    if not isinstance(value, (str, SupportsFloat)):  # null, a list or an object
        return "0.000"
    try:
        return f"{max(float(value), 0.0):.3f}"
    except (TypeError, ValueError):
        return "0.000"


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: _clean(v) for k, v in attrs.items()})
    if text:
        el.text = _clean(text)
    return el


#: The gate a status ``error`` cell fails; JUnit shows it as an ``<error>``, not a failure.
ERROR_GATE = "no-probe-error"
NOT_EXAMINED = state_mark(State.NOT_EXAMINED).label


def _testcase(suite: ET.Element, probe: ResultDict,
              failures: list[tuple[str, str]]) -> tuple[int, int, int]:
    """Write one case: ``(failures, errors, skipped)`` it counts for."""
    pid, family = probe["id"], probe.get("family", "")
    name = pid[len(family) + 1:] if pid.startswith(family + "/") else pid
    case = _sub(suite, "testcase", name=name, classname=family,
                time=_seconds(probe.get("seconds")))
    status, reason = probe.get("status"), probe.get("reason") or ""
    state = cell_state(probe)
    errored = 0
    if state == State.NOT_EXAMINED:
        first = reason.splitlines()[0] if reason else ""
        _sub(case, "error", f"probe {pid}: {NOT_EXAMINED}: the probe could not examine its "
             f"subject (status {status}: not a finding about the subject)"
             + (f"\n{reason}" if reason else ""), type="not-examined",
             message=f"{NOT_EXAMINED}: {first}"[:MESSAGE_CHARS])
        failures = [(g, t) for g, t in failures if g != ERROR_GATE]
        errored = 1
    failures = list(dict.fromkeys(failures))  # one line per distinct gate failure
    if failures:  # one <failure> per case, naming every gate it failed
        gate, text = failures[0]
        head = f"{state_mark(state).label}: " if state != State.OK else ""  # ok, gated
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        body = "\n".join(f"gate {g}: {t}" for g, t in failures) + (
            f"\nprobe {pid}: status {status}" + (f": {reason}" if reason else ""))
        _sub(case, "failure", body, type=",".join(dict.fromkeys(g for g, _ in failures)),
             # (a text that names its gate already is not prefixed: "tolerance: tolerance")
             message=(head + (text if text.startswith(f"{gate} ") else f"{gate}: {text}"))
             [:MESSAGE_CHARS - len(more)] + more)
    if failures or errored:
        if probe.get("log_tail"):
            _sub(case, "system-out", probe["log_tail"])
        return (1 if failures else 0), errored, 0
    if status == "skipped":
        _sub(case, "skipped", message=f"{state_mark(state).label}: {reason}"[:MESSAGE_CHARS])
        return 0, 0, 1
    why = not_run(probe)
    if why:  # lowered or built, never run: nothing was compared, so it did not pass a run
        _sub(case, "skipped", message=f"{state_mark(state).label}: {why}"[:MESSAGE_CHARS])
        return 0, 0, 1
    if state != State.OK:  # a finding no gate reads, a crash no gate fails on
        _sub(case, "system-out", f"{state_mark(state).label}: no gate fails on it"
             + (f": {reason}" if reason else ""))
    return 0, 0, 0


def _span(probes: list[ResultDict]) -> float:
    """A family's time: from its first cell's start to its last cell's end (the cells of a
    family run one after another; cached ones take no time), else the cells' seconds."""
    ran = [p for p in probes if not p.get("cached")]
    starts = [p["started"] for p in ran if isinstance(p.get("started"), int | float)]
    ends = [p["ended"] for p in ran if isinstance(p.get("ended"), int | float)]
    if ran and len(starts) == len(ends) == len(ran):
        return float(max(ends) - min(starts))
    return sum(float(p.get("seconds") or 0.0) for p in ran)


def build_junit(report: ReportDict) -> str:
    """The JUnit XML text of a report (deterministic for a given report)."""
    gates = report.get("gates", [])
    by_probe = failures_by_probe(gates)
    root = ET.Element("testsuites", name="laya-tui")
    families: dict[str, list[ResultDict]] = {}
    for p in report.get("probes", []):
        families.setdefault(p.get("family", ""), []).append(p)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    stamp = report.get("created")

    def add_suite(name: str) -> tuple[ET.Element, dict[str, float]]:
        suite = _sub(root, "testsuite", name=name)
        return suite, {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}

    def close_suite(suite: ET.Element, counts: dict[str, float]) -> None:
        attrs = {"tests": str(counts["tests"]), "failures": str(counts["failures"]),
                 "errors": str(counts["errors"]), "skipped": str(counts["skipped"]),
                 "time": _seconds(counts["time"])}
        if stamp:
            attrs["timestamp"] = stamp
        for k, v in attrs.items():
            suite.set(k, _clean(v))
        for k in totals:
            totals[k] += counts[k]

    for family in sorted(families):
        suite, counts = add_suite(family)
        for p in families[family]:
            failed, errored, skipped = _testcase(suite, p, by_probe.get(p["id"], []))
            counts["tests"] += 1
            counts["failures"] += failed
            counts["errors"] += errored
            counts["skipped"] += skipped
        counts["time"] = _span(families[family])
        close_suite(suite, counts)
    aggregate = [g for g in gates if g["name"].startswith(AGGREGATE_GATE_PREFIXES)]
    if aggregate:
        suite, counts = add_suite("laya-tui.gates")
        for g in aggregate:
            case = _sub(suite, "testcase", name=g["name"], classname="laya-tui.gates",
                        time="0.000")
            counts["tests"] += 1
            if not g["passed"]:
                counts["failures"] += 1
                lines = [describe_failure(g["name"], f) for f in g.get("failures", [])]
                body = "\n".join(lines)
                for f in g.get("failures", []):
                    for pid, n in (f.get("by_probe") or {}).items():
                        body += f"\n  {pid}: {n}"
                _sub(case, "failure", body, type=g["name"],
                     message=f"{g['name']}: {lines[0] if lines else 'failed'}"[:MESSAGE_CHARS])
        close_suite(suite, counts)
    for k in ("tests", "failures", "errors"):
        root.set(k, str(totals[k]))
    run = (report.get("summary") or {}).get("seconds")
    root.set("time", _seconds(run if run is not None else totals["time"]))  # the run's
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") \
        + "\n"
