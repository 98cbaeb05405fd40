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
from collections.abc import Mapping, Sequence
from typing import Any

from laya_tui.core.results import CHECK_KINDS, COUNTED_KINDS, occurrences
from laya_tui.report.baseline import regressed
from laya_tui.report.verdict import describe_failure

ROWS = 15
CELL_CHARS = 140


def _cell(text: Any) -> str:
    s = " ".join(str(text).split()).replace("|", "\\|")
    return s if len(s) <= CELL_CHARS else s[:CELL_CHARS - 1] + "…"


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else _cell(text)


def _gates_table(report: dict[str, Any]) -> list[str]:
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


def _changes_table(title: str, mark: str, items: list[dict[str, Any]]) -> list[str]:
    if not items:
        return []
    lines = [f"**{title}** ({len(items)})", "", "| | probe | change |", "|---|---|---|"]
    for item in items[:ROWS]:
        lines.append(f"| {mark} | {_code(item['probe'])} | {_cell(item['message'])} |")
    if len(items) > ROWS:
        lines.append(f"| | … | {len(items) - ROWS} more in the JSON report |")
    lines.append("")
    return lines


def _baseline(section: dict[str, Any]) -> list[str]:
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


def _occurrences(report: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in report.get("probes", []):
        for sig in p.get("signals", []):
            kind = sig.get("kind")
            if kind in COUNTED_KINDS or kind in CHECK_KINDS:
                n = occurrences(sig)
                if n:
                    label = f"failing {kind}" if kind in CHECK_KINDS else kind
                    out[label] = out.get(label, 0) + n
    return out


def _not_examined(report: dict[str, Any]) -> list[str]:
    """Probes with status ``error``: the tool never reached their subject (not findings)."""
    probes = [p for p in report.get("probes", []) if p.get("status") == "error"]
    if not probes:
        return []
    return [f"**Could not be examined** ({len(probes)}): nothing was found about these, "
            "fix what stopped the probe", ""] + _probe_table(probes, "why")


def _probe_table(probes: Sequence[Mapping[str, Any]], column: str) -> list[str]:
    """``| ⚠ | probe | first line of its reason |`` for the first ``ROWS`` probes."""
    lines = [f"| | probe | {column} |", "|---|---|---|"]
    for p in probes[:ROWS]:
        reason = (p.get("reason") or "").splitlines()
        lines.append(f"| ⚠ | {_code(str(p['id']))} | {_cell(reason[0] if reason else '')} |")
    if len(probes) > ROWS:
        lines.append(f"| | … | {len(probes) - ROWS} more in the JSON report |")
    lines.append("")
    return lines


def _ungated(report: dict[str, Any]) -> list[str]:
    """Findings no gate reads: how many, which kinds, each one, and how to gate them."""
    from laya_tui.report.verdict import finding_kind, gate_hint, ungated_probes, ungated_text

    probes = ungated_probes(report.get("probes", []), report.get("gates", []))
    if not probes:
        return []
    kinds = dict(Counter(finding_kind(p) for p in probes).most_common())
    hint = re.sub(r"(--[a-z-]+ [\w.]+)", r"`\1`", gate_hint(len(probes)))
    return [f"**{ungated_text(kinds)}**: {hint}.", ""] + _probe_table(probes, "finding")


def build_markdown(report: dict[str, Any]) -> str:
    """The markdown summary of a report."""
    s = report["summary"]
    st = s["status"]
    verdict = "✅ PASS" if s.get("passed") else "❌ FAIL"
    not_examined = (f"{st['error']} could not be examined, " if st.get("error") else "")
    from laya_tui.report.verdict import not_run_text

    built = f" ({not_run_text(s['not_run']['why'])})" if s.get("not_run") else ""
    lines = [f"## laya-tui: {verdict}", "",
             f"{s['probes']} probes: {st.get('ok', 0)} ok{built}, {st.get('failed', 0)} failed, "
             f"{not_examined}{st.get('skipped', 0)} skipped, {st.get('crashed', 0)} crashed, "
             f"{st.get('timeout', 0)} timeout ({s.get('cached', 0)} cached).", ""]
    occ = _occurrences(report)
    if occ:
        lines += ["Occurrences: " + ", ".join(f"{k} {n}" for k, n in occ.items()) + ".", ""]
    lines += _gates_table(report) + [""]
    lines += _ungated(report)
    lines += _not_examined(report)
    if report.get("baseline"):
        lines += _baseline(report["baseline"])
    if report.get("env_comparison"):  # --env: what differs between the environments
        from laya_tui.report.envview import env_markdown

        lines += env_markdown(report["env_comparison"], report.get("envs"))
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"
