"""A cell's numerics (issue 43): per compared output, its gap table and its precision plan.

report/4 writes them on each cell as ``numerics`` (:func:`cell_numerics`, from the signals
that carry ``detail.gap_table`` and ``detail.precision_plan``); an older report's cells get
the same list from their signals when read (:func:`numerics_of`). The drill-down's gap
table and plan sections, the markdown section and the SARIF plan results read it here.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict, cast

from laya_tui.core.open_types import JsonObject
from laya_tui.core.report_types import (
    GapRowDict,
    GapTableDict,
    NumericsDict,
    PrecisionPlanDict,
    ReportDict,
    ResultDict,
    SignalDict,
)
from laya_tui.core.results import ResultLike
from laya_tui.core.shapes import as_dict, as_list
from laya_tui.report.views.sections import SortValue
from laya_tui.report.views.text import human_bytes, number

if TYPE_CHECKING:
    from laya_tui.report.rules import Rule
    from laya_tui.report.sarif_types import PhysicalLocation, Result
    from laya_tui.report.sources import Location, Sources

#: Rows of a gap table kept on the cell (the signal's detail holds up to 200, the artifact
#: every one).
TOP_ROWS = 10
GAP_SUFFIX, PLAN_SUFFIX = " gap table", " precision plan"
_PLAN_KEYS = ("status", "fp32_modules", "verified_error", "baseline_error", "fp32_error",
              "limit", "forwards", "seconds", "dtype", "reason", "sites", "class_sites")
_GAP_KEYS = ("path", "modules", "output", "budget_bytes", "peak_bytes", "activation_bytes",
             "spilled_bytes", "spilled_files", "seconds", "artifact", "note")


def _subject(sig: SignalDict, suffix: str) -> str:
    s = str(sig.get("subject") or "")
    return s[: -len(suffix)] if s.endswith(suffix) else s


class _Parts(TypedDict, total=False):
    gap_table: GapTableDict
    precision_plan: PrecisionPlanDict


def cell_numerics(probe: ResultLike) -> list[NumericsDict]:
    """``[{subject, gap_table?, precision_plan?}]`` from a cell's signals, one entry per
    compared output in signal order (the gap table's top :data:`TOP_ROWS` rows; the plan
    without its snippet). An output's gap table comes before its plan; a second table, or a
    table after a plan, under a subject already seen is another output (two outputs
    compared under one name), never written over the first."""
    entries: list[tuple[str, _Parts]] = []
    last: dict[str, _Parts] = {}  # subject -> its latest entry

    def entry_for(subject: str, part: str) -> _Parts:
        got = last.get(subject)
        if got is None or part in got or (part == "gap_table" and "precision_plan" in got):
            got = last[subject] = {}
            entries.append((subject, got))
        return got

    for sig in as_list(probe.get("signals")):
        d = as_dict(as_dict(sig).get("detail"))
        # the worker's JSON: their known keys, read by name from here on
        gap, plan = as_dict(d.get("gap_table")), as_dict(d.get("precision_plan"))
        if gap:
            entry_for(_subject(sig, GAP_SUFFIX), "gap_table")["gap_table"] = cast(
                GapTableDict, dict({k: gap[k] for k in _GAP_KEYS if k in gap},
                                   rows=as_list(gap.get("rows"))[:TOP_ROWS]))
        if plan:
            entry_for(_subject(sig, PLAN_SUFFIX), "precision_plan")["precision_plan"] = cast(
                PrecisionPlanDict, {k: plan[k] for k in _PLAN_KEYS if k in plan})
    return [NumericsDict(subject=k, **v) for k, v in entries]


def numerics_of(probe: ResultLike) -> list[NumericsDict]:
    """The cell's ``numerics`` (report/4), else derived from its signals (older reports;
    ``probe``: a report entry, or the fields the dashboard knows of a running cell). A saved
    list with fewer entries than its signals hold (written before two outputs compared
    under one name each kept their own) is derived again from the signals."""
    got = probe.get("numerics")
    if isinstance(got, list):
        saved = cast(list[NumericsDict], _dicts(got))
        derived = cell_numerics(probe)
        return derived if len(derived) > len(saved) else saved
    return cell_numerics(probe)


def plan_of(entry: Mapping[str, object]) -> PrecisionPlanDict:
    """An entry's (or a signal detail's) precision plan; empty when it has none."""
    return cast(PrecisionPlanDict, as_dict(entry.get("precision_plan")))


def gap_of(entry: Mapping[str, object]) -> GapTableDict:
    """An entry's (or a signal detail's) gap table; empty when it has none."""
    return cast(GapTableDict, as_dict(entry.get("gap_table")))


def rows_of(gap: GapTableDict) -> list[GapRowDict]:
    """A gap table's rows that are objects."""
    return cast(list[GapRowDict], _dicts(gap.get("rows")))


