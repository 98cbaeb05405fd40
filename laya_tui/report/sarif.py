"""``--sarif PATH``: the report's findings as SARIF 2.1.0, for GitHub code scanning and any
SARIF reader (docs/ci.md).

One run per invocation. One rule per finding kind (:mod:`laya_tui.report.rules`); one
result per finding (:mod:`laya_tui.report.findings`) at its call site, relative to
``%SRCROOT%`` (the source root: the checked-out repository under GitHub Actions, else the
workspace), with the user stack as ``relatedLocations``, ``partialFingerprints`` from the
signal identity (never from a line number), level ``error`` only for what a gate fails, and
counts, bytes and baseline deltas in ``properties``. With a baseline every result carries a
``baselineState``; results gone since the baseline are ``absent``, level ``none``, kind
``pass`` and suppressed (code scanning would otherwise show them as open alerts).

GitHub keeps 25,000 results per run and needs a file location on every result: results past
:data:`MAX_RESULTS` (the least important) and findings with no file in the source tree are
left out and counted in ``invocations[0].toolExecutionNotifications`` and
``run.properties``. The validating schema ships beside this module
(``sarif-schema-2.1.0.json``, OASIS errata01). Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from laya_tui.core.jsonfast import compact_encoder, dumps_strict
from laya_tui.core.open_types import JsonObject
from laya_tui.core.report_types import ReportDict
from laya_tui.core.shapes import as_dict
from laya_tui.report.findings import Finding, collect_findings, prioritised
from laya_tui.report.rules import RULES, Rule
from laya_tui.report.sarif_types import (
    GateOutcome,
    Invocation,
    Message,
    Notification,
    PhysicalLocation,
    RelatedLocation,
    ReportingDescriptor,
    Result,
    Run,
    SarifLog,
)
from laya_tui.report.sarif_types import Location as SarifLocation
from laya_tui.report.sources import Location, Sources

if TYPE_CHECKING:
    from laya_tui.core.settings import Settings

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                    "sarif-schema-2.1.0.json")
SCHEMA_PATH = Path(__file__).with_name("sarif-schema-2.1.0.json")
#: GitHub code scanning's limit of results per run.
MAX_RESULTS = 25_000
SRCROOT = "%SRCROOT%"
FINGERPRINT = "layaSignal/v1"
_encode = compact_encoder(repr, strict=True)  # strict JSON: no NaN/Infinity
_SLICE = 2000


@lru_cache(maxsize=1)
def sarif_schema() -> JsonObject:
    """The official SARIF 2.1.0 JSON Schema (draft-04), shipped in the package."""
    schema: JsonObject = json.loads(SCHEMA_PATH.read_text())
    return schema


def validate_sarif(doc: SarifLog) -> None:
    """Raise ``jsonschema.ValidationError`` when ``doc`` is not valid SARIF 2.1.0."""
    import jsonschema

    jsonschema.Draft4Validator(sarif_schema()).validate(doc)


def _text(text: str) -> Message:
    return {"text": text}


def rule_object(rule: Rule) -> ReportingDescriptor:
    """A ``reportingDescriptor`` for ``rule``."""
    out: ReportingDescriptor = {"id": rule.id, "name": rule.name,
                                "shortDescription": _text(rule.short),
                                "fullDescription": _text(rule.full),
                                "help": _text(rule.help)}
    if rule.uri:
        out["helpUri"] = rule.uri
    out["defaultConfiguration"] = {"level": rule.level}
    out["properties"] = {"tags": ["laya-tui", *rule.tags]}
    return out


def _physical(loc: Location) -> PhysicalLocation:
    out: PhysicalLocation = {"artifactLocation": {"uri": quote(loc.path, safe="/"),
                                                "uriBaseId": SRCROOT}}
    if loc.line:
        out["region"] = {"startLine": loc.line}
    return out


def _location(loc: Location) -> SarifLocation:
    out: SarifLocation = {"physicalLocation": _physical(loc)}
    if loc.func:
        out["logicalLocations"] = [{"name": loc.func, "kind": "function"}]
    return out


def result_object(f: Finding, rule_index: int) -> Result:
    """The ``result`` of one finding (``f.location`` is set)."""
    assert f.location is not None
    out: Result = {"ruleId": f.rule.id, "ruleIndex": rule_index, "level": f.level,
                           "message": _text(f.message), "locations": [_location(f.location)]}
    if f.state == "absent":
        out["kind"] = "pass"
    if f.related:
        rel: list[RelatedLocation] = []
        for i, r in enumerate(f.related, 1):
            note = r.note or "related"
            rel.append({"id": i, "physicalLocation": _physical(r),
                        "message": _text(f"{note}: {r.func}" if r.func else note)})
        out["relatedLocations"] = rel
    out["partialFingerprints"] = {FINGERPRINT: f.fingerprint()}
    if f.state:
        out["baselineState"] = f.state
    if f.state == "absent":
        out["suppressions"] = [{"kind": "external", "status": "accepted",
                                "justification": "absent: in the baseline, not in this run"}]
    props = dict(f.props)
    if f.gates:
        props["gates"] = f.gates
    out["properties"] = props
    return out


def _notification(level: str, text: str) -> Notification:
    return {"level": level, "message": _text(text)}


def state_words(report: ReportDict) -> dict[str, str]:
    """``{probe id: its cell's state word}`` (report.views.legend): the word the summary,
    markdown, JUnit and the page use for that cell, carried by each result and annotation."""
    from laya_tui.report.views.legend import cell_state, state_word

    return {str(p.get("id")): state_word(cell_state(p))
            for p in report.get("probes") or () if isinstance(p, Mapping)}


def build_sarif(report: ReportDict, sources: Sources,
                baseline: ReportDict | None = None, *,
                findings: list[Finding] | None = None,
                max_results: int = MAX_RESULTS) -> SarifLog:
    """The SARIF log of ``report`` (``baseline``: the baseline report, see
    :func:`laya_tui.report.findings.collect_findings`; ``findings``: already collected)."""
    if findings is None:
        findings = collect_findings(report, sources, baseline)
    placed = [f for f in findings if f.location is not None]
    unplaced = [f for f in findings if f.location is None]
    kept = prioritised(placed)
    left_out = kept[max_results:]
    kept = kept[:max_results]
    rules: dict[str, Rule] = dict(RULES)
    for f in kept:
        rules.setdefault(f.rule.id, f.rule)
    from laya_tui.report.views.numerics import plan_results, plan_rule

    plans = plan_results(report, sources, len(rules))  # issue 43: found precision plans
    if plans:
        rules.setdefault(plan_rule().id, plan_rule())
    index = {rid: i for i, rid in enumerate(rules)}
    results = [result_object(f, index[f.rule.id]) for f in kept]
    for r in plans:
        r["ruleIndex"] = index[r["ruleId"]]
    words = state_words(report)
    for f, r in zip(kept, results, strict=True):
        if f.probe in words:
            r["properties"]["state"] = words[f.probe]
    results += plans[: max(0, max_results - len(results))]
    notes: list[Notification] = []
    if unplaced:
        notes.append(_notification("warning", f"{len(unplaced)} finding(s) have no file in "
                                   f"the source tree {sources.root} and are not results: "
                                   + "; ".join(f.message for f in unplaced[:20])))
    if left_out:
        notes.append(_notification("warning", f"{len(left_out)} least important finding(s) "
                                   f"left out: code scanning keeps {max_results:,} results "
                                   "per run (all are in the JSON report)"))
    summary = as_dict(report.get("summary"))
    invocation: Invocation = {"executionSuccessful": True}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    tool = as_dict(report.get("tool"))
    version = str(tool.get("version") or "0")
    run: Run = {
        "tool": {"driver": {"name": "laya-tui", "version": version, "semanticVersion": version,
                            "rules": [rule_object(r) for r in rules.values()]}},
        "invocations": [invocation],
        "originalUriBaseIds": {SRCROOT: {"uri": Path(sources.root).as_uri().rstrip("/") + "/"}},
        "results": results,
        "properties": {
            "verdict": "pass" if summary.get("passed") else "fail",
            "gates": [GateOutcome(name=g.get("name"), passed=bool(g.get("passed")),
                                  failures=len(g.get("failures") or ()))
                      for g in report.get("gates") or () if isinstance(g, Mapping)],
            "findings": len(findings), "results": len(results),
            "resultsLeftOut": len(left_out), "withoutLocation": len(unplaced),
            "report": {"schema": report.get("schema"), "created": report.get("created")},
        },
    }
    if isinstance(report.get("baseline"), Mapping):
        run["properties"]["baseline"] = report["baseline"].get("path")
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def sarif_chunks(doc: SarifLog) -> Iterator[str]:
    """The SARIF text in chunks: the run indented, one result per line (C encoder)."""
    results = [r.get("results", []) for r in doc["runs"]]
    runs: list[dict[str, object]] = [{k: v for k, v in r.items() if k != "results"}
                                     for r in doc["runs"]]
    marks = [f"\x00laya-results-{i}\x00" for i in range(len(runs))]
    for run, mark in zip(runs, marks, strict=True):
        run["results"] = mark
    whole: dict[str, object] = dict(doc)
    whole["runs"] = runs
    text = dumps_strict(whole, indent=1)
    for run_results, mark in zip(results, marks, strict=True):
        head, _, text = text.partition(json.dumps(mark))
        yield head
        if not run_results:
            yield "[]"
            continue
        yield "[\n"
        for k in range(0, len(run_results), _SLICE):
            part = run_results[k:k + _SLICE]
            more = k + _SLICE < len(run_results)
            yield ",\n".join(_encode(r) for r in part) + (",\n" if more else "\n")
        yield "]"
    yield text + "\n"


def baseline_document(report: ReportDict) -> ReportDict | None:
    """The baseline report named by the report's baseline section (read again); None when
    there is none or it cannot be read any more (states then come from the section)."""
    section = report.get("baseline")
    path = section.get("path") if isinstance(section, Mapping) else None
    if not isinstance(path, str) or not os.path.isfile(path):
        return None
    from laya_tui.core.errors import UsageError
    from laya_tui.report.baseline import load_baseline

    try:
        return load_baseline(path).report
    except UsageError:
        return None


def finding_outputs(report: ReportDict, settings: Settings
                    ) -> tuple[Callable[[], Iterator[str]] | None, Callable[[], None]]:
    """``--sarif``'s content (None without it; the caller writes it with the other output
    files, all or none) and the ``--annotations`` printer (stdout, a no-op without it),
    sharing one pass over the findings."""
    out = settings.outputs
    box: list[tuple[Sources, list[Finding]]] = []

    def findings() -> tuple[Sources, list[Finding]]:
        if not box:
            sources = Sources(settings.workspace)
            box.append((sources, collect_findings(report, sources, baseline_document(report))))
        return box[0]

    def sarif() -> Iterator[str]:
        sources, found = findings()
        return sarif_chunks(build_sarif(report, sources, findings=found))

    def annotate() -> None:
        if not out.annotations:
            return
        from laya_tui.report.annotations import annotation_lines

        files = [p for p in (out.sarif, out.json) if p and p != "-"]
        lines = annotation_lines(findings()[1], files=files,
                                 step_summary=bool(os.environ.get("GITHUB_STEP_SUMMARY")),
                                 states=state_words(report))
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()

    return (sarif if out.sarif else None), annotate


def write_finding_outputs(report: ReportDict, settings: Settings) -> None:
    """``--sarif PATH`` and ``--annotations`` (stdout) for one report."""
    from laya_tui.report.document import write_atomic

    sarif, annotate = finding_outputs(report, settings)
    if sarif is not None and settings.outputs.sarif:
        write_atomic(settings.outputs.sarif, sarif())
    annotate()
