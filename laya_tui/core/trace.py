"""``--trace PATH``: a run's timeline as Chrome trace events (Perfetto, chrome://tracing).

One track (thread) per warm worker, i.e. per family; one span per probe from its recorded
``started``/``ended`` wall times, with the probe id, status and cache state as arguments;
inside it, one nested span per stage the family already times (its ``timing`` signals:
tilelang ``lower``/``build``/``run``, aoti ``export``/``package``/``load``/``compile``,
explain region walls, mlx phases). Stages carry durations, not start times, so they are laid
end to end from the probe's start in the order they were reported and clipped to the probe's
span (``args.clipped``). A report without start times (older, or written before the runner
recorded them) is laid out probe after probe per family from each probe's ``seconds``, and
the trace's metadata says so. Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypeAlias, TypedDict

from laya_tui.core.open_types import JsonObject
from laya_tui.core.report_types import ReportDict, ResultDict

#: Timing subjects that are per-call or derived figures, not stages of the probe's run.
_NOT_STAGES = ("latency/", "uninstrumented", "instrumentation overhead")
_US = 1_000_000


#: A span's ``args``: free-form in the Chrome trace format (the viewer shows them as is).
SpanArgs: TypeAlias = dict[str, Any]


class TraceEvent(TypedDict):
    """One Chrome trace event: metadata (``M``), a span's begin (``B``) or end (``E``)."""

    pid: int
    tid: int
    cat: NotRequired[str]
    ph: str
    name: str
    ts: NotRequired[int]
    dur: NotRequired[int]
    args: NotRequired[SpanArgs]


class TraceInfo(TypedDict):
    """The trace's ``otherData``: what wrote it and how its times were laid out."""

    tool: str
    schema: str | None
    created: str | None
    start_times: str
    stages: str


class TraceDoc(TypedDict):
    """The Chrome trace document (JSON object format) of a run; its keys are the format's."""

    traceEvents: list[TraceEvent]
    displayTimeUnit: str
    otherData: TraceInfo


class Span(TypedDict):
    """A closed span of a trace (see :func:`spans_of`), times in microseconds."""

    name: str
    track: tuple[int, int]
    start: int
    end: int
    depth: int
    cat: str | None
    args: SpanArgs
    root: NotRequired[str | None]


Stage = tuple[str, float, SpanArgs, list[tuple[str, float, SpanArgs]]]


def _stages(probe: ResultDict) -> list[Stage]:
    """(name, seconds, args, children) per timed stage, in the order reported.

    A phase's ``total`` (mlx: cold, warm) becomes the parent of that phase's other timings;
    a timing measured over ``runs`` calls spans ``runs`` x its median (args say so).
    """
    timings = []
    for sig in probe.get("signals") or ():
        secs = sig.get("seconds")
        subject = str(sig.get("subject", "timing"))
        if sig.get("kind") != "timing" or not isinstance(secs, (int, float)) or secs <= 0:
            continue
        if any(tag in subject for tag in _NOT_STAGES):
            continue
        raw = sig.get("detail")
        detail: Mapping[str, object] = raw if isinstance(raw, dict) else {}
        runs_field = detail.get("runs")
        runs: int = runs_field if isinstance(runs_field, int) and runs_field > 1 else 1
        args: SpanArgs = {"seconds": secs}
        if runs > 1:
            args.update(runs=runs, median=secs)
        if detail.get("cached") is not None:
            args["cached"] = detail["cached"]
        raw_phase = detail.get("phase")
        phase = raw_phase if isinstance(raw_phase, str) else None
        timings.append((phase, subject, float(secs) * runs, args))
    # a phase's timings reported before its total are that total's parts
    total_at = {ph: i for i, (ph, subject, *_) in enumerate(timings) if ph and subject == "total"}
    out: list[Stage] = []
    for i, (phase, subject, secs, args) in enumerate(timings):
        if phase in total_at and subject != "total" and i < total_at[phase]:
            continue
        name = f"{phase} {subject}" if phase and phase not in subject else subject
        children = [(f"{ph} {sub}", s2, a2) for j, (ph, sub, s2, a2) in enumerate(timings)
                    if subject == "total" and ph == phase and j < i]
        out.append((name, secs, args, children))
    return out