def _dicts(value: object) -> list[JsonObject]:
    """The items of a JSON list that are objects, in order (the caller casts them to the
    report's type they are)."""
    return [v for v in as_list(value) if isinstance(v, dict)]


#: A plan's ``status`` in words (the words of the search's own reasons), for every output.
PLAN_OUTCOMES = {
    "found": "found: a plan verified by a re-run",
    "not_needed": "not needed: the output holds its limit",
    "no_plan": "no plan: no set of modules short of the whole model meets the limit",
    "not_precision": "fails in fp32 too: not a precision problem",
    "budget": "search budget spent (forwards or seconds) before a verified plan",
    "skipped": "skipped: the model is not bf16/fp16",
}


def plan_outcome(status: object) -> str:
    """A plan's ``status`` in words (an unknown one as it is)."""
    return PLAN_OUTCOMES.get(str(status or ""), str(status or ""))


def plan_text(plan: PrecisionPlanDict) -> str:
    """``keep 1, 2 in fp32: verified 0.0023 <= 0.05 (was 0.337), 6 forwards`` or the
    plan's reason when none was found."""
    if plan.get("status") == "found":
        mods = ", ".join(map(str, as_list(plan.get("fp32_modules"))))
        return (f"keep {mods} in fp32: verified max|diff| {number(plan.get('verified_error'))}"
                f" <= {number(plan.get('limit'))} (was {number(plan.get('baseline_error'))}),"
                f" {plan.get('forwards')} forwards")
    return str(plan.get("reason") or plan_outcome(plan.get("status")))


def memory_text(gap: GapTableDict) -> str:
    """``peak 9.2 KiB in memory (budget 256.0 MiB, 0 B spilled) of 9.2 KiB``."""
    budget = gap.get("budget_bytes")
    return (f"peak {human_bytes(gap.get('peak_bytes'))} in memory"
            + (f" (budget {human_bytes(budget)}, {human_bytes(gap.get('spilled_bytes'))} "
               "spilled to disk)" if budget else " (no budget)")
            + f" of {human_bytes(gap.get('activation_bytes'))} fp32 records")


#: The gap table's columns: (label, row key).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("module", "module"), ("type", "type"), ("error", "error"), ("local error", "local"),
    ("limit", "limit"), ("local/limit", "ratio"), ("share", "share"))


def row_values(row: GapRowDict) -> list[SortValue]:
    """A row's values in :data:`COLUMNS` order (sort keys: numbers, None when absent)."""
    local, limit = row.get("local"), row.get("limit")
    ratio = local / limit if isinstance(local, (int, float)) and isinstance(
        limit, (int, float)) and limit > 0 else None
    values: dict[str, SortValue] = {"module": row.get("module"), "type": row.get("type"),
                                    "error": row.get("error"), "local": local, "limit": limit,
                                    "ratio": ratio, "share": row.get("share")}
    return [values[key] for _, key in COLUMNS]


def row_texts(row: GapRowDict) -> list[str]:
    out = []
    for (_, key), v in zip(COLUMNS, row_values(row), strict=True):
        if v is None:
            out.append("" if key != "local" else str(row.get("note") or "—"))
        elif key == "share":
            out.append(f"{v:.0%}")
        elif key == "ratio":
            out.append(f"{v:.3g}x")
        elif isinstance(v, (int, float)):
            out.append(number(v))
        else:
            out.append(str(v))
    return out


