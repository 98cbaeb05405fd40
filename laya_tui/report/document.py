"""The versioned report document: build, validate, write atomically, summarise
(docs/architecture.md, 'Signals, results and the report')."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import cast

from laya_tui.core.jsonfast import compact_encoder, dumps_strict, finite_fields
from laya_tui.core.logtext import printable
from laya_tui.core.open_types import HostFacts, JsonObject
from laya_tui.core.report_types import (
    FileErrorDict,
    GateDict,
    ReportDict,
    ReportSections,
    ResultDict,
    SummaryDict,
)
from laya_tui.core.signals import KINDS, SCHEMA_ID, STATUSES
from laya_tui.core.versions import host_facts, library_versions

SCHEMA_PATH = Path(__file__).with_name("schema.json")


@lru_cache(maxsize=1)
def report_schema() -> JsonObject:
    """The report's JSON Schema, shipped in the package."""
    schema: JsonObject = json.loads(SCHEMA_PATH.read_text())
    return schema


def validate_report(report: Mapping[str, object]) -> None:
    """Raise ``jsonschema.ValidationError`` when ``report`` does not follow the schema."""
    import jsonschema

    jsonschema.validate(report, report_schema())


def environment_section(probes: list[ResultDict]) -> HostFacts:
    """Host facts and library versions, plus the env probe's environment signals."""
    env: HostFacts = {"versions": library_versions(), "host": host_facts()}
    facts: dict[str | None, object] = {}
    for p in probes:
        if p.get("family") == "env" and not p.get("env"):  # --env cells: under "envs"
            for s in p.get("signals", []):
                if s.get("kind") == "environment" and "subject" in s:
                    facts[s["subject"]] = s.get("value", s.get("reason"))
    if facts:
        env["probed"] = facts
    return env


def summarise(probes: list[ResultDict], seconds: float) -> SummaryDict:
    """Counts per status and per signal kind."""
    status = Counter({s: 0 for s in STATUSES})
    status.update(p["status"] for p in probes)
    from laya_tui.core.results import is_v1_first_compile

    kinds = Counter({k: 0 for k in KINDS})
    for p in probes:
        # a cached first compile from before schema v2 counts as a compile, not a recompile
        kinds.update("compile" if is_v1_first_compile(s) else s["kind"]
                     for s in p.get("signals", []))
    out: SummaryDict = {
        "probes": len(probes),
        "status": dict(status),
        "signals": dict(kinds),
        "cached": sum(1 for p in probes if p.get("cached")),
        "seconds": round(seconds, 3),
    }
    from laya_tui.report.verdict import not_run_counts
    from laya_tui.report.views.legend import state_counts

    out["states"] = state_counts(probes)  # report/3: what a reader is told (views.legend)
    why = not_run_counts(probes)
    if why:  # counted in status.ok too: they passed every stage they reached
        out["not_run"] = {"count": sum(why.values()), "why": why}
    return out


def build_report(probes: list[ResultDict], *, seconds: float,
                 gates: list[GateDict], errors: Sequence[FileErrorDict] | None = None,
                 extra: ReportSections | None = None) -> ReportDict:
    """Assemble the report document from finished probe results and evaluated gates."""
    from laya_tui.core.versions import TOOL_VERSION as __version__
    from laya_tui.report.views.legend import cell_state

    # the report's keys only (a "_" key is a front end's mark)
    clean = [cast(ResultDict, {k: v for k, v in p.items() if not k.startswith("_")})
             for p in probes]
    from laya_tui.report.views.numerics import cell_numerics

    for p in clean:  # report/3: the state every output names (views.legend)
        p["state"] = cell_state({**p, "state": None})
        numerics = cell_numerics(p)  # report/4: gap tables and precision plans (issue 43)
        if numerics:
            p["numerics"] = numerics
    summary = summarise(clean, seconds)
    summary["passed"] = all(g["passed"] for g in gates)
    from laya_tui.report.verdict import ungated

    kinds = ungated(clean, gates)
    if kinds:
        summary["ungated"] = {"count": sum(kinds.values()), "kinds": kinds}
    report: dict[str, object] = {
        "schema": SCHEMA_ID,
        "tool": {"name": "laya-tui", "version": __version__},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": environment_section(clean),
        "errors": errors or [],
        "probes": clean,
        "summary": summary,
        "gates": gates,
    }
    if extra:
        report.update(extra)
    return cast(ReportDict, report)  # the required keys above; extra: the schema's others


