"""``--markdown PATH``: a short summary for a pull-request comment (and GITHUB_STEP_SUMMARY).

The verdict, the probe counts (cells built but not run counted apart), one row per gate
(a tolerance gate with nothing compared says so), the findings no gate reads with how to
gate them, the probes that could not examine their subject (status ``error``: not findings,
listed apart from the failures), and when a baseline was given, the first regressions and
improvements. Deterministic for a given
report (no clock, no host facts).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Sequence

from laya_tui.core.report_types import BaselineDict, ChangeDict, ReportDict
from laya_tui.core.results import CHECK_KINDS, COUNTED_KINDS, ResultLike, occurrences
from laya_tui.report.baseline import regressed
from laya_tui.report.severity import probe_severity
from laya_tui.report.verdict import describe_failure

ROWS = 15
CELL_CHARS = 140


def _cell(text: object) -> str:
    s = " ".join(str(text).split()).replace("|", "\\|")
    return s if len(s) <= CELL_CHARS else s[:CELL_CHARS - 1] + "…"


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else _cell(text)


def _gates_table(report: ReportDict) -> list[str]:
    lines = ["| gate | result | details |", "|---|---|---|"]
    for g in report.get("gates", []):
        fails = g.get("failures", [])
        if g["passed"]:
            note = "nothing compared" if g.get("compared") == 0 else ""
            lines.append(f"| {_code(g['name'])} | ✅ pass | {note} |".replace("|  |", "| |"))
            continue
        first = describe_failure(g["name"], fails[0]) if fails else ""
        where = fails[0].get("probe") if fails and isinstance(fails[0], dict) else None
        detail = (f"{where}: " if where else "") + first
        more = f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""
        lines.append(f"| {_code(g['name'])} | ❌ {len(fails)} | {_cell(detail)}{more} |")
    return lines


def _changes_table(title: str, mark: str, items: Sequence[ChangeDict]) -> list[str]:
    if not items:
        return []
    lines = [f"**{title}** ({len(items)})", "", "| | probe | change |", "|---|---|---|"]
    for item in items[:ROWS]:
        lines.append(f"| {mark} | {_code(item['probe'])} | {_cell(item['message'])} |")
    if len(items) > ROWS:
        lines.append(f"| | … | {len(items) - ROWS} more in the JSON report |")
    lines.append("")
    return lines


def _baseline(section: BaselineDict) -> list[str]:
    regs, imps = section["regressions"], section["improvements"]
    p = section["probes"]
    when = f", written {section['created']}" if section.get("created") else ""
    lines = [f"### Baseline: {regressed(regs)} regression(s), {len(imps)} improvement(s)", "",
             f"Against {_code(os.path.basename(section['path']))}{when}; {p['compared']} of "
             f"{p['after']} probes compared.", ""]
    occ = section.get("occurrences") or {}
    rows = [(k, v) for k, v in occ.items() if v["before"] or v["after"]]
    if rows:
        lines += ["| kind | baseline | now | Δ |", "|---|---:|---:|---:|"]
        for kind, v in rows:
            delta = v["after"] - v["before"]
            label = f"failing {kind}" if kind in CHECK_KINDS else kind
            lines.append(f"| {label} | {v['before']} | {v['after']} | {delta:+d} |")
        lines.append("")
    lines += _changes_table("Regressions", "❌", regs)
    lines += _changes_table("Improvements", "✅", imps)
    env = section.get("environment") or {}
    if env:
        changed = ", ".join(f"{k} {v['before']} → {v['after']}" for k, v in env.items())
        lines += [f"Versions changed since the baseline: {_cell(changed)}", ""]
    return lines


def _occurrences(report: ReportDict) -> dict[str, int]:
    """Counted kinds by occurrences; checks by finding cell, each under its one finding kind
    (a wrong-output kernel fails its tolerance and so its lowering cell's run stage: one
    ``failing tolerance``, not also ``failing lowering``); in the severity order the table
    and the lists below use (:mod:`laya_tui.report.severity`)."""
    from laya_tui.report.verdict import finding_kind
    from laya_tui.report.views.legend import State, cell_state

    out: dict[str, int] = {}
    for p in report.get("probes", []):
        for sig in p.get("signals", []):
            kind = sig.get("kind")
            if kind in COUNTED_KINDS:
                n = occurrences(sig)
                if n:
                    out[kind] = out.get(kind, 0) + n
        if cell_state(p) == State.FINDING:
            kind = finding_kind(p)
            if kind in CHECK_KINDS:
                out[f"failing {kind}"] = out.get(f"failing {kind}", 0) + 1
    from laya_tui.report.severity import KIND_SEVERITY, Severity

    def band(key: str) -> Severity:  # the table's order: failed checks, fallbacks, ...
        return KIND_SEVERITY.get(key.removeprefix("failing "), Severity.OTHER)

    return dict(sorted(out.items(), key=lambda kv: band(kv[0])))


def _not_examined(report: ReportDict) -> list[str]:
    """Probes with status ``error``: the tool never reached their subject (not findings)."""
    from laya_tui.report.views.legend import State, cell_state

    probes = [p for p in report.get("probes", []) if cell_state(p) == State.NOT_EXAMINED]
    if not probes:
        return []
    return [f"**⚠ could not be examined** ({len(probes)}): nothing was found about these, "
            "fix what stopped the probe", ""] + _probe_table(probes, "why")


def _built(report: ReportDict) -> list[str]:
    """Cells built but not run or not compared: nothing was compared for them."""
    from laya_tui.report.views.legend import State, cell_state, not_run

    probes = [p for p in report.get("probes", [])
              if cell_state(p) in (State.NOT_RUN, State.NOT_COMPARED)]
    if not probes:
        return []
    return [f"**Built, not run or not compared** ({len(probes)}): nothing was compared for "
            "these", ""] + _probe_table(probes, "why", not_run)


def _probe_table(probes: Sequence[ResultLike], column: str,
                 why: Callable[[ResultLike], str | None] | None = None) -> list[str]:
    """``| ⚠ | probe | first line of its reason |`` for the first ``ROWS`` probes."""
    from laya_tui.report.views.legend import cell_state, state_mark

    lines = [f"| state | probe | {column} |", "|---|---|---|"]
    for p in probes[:ROWS]:
        reason = str((why(p) if why else p.get("reason")) or "").splitlines()
        lines.append(f"| {state_mark(cell_state(p)).label} | {_code(str(p['id']))} | "
                     f"{_cell(reason[0] if reason else '')} |")
    if len(probes) > ROWS:
        lines.append(f"| | … | {len(probes) - ROWS} more in the JSON report |")
    lines.append("")
    return lines


def _ungated(report: ReportDict) -> list[str]:
    """Findings no gate reads: how many, which kinds, each one, and how to gate them."""
    from laya_tui.report.verdict import finding_kind, gate_hint, ungated_probes, ungated_text

    # most severe first, report order within (the table's order: report.severity)
    probes = sorted(ungated_probes(report.get("probes", []), report.get("gates", [])),
                    key=probe_severity)
    if not probes:
        return []
    kinds = dict(Counter(finding_kind(p) for p in probes).most_common())
    hint = re.sub(r"(--[a-z-]+ [\w.]+)", r"`\1`", gate_hint(len(probes)))
    return [f"**{ungated_text(kinds)}**: {hint}.", ""] + _probe_table(probes, "finding")


def build_markdown(report: ReportDict) -> str:
    """The markdown summary of a report."""
    from laya_tui.report.verdict import verdict_line
    from laya_tui.report.views.legend import STATE_MARKS, State, state_counts

    s = report["summary"]
    states = s.get("states") or state_counts(report.get("probes", []))
    clean = s.get("passed") and not any(states.get(k) for k in (
        State.FINDING, State.NOT_EXAMINED, State.CRASHED, State.TIMEOUT))
    mark = "✅" if clean else ("⚠️" if s.get("passed") else "❌")
    counts = ", ".join(f"{n} {STATE_MARKS[k].label}" for k, n in states.items()
                       if n and k in STATE_MARKS)
    lines = [f"## laya-tui: {mark} {verdict_line(report)}", "",
             f"{s['probes']} probes: {counts} ({s.get('cached', 0)} cached).", ""]
    occ = _occurrences(report)
    if occ:
        lines += ["Occurrences: " + ", ".join(f"{k} {n}" for k, n in occ.items()) + ".", ""]
    lines += _gates_table(report) + [""]
    lines += _not_examined(report)  # the most severe first (report.severity)
    lines += _ungated(report)
    lines += _built(report)
    from laya_tui.report.views.placement import placement_markdown

    lines += placement_markdown(report.get("probes", []))
    from laya_tui.report.views.numerics import numerics_markdown

    lines += numerics_markdown(report.get("probes", []))
    if report.get("baseline"):
        lines += _baseline(report["baseline"])
    if report.get("env_comparison"):  # --env: what differs between the environments
        from laya_tui.report.envview import env_markdown

        lines += env_markdown(report["env_comparison"], report.get("envs"))
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"