def numerics_markdown(probes: Sequence[ResultDict]) -> list[str]:
    """A ``### Numerics`` section: per cell and output, the plan and the gap table's top
    rows (nothing when no cell has either)."""
    lines: list[str] = []
    for p in probes:
        for entry in numerics_of(p):
            if not lines:
                lines += ["", "### Numerics", ""]
            lines.append(f"**{p.get('id')}** · {entry.get('subject')}")
            lines.append("")
            plan = plan_of(entry)
            if plan:
                lines += [f"- precision plan: {' '.join(plan_text(plan).split())}", ""]
            gap = gap_of(entry)
            if gap:
                lines += [f"- gap table ({gap.get('path', 'eager')}, {gap.get('modules')} "
                          f"module calls; {memory_text(gap)}):", "",
                          "  | " + " | ".join(label for label, _ in COLUMNS) + " |",
                          "  |" + "---|" * len(COLUMNS)]
                lines += ["  | " + " | ".join(_md(t) for t in row_texts(r)) + " |"
                          for r in rows_of(gap)]
                lines.append("")
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def gap_facts(gap: GapTableDict) -> list[tuple[str, str]]:
    """The facts above a gap table: the output, the memory, the artifact."""
    out = as_dict(gap.get("output"))
    rows = [("path", str(gap.get("path") or "eager")),
            ("modules", f"{gap.get('modules')} module call(s) compared"),
            ("output", f"max|diff| {number(out.get('error'))} vs limit "
                       f"{number(out.get('limit'))}" if out else ""),
            ("memory", memory_text(gap)),
            ("note", str(gap.get("note") or "")),
            ("rows", f"top {gap['rows_shown']} shown" if gap.get("rows_shown") else ""),
            ("table", str(gap.get("artifact") or ""))]
    return [(k, v) for k, v in rows if v]


def plan_facts(plan: PrecisionPlanDict) -> list[tuple[str, str]]:
    """The precision plan's facts: outcome, modules, verified error, budget spent, where."""
    rows = [("outcome", plan_outcome(plan.get("status"))),
            ("keep in fp32", ", ".join(map(str, as_list(plan.get("fp32_modules"))))),
            ("verified", f"max|diff| {number(plan.get('verified_error'))} <= limit "
                         f"{number(plan.get('limit'))}" if plan.get("verified_error")
             is not None else ""),
            ("before", f"max|diff| {number(plan.get('baseline_error'))}"
             if plan.get("baseline_error") is not None else ""),
            ("whole model fp32", number(plan.get("fp32_error"))
             if plan.get("fp32_error") is not None else ""),
            ("spent", f"{plan.get('forwards')} of {plan.get('max_forwards', '?')} forwards, "
                      f"{number(plan.get('seconds'))} s")]
    for name, where in as_dict(plan.get("class_sites")).items():
        w = as_dict(where)
        rows.append((f"class of {name}", f"{w.get('file')}:{w.get('line')} ({w.get('func')})"))
    return [(k, v) for k, v in rows if v]


# -- SARIF: a found plan as a result with a fix at the kept modules' class lines -----------

PLAN_RULE_ID = "laya/precision-plan"


def plan_rule() -> Rule:
    """The SARIF rule of a precision plan (a note: a fix to apply, not a finding)."""
    from laya_tui.report.rules import Rule

    return Rule(PLAN_RULE_ID, "PrecisionPlan", "modules to keep in fp32",
                "A bf16/fp16 output failed its limit against fp32; keeping these modules in "
                "fp32 brings it within the limit, verified by a re-run (issue 43).",
                "Apply the plan with the cast_keeping_fp32 snippet in the report (the "
                "precision plan signal's fix), or keep the named modules in fp32 by hand.",
                "note", None, ("numerics",))