def _spans(report: ReportDict
           ) -> tuple[list[tuple[str, float, float, ResultDict]], bool]:
    """(family, start, end, probe) per probe, and whether the times were recorded."""
    from laya_tui.core.envs import worker_key  # --env: one track per family@env worker

    probes = report.get("probes") or []
    timed = bool(probes) and all(isinstance(p.get("started"), (int, float))
                                 and isinstance(p.get("ended"), (int, float)) for p in probes)
    spans = []
    if timed:
        for p in probes:
            spans.append((worker_key(p) if p.get("family") else "?", float(p["started"]),
                          max(float(p["ended"]), float(p["started"])), p))
        return spans, True
    cursor: dict[str, float] = {}
    for p in probes:
        fam = worker_key(p) if p.get("family") else "?"
        start = cursor.get(fam, 0.0)
        secs = p.get("seconds")
        end = start + (float(secs) if isinstance(secs, (int, float)) and secs > 0 else 0.0)
        cursor[fam] = end
        spans.append((fam, start, end, p))
    return spans, False


def build_trace(report: ReportDict) -> TraceDoc:
    """The Chrome trace document (JSON object format) of a report's run."""
    spans, recorded = _spans(report)
    origin = min((s[1] for s in spans), default=0.0)
    families: list[str] = []
    for fam, *_ in spans:
        if fam not in families:
            families.append(fam)
    tid = {fam: i + 1 for i, fam in enumerate(families)}
    events: list[TraceEvent] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
         "args": {"name": "laya-tui run"}}]
    for fam in families:
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid[fam],
                       "args": {"name": f"{fam} worker"}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": tid[fam],
                       "args": {"sort_index": tid[fam]}})
    timeline: list[TraceEvent] = []
    for fam, start, end, p in sorted(spans, key=lambda s: (tid[s[0]], s[1], s[2])):
        t0 = round((start - origin) * _US)
        t1 = max(t0, round((end - origin) * _US))
        base: _Track = {"pid": 1, "tid": tid[fam], "cat": fam}
        args: SpanArgs = {"probe": p.get("id"), "status": p.get("status"),
                          "cached": bool(p.get("cached")), "seconds": p.get("seconds")}
        if p.get("reason") and p.get("status") != "ok":
            args["reason"] = str(p["reason"])[:300]
        timeline.append(_mark(base, "B", str(p.get("id")), t0, args))
        cursor = t0
        if not p.get("cached"):  # a cached probe's stage times belong to an earlier run
            for name, secs, args, children in _stages(p):
                if cursor >= t1:
                    break
                stop = _span(timeline, base, name, secs, args, cursor, t1)
                inner = cursor
                for cname, csecs, cargs in children:
                    if inner >= stop:
                        break
                    inner = _span(timeline, base, cname, csecs, cargs, inner, stop,
                                  close=True)
                timeline.append(_mark(base, "E", name, stop))
                cursor = stop
        timeline.append(_mark(base, "E", str(p.get("id")), t1))
    return {
        "traceEvents": events + _untangle(timeline),
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": "laya-tui", "schema": report.get("schema"), "created": report.get("created"),
            "start_times": "recorded" if recorded else
            "not recorded in this report: probes laid end to end per family from their seconds",
            "stages": "durations from timing signals, laid end to end inside each probe",
        },
    }


class _Track(TypedDict):
    pid: int
    tid: int
    cat: str


def _mark(base: _Track, ph: str, name: str, ts: int, args: SpanArgs | None = None
          ) -> TraceEvent:
    """One ``B``/``E`` event of a track."""
    ev: TraceEvent = {"pid": base["pid"], "tid": base["tid"], "cat": base["cat"], "ph": ph,
                      "name": name, "ts": ts}
    if args is not None:
        ev["args"] = args
    return ev


def _span(timeline: list[TraceEvent], base: _Track, name: str, secs: float,
          args: SpanArgs, start: int, limit: int, *, close: bool = False) -> int:
    """Open a span of ``secs`` at ``start``, clipped to ``limit``; returns its end."""
    stop = min(start + round(secs * _US), limit)
    if start + round(secs * _US) > limit:
        args = dict(args, clipped=True)
    timeline.append(_mark(base, "B", name, start, args))
    if close:
        timeline.append(_mark(base, "E", name, stop))
    return stop