_SLICE = 2000  # signals per chunk of report text
_encode = compact_encoder(repr, strict=True)  # the C encoder; strict JSON (no NaN)


def report_chunks(report: ReportDict) -> Iterator[str]:
    """The report as JSON text, in chunks: never the whole text at once in memory.

    Small sections are indented; each signal is one compact line, encoded by the C encoder
    in slices (``json.dumps(indent=...)`` runs the pure-Python encoder, ~20x slower).
    """
    yield "{\n"
    last = len(report) - 1
    for i, (key, value) in enumerate(report.items()):
        end = ",\n" if i < last else "\n"
        if key == "probes" and isinstance(value, list):
            yield f" {_encode(key)}: [" + ("\n" if value else "")
            for j, probe in enumerate(value):
                yield from _probe_chunks(probe)
                yield ",\n" if j < len(value) - 1 else "\n"
            yield (" ]" if value else "]") + end
        else:
            yield f" {_encode(key)}: {_indented(value, 1)}{end}"
    yield "}\n"


def _indented(value: object, depth: int) -> str:
    # JSON strings never hold a raw newline, so re-indenting by replacement is exact.
    return dumps_strict(value, indent=1, default=repr).replace("\n", "\n" + " " * depth)


def _probe_chunks(probe: object) -> Iterator[str]:
    if not isinstance(probe, dict):
        yield "  " + _indented(probe, 2)
        return
    yield "  {"
    sep = ""
    for key, value in finite_fields(probe).items():
        if key == "signals" and isinstance(value, list) and value:
            yield sep + '"signals": [\n'
            for k in range(0, len(value), _SLICE):
                more = k + _SLICE < len(value)
                yield ",\n".join("   " + _encode(s) for s in value[k:k + _SLICE]) + (
                    ",\n" if more else "\n")
            yield "  ]"
        else:
            yield f"{sep}{_encode(key)}: {_encode(value)}"
        sep = ", "
    yield "}"


def report_text(report: ReportDict) -> str:
    """The whole report as JSON text (prefer :func:`write_report` for files)."""
    return "".join(report_chunks(report))


def write_report(path: str, report: ReportDict) -> None:
    """Write the report to ``path`` atomically (``-``: stdout), chunk by chunk."""
    if path == "-":
        import sys

        for chunk in report_chunks(report):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        return
    write_atomic(path, report_chunks(report))


def write_atomic(path: str, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its chunks) to ``path`` via a temp file in the same folder and
    a rename."""
    commit_temp(write_temp(path, text), path)


def write_temp(path: str, text: str | Iterable[str]) -> str:
    """Write ``text`` (or its chunks) to a new temporary file beside ``path``; its name.
    Nothing is left behind when writing fails. :func:`commit_temp` puts it in place."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            if isinstance(text, str):
                fh.write(text)
            else:
                for chunk in text:
                    fh.write(chunk)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the report from CI users
    except BaseException:
        discard_temp(tmp)
        raise
    return tmp


def commit_temp(tmp: str, path: str) -> None:
    """Rename a :func:`write_temp` file onto ``path`` (atomic in one folder)."""
    try:
        os.replace(tmp, path)
    except BaseException:
        discard_temp(tmp)
        raise


def discard_temp(tmp: str) -> None:
    """Remove a :func:`write_temp` file that will not be committed."""
    try:
        os.unlink(tmp)
    except OSError:
        pass


#: Cells listed one a line under the summary's counts (the rest are counted).
LISTED_CELLS = 40