def plan_results(report: ReportDict, sources: Sources, rule_index: int
                 ) -> list[Result]:
    """One SARIF result per found plan whose kept modules' classes are in the source tree:
    at the first kept module's ``class`` line, the others as ``relatedLocations``, and a
    ``fixes`` entry that marks each class line with the plan (the pasteable snippet is in
    the message's markdown and the JSON report)."""
    from urllib.parse import quote

    out: list[Result] = []
    for p in as_list(report.get("probes")):
        if not isinstance(p, Mapping):
            continue
        for entry in numerics_of(p):
            plan = plan_of(entry)
            if plan.get("status") != "found":
                continue
            locs: list[tuple[str, Location, int]] = []  # (module, class site, its line)
            for name, site in as_dict(plan.get("class_sites")).items():
                loc = sources.site(site)
                if loc is not None and loc.line:
                    locs.append((name, loc, loc.line))
            if not locs:
                continue
            text = (f"{p.get('id')}: {entry.get('subject')}: precision plan: "
                    f"{plan_text(plan)}")
            gap = gap_of(entry)
            rows = rows_of(gap)
            if rows:
                top = rows[0]
                text += (f"; gap table: most own error {top.get('module')} "
                         f"({top.get('type')}) local {number(top.get('local'))} vs limit "
                         f"{number(top.get('limit'))}")

            def phys(loc: Location, line: int) -> PhysicalLocation:
                return {"artifactLocation": {"uri": quote(loc.path, safe="/"),
                                             "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": line}}

            keep = [str(m) for m in as_list(plan.get("fp32_modules"))]
            result: Result = {
                "ruleId": PLAN_RULE_ID, "ruleIndex": rule_index, "level": "note",
                "message": {"text": text},
                "locations": [{"physicalLocation": phys(locs[0][1], locs[0][2]),
                               "logicalLocations": [{"name": locs[0][1].func or locs[0][0],
                                                     "kind": "type"}]}],
                "fixes": [{
                    "description": {"text": f"keep {', '.join(keep)} in fp32 (KEEP_FP32 = "
                                            f"{keep!r}; cast_keeping_fp32 in the report)"},
                    "artifactChanges": [{
                        "artifactLocation": phys(loc, line)["artifactLocation"],
                        "replacements": [{
                            "deletedRegion": {"startLine": line, "startColumn": 1,
                                              "endLine": line, "endColumn": 1},
                            "insertedContent": {"text": f"# laya-tui precision plan: keep "
                                                        f"{name} in fp32 (verified max|diff| "
                                                        f"{number(plan.get('verified_error'))}"
                                                        f" <= {number(plan.get('limit'))})\n"}}]}
                        for name, loc, line in locs]}],
                "partialFingerprints": {"layaSignal/v1": f"plan:{p.get('id')}:"
                                                         f"{entry.get('subject')}"},
                "properties": {"fp32_modules": keep, "verified_error":
                               plan.get("verified_error"), "limit": plan.get("limit"),
                               "forwards": plan.get("forwards")},
            }
            if rows:  # the gap table's top rows beside the plan
                result["properties"]["gap_table"] = rows[:5]
            if len(locs) > 1:
                result["relatedLocations"] = [
                    {"id": i, "physicalLocation": phys(loc, line),
                     "message": {"text": f"also keep {name} in fp32"}}
                    for i, (name, loc, line) in enumerate(locs[1:], 1)]
            out.append(result)
    return out


def numerics_facts(probe: ResultLike) -> list[tuple[str, str]]:
    """One fact per compared output for a cell's own detail: its plan and the module that
    makes most of its own error."""
    out = []
    for entry in numerics_of(probe):
        parts = []
        plan = plan_of(entry)
        if plan:
            parts.append(f"precision plan: {plan_text(plan)}")
        rows = rows_of(gap_of(entry))
        if rows:
            top = rows[0]
            parts.append(f"most own error: {top.get('module')} ({top.get('type')}) local "
                         f"{number(top.get('local'))} vs limit {number(top.get('limit'))}")
        if parts:
            out.append((str(entry.get("subject") or "output"), "; ".join(parts)))
    return out