def _untangle(timeline: list[TraceEvent]) -> list[TraceEvent]:
    """Per track, keep spans whose recorded times overlap (a re-run) from crossing: a probe
    that starts before the previous one on its track ended is shifted to that end."""
    out: list[TraceEvent] = []
    last_end: dict[int, int] = {}
    shift = 0
    for ev in timeline:
        tid = ev["tid"]
        if ev["ph"] == "B" and ev["name"] == (ev.get("args") or {}).get("probe"):
            shift = max(0, last_end.get(tid, 0) - ev["ts"])
        ev = ev.copy()
        ev["ts"] = ev["ts"] + shift
        if ev["ph"] == "E":
            last_end[tid] = max(last_end.get(tid, 0), ev["ts"])
        out.append(ev)
    return out


def trace_json(report: ReportDict) -> str:
    """The trace document as compact JSON text."""
    return json.dumps(build_trace(report), separators=(",", ":")) + "\n"


def check_trace(doc: object) -> list[str]:
    """Problems with a Chrome trace document: unclosed spans, children outside their parents,
    time going backwards on a track. Empty when the trace is well formed."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not a Chrome trace (no traceEvents list)"]
    problems: list[str] = []
    stacks: dict[tuple[object, object], list[JsonObject]] = {}
    last: dict[tuple[object, object], float] = {}
    for i, ev in enumerate(doc["traceEvents"]):
        ph = ev.get("ph")
        if ph == "M":
            continue
        track = (ev.get("pid"), ev.get("tid"))
        ts = ev.get("ts")
        if not isinstance(ts, (int, float)):
            problems.append(f"event #{i} has no timestamp")
            continue
        if ts < last.get(track, float("-inf")):
            problems.append(f"event #{i} ({ev.get('name')}) goes back in time on track {track}")
        last[track] = ts
        stack = stacks.setdefault(track, [])
        if ph == "B":
            stack.append(ev)
        elif ph == "E":
            if not stack:
                problems.append(f"event #{i} ends {ev.get('name')!r}, which never began")
            elif stack[-1].get("name") != ev.get("name"):
                problems.append(f"event #{i} ends {ev.get('name')!r} inside "
                                f"{stack[-1].get('name')!r}")
                stack.pop()
            else:
                stack.pop()
        elif ph == "X":
            if not isinstance(ev.get("dur"), (int, float)) or ev["dur"] < 0:
                problems.append(f"event #{i} ({ev.get('name')}) has no valid duration")
        else:
            problems.append(f"event #{i} has an unexpected phase {ph!r}")
    for track, stack in stacks.items():
        for ev in stack:
            problems.append(f"span {ev.get('name')!r} on track {track} is never closed")
    return problems


def spans_of(doc: TraceDoc) -> list[Span]:
    """Closed spans ``{name, track, start, end, depth, cat, args, root}`` (microseconds, B/E
    paired; ``root`` is the outermost open span, i.e. the probe, for nested ones)."""
    out: list[Span] = []
    stacks: dict[tuple[int, int], list[TraceEvent]] = {}
    for ev in doc.get("traceEvents", []):
        track = (ev["pid"], ev["tid"])
        if ev.get("ph") == "B":
            stacks.setdefault(track, []).append(ev)
        elif ev.get("ph") == "E" and stacks.get(track):
            b = stacks[track].pop()
            out.append({"name": b["name"], "track": track, "start": b["ts"],
                        "end": ev["ts"], "depth": len(stacks[track]), "cat": b.get("cat"),
                        "args": b.get("args") or {},
                        "root": stacks[track][0]["name"] if stacks[track] else None})
        elif ev.get("ph") == "X":
            out.append({"name": ev["name"], "track": track, "start": ev["ts"],
                        "end": ev["ts"] + ev.get("dur", 0), "depth": 0, "cat": ev.get("cat"),
                        "args": ev.get("args") or {}})
    return out