def human_summary(report: ReportDict) -> str:
    """A few lines for stderr: counts per state, every cell that is not plain ok (its state
    word from report.views.legend), failing gates, and the verdict line (report.verdict)."""
    from laya_tui.report.verdict import gate_hint, ungated_text, verdict_line
    from laya_tui.report.views.legend import State, cell_state, counts_text, state_counts

    s = report["summary"]
    probes = report["probes"]
    states = s.get("states") or state_counts(probes)
    order = (State.OK, State.FINDING, State.NOT_RUN, State.NOT_COMPARED, State.NOT_EXAMINED,
             State.SKIPPED, State.CRASHED, State.TIMEOUT)
    counts = {k: states.get(k, 0) for k in order}
    lines = [
        f"laya-tui: {s['probes']} probes in {s['seconds']:.1f} s: "
        + counts_text(counts, zero=(State.OK, State.FINDING, State.NOT_EXAMINED,
                                    State.SKIPPED, State.CRASHED, State.TIMEOUT))
        + f" ({s.get('cached', 0)} cached)"
    ]
    lines += cell_lines(probes, cell_state)
    from laya_tui.report.views.placement import placement_lines

    lines += placement_lines(probes)
    kinds = ", ".join(f"{k} {n}" for k, n in s["signals"].items() if n)
    if kinds:
        lines.append(f"  signals: {kinds}")
    for e in report.get("errors", []):
        where = f"{e['file']}:{e['line']}" if e.get("line") else e["file"]
        lines.append(f"  error: {where}: {e['error']}")
    for g in report["gates"]:
        mark = "ok  " if g["passed"] else "FAIL"
        n = len(g.get("failures", []))
        lines.append(f"  gate {mark} {g['name']}" + (f" ({n})" if n else "")
                     + (" (nothing compared)" if g.get("compared") == 0 else ""))
    if s.get("ungated"):
        lines.append(f"  {ungated_text(s['ungated']['kinds'])}: "
                     f"{gate_hint(s['ungated']['count'])}")
    lines.append("  verdict: " + verdict_line(report))
    return printable("\n".join(lines))  # a probe's raw NUL or escape never reaches a terminal


def cell_lines(probes: list[ResultDict], state_of: Callable[[ResultDict], str]
               ) -> list[str]:
    """``  ◐ built, not run: tilelang/k[cuda,fp32]: no GPU``: one line per cell that is not
    plain ok, the worst states first (within a state, the most severe first: the markdown's
    and SARIF's order, report.severity), at most :data:`LISTED_CELLS` (then a count)."""
    from laya_tui.report.severity import probe_severity
    from laya_tui.report.views.legend import STATE_MARKS, State, not_run, state_mark

    rank = {k: i for i, k in enumerate(STATE_MARKS)}
    cells = sorted(((state_of(p), i, p) for i, p in enumerate(probes)
                    if state_of(p) != State.OK),
                   key=lambda t: (rank.get(t[0], 99), probe_severity(t[2]), t[1]))
    lines = []
    for state, _, p in cells[:LISTED_CELLS]:
        why = not_run(p) if state in (State.NOT_RUN, State.NOT_COMPARED) else p.get("reason")
        first, *rest = str(why or "").splitlines() or [""]
        lines.append(f"  {state_mark(state).label}: {p['id']}" + (f": {first}" if first else ""))
        if state == State.NOT_EXAMINED:  # what stopped the probe, in its own words
            lines += [f"      {ln}" for ln in rest[:12]]
        lines += [f"      {sig['reason']}" for sig in p.get("signals") or ()
                  if "gap_table" in (sig.get("detail") or {}) and sig.get("reason")]
        lines += [f"      precision plan: {sig['reason']}" for sig in p.get("signals") or ()
                  if "precision_plan" in (sig.get("detail") or {}) and sig.get("reason")]
    if len(cells) > LISTED_CELLS:
        lines.append(f"  … {len(cells) - LISTED_CELLS} more cells (every one is in --json)")
    return lines
