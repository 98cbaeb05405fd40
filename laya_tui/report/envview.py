"""The environment comparison (``env_comparison``, :mod:`laya_tui.report.envcompare`) as
text for stderr, markdown and an HTML section: versions side by side, then per candidate
the cells whose status or first diagnostic changed, regressions and improvements (signals
new and gone included), tolerance values and the largest timing ratios. Standard library
only."""

from __future__ import annotations

import html
from collections.abc import Mapping

from laya_tui.core.report_types import (
    EnvCandidateDict,
    EnvComparisonDict,
    EnvInfoDict,
    EnvSideDict,
    TimingDeltaDict,
)

#: Rows of each group shown on stderr and in markdown (the JSON report has every one).
ROWS = 10
#: Timing rows shown when one side took at least this many times the other (the JSON
#: report keeps the largest ratios whatever they are).
TIMING_SHOWN = 1.2
#: Versions shown side by side (others appear when they differ).
SHOWN = ("python", "torch", "tilelang", "transformers", "torch-rbln", "mlx")


def one_line(text: object, width: int = 160) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= width else s[:width - 1] + "…"


def fmt(v: object) -> str:
    return "n/a" if v is None else f"{v:.3g}" if isinstance(v, float) else str(v)


def state_text(side: EnvSideDict) -> str:
    st = str(side.get("status"))
    return st if st == "ok" or not side.get("reason") else f"{st}: {one_line(side['reason'], 200)}"


def timing_shown(cand: EnvCandidateDict) -> list[TimingDeltaDict]:
    """The timing rows worth a line: a ratio of at least :data:`TIMING_SHOWN` either way."""
    return [t for t in cand.get("timing", ())
            if t["ratio"] >= TIMING_SHOWN or t["ratio"] <= 1 / TIMING_SHOWN]


def headline(cand: EnvCandidateDict) -> str:
    """``@new vs @old: 2 regression(s), ...`` for one candidate."""
    p = cand["probes"]
    return (f"@{cand['env']} vs @{cand['base']}: {len(cand['regressions'])} regression(s), "
            f"{len(cand['improvements'])} improvement(s), {len(cand['statuses'])} status "
            f"change(s), {len(cand['diagnostics'])} first diagnostic(s) changed; "
            f"{p['compared']} cell(s) compared")


def version_rows(section: EnvComparisonDict, envs: Mapping[str, EnvInfoDict] | None
                 ) -> list[tuple[str, list[object], bool]]:
    """``(library, [version per env], differs)``: the tracked libraries and compilers."""
    names = list(section["envs"])
    envs = envs or {}

    def versions(n: str) -> Mapping[str, object]:
        info = envs.get(n)
        v = info.get("versions") if info else None
        return v if isinstance(v, Mapping) else {}

    def compilers(n: str) -> dict[str, object]:
        info = envs.get(n)
        c = info.get("compilers") if info else None
        return {k: (v or {}).get("version") if isinstance(v, Mapping) else v
                for k, v in (c.items() if isinstance(c, Mapping) else ())}

    keys = list(SHOWN) + sorted({k for n in names for k in versions(n)} - set(SHOWN))
    rows: list[tuple[str, list[object], bool]] = []
    for k in keys:
        vals = [versions(n).get(k) for n in names]
        if k in SHOWN or len(set(map(str, vals))) > 1:
            rows.append((k, vals, len(set(map(str, vals))) > 1))
    for k in sorted({k for n in names for k in compilers(n)}):
        vals = [compilers(n).get(k) for n in names]
        rows.append((k, vals, len(set(map(str, vals))) > 1))
    return rows


def env_summary_lines(section: EnvComparisonDict, limit: int = ROWS) -> list[str]:
    """A few stderr lines per candidate environment."""
    lines = []
    for cand in section.get("candidates", []):
        lines.append("  environments " + headline(cand))
        changed = cand.get("versions") or {}
        if changed:
            lines.append("    versions: " + ", ".join(
                f"{k} {v['before']} -> {v['after']}" for k, v in changed.items()))
        groups = (
            ("status", [f"{i['probe']}: {i['before']['status']} -> {i['after']['status']}"
                        for i in cand["statuses"]]),
            ("diagnostic", [f"{i['probe']}: {state_text(i['before'])}  ->  {state_text(i['after'])}"
                            for i in cand["diagnostics"]]),
            ("regression", [f"{i['probe']}: {i['message']}" for i in cand["regressions"]]),
            ("improvement", [f"{i['probe']}: {i['message']}" for i in cand["improvements"]]),
        )
        for label, rows in groups:
            for row in rows[:limit]:
                lines.append(f"    {label:<11} {one_line(row, 400)}")
            if len(rows) > limit:
                lines.append(f"    {label:<11} ... and {len(rows) - limit} more (JSON report)")
    return lines


def env_text(section: EnvComparisonDict, envs: Mapping[str, EnvInfoDict] | None = None
             ) -> str:
    """The whole comparison as plain text (versions, then every group in full)."""
    names = section["envs"]
    lines = ["versions: " + "  ".join(f"@{n}" for n in names)]
    for k, vals, differs in version_rows(section, envs):
        lines.append(f"  {'*' if differs else ' '} {k:<14} " + "  ".join(fmt(v) for v in vals))
    lines += env_summary_lines(section, limit=10**9)
    for cand in section.get("candidates", []):
        for t in cand["tolerance"]:
            lines.append(f"    tolerance   {t['probe']} {t['subject']}: {fmt(t['before'])} -> "
                         f"{fmt(t['after'])} (limit {fmt(t['limit'])})")
        for tm in timing_shown(cand)[:ROWS]:
            lines.append(f"    timing      {tm['probe']} {tm['subject']}: {tm['before']:.3g} s "
                         f"-> {tm['after']:.3g} s (x{tm['ratio']:.2f})")
    return "\n".join(lines) + "\n"


# -- markdown ---------------------------------------------------------------------------------

def _md(text: object, width: int = 140) -> str:
    return one_line(text, width).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else _md(text)


def env_markdown(section: EnvComparisonDict, envs: Mapping[str, EnvInfoDict] | None
                 ) -> list[str]:
    """Markdown lines: versions side by side, then per candidate its changes."""
    names = section["envs"]
    lines = [f"### Environments: {' vs '.join('@' + n for n in names)}", "",
             "| | " + " | ".join(f"@{n}" for n in names) + " |",
             "|---|" + "---|" * len(names)]
    for k, vals, differs in version_rows(section, envs):
        cells = [f"**{_md(fmt(v), 60)}**" if differs else _md(fmt(v), 60) for v in vals]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines.append("")
    for cand in section.get("candidates", []):
        a, b = f"@{cand['base']}", f"@{cand['env']}"
        lines += [f"**{_md(headline(cand), 300)}**", ""]
        if cand["diagnostics"]:
            lines += [f"First diagnostics that changed ({len(cand['diagnostics'])})", "",
                      f"| cell | {a} | {b} |", "|---|---|---|"]
            lines += [f"| {_code(i['probe'])} | {_md(state_text(i['before']))} | "
                      f"{_md(state_text(i['after']))} |" for i in cand["diagnostics"][:ROWS * 2]]
            lines.append("")
        for title, mark, items in (("Regressions", "❌", cand["regressions"]),
                                   ("Improvements", "✅", cand["improvements"])):
            if items:
                lines += [f"{title} ({len(items)})", "", "| | cell | change |", "|---|---|---|"]
                lines += [f"| {mark} | {_code(i['probe'])} | {_md(i['message'])} |"
                          for i in items[:ROWS]]
                if len(items) > ROWS:
                    lines.append(f"| | … | {len(items) - ROWS} more in the JSON report |")
                lines.append("")
        if cand["tolerance"]:
            lines += [f"| cell | tolerance | {a} | {b} | limit |", "|---|---|---:|---:|---:|"]
            lines += [f"| {_code(t['probe'])} | {_md(t['subject'])} | {fmt(t['before'])} | "
                      f"{fmt(t['after'])} | {fmt(t['limit'])} |" for t in cand["tolerance"][:ROWS]]
            lines.append("")
    return lines


# -- HTML ---------------------------------------------------------------------------------------

def _h(text: object) -> str:
    return html.escape(str(text if text is not None else ""))


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{_h(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def env_html(section: EnvComparisonDict | None, envs: Mapping[str, EnvInfoDict] | None
             ) -> str:
    """An HTML ``<section id="envs">`` of the comparison (escaped; empty without one)."""
    if not section:
        return ""
    names = section["envs"]
    parts = ['<section id="envs" class="envs" style="max-width:1400px;margin:0 auto;'
             'padding:0 24px 64px"><h2>Environments: '
             + _h(" vs ".join("@" + n for n in names)) + "</h2>"]
    parts.append(_table([""] + [f"@{n}" for n in names], [
        [_h(k)] + [f"<b>{_h(fmt(v))}</b>" if differs else _h(fmt(v)) for v in vals]
        for k, vals, differs in version_rows(section, envs)]))
    for cand in section.get("candidates", []):
        a, b = f"@{cand['base']}", f"@{cand['env']}"
        parts.append(f"<h3>{_h(headline(cand))}</h3>")
        if cand["statuses"] or cand["diagnostics"]:
            seen = {i["probe"]: i for i in cand["statuses"]}
            seen.update({i["probe"]: i for i in cand["diagnostics"]})
            parts.append("<h4>Status and first diagnostic</h4>" + _table(
                ["cell", a, b], [[f"<code>{_h(i['probe'])}</code>", _h(state_text(i["before"])),
                                  _h(state_text(i["after"]))] for _, i in sorted(seen.items())]))
        for title, cls, items in (("Regressions", "bad", cand["regressions"]),
                                  ("Improvements", "good", cand["improvements"]),
                                  ("Notes", "note", cand["notes"])):
            if items:
                parts.append(f"<h4>{title} ({len(items)})</h4>" + _table(
                    ["cell", "change"], [[f"<code>{_h(i['probe'])}</code>",
                                          f'<span class="{cls}">{_h(i["message"])}</span>']
                                         for i in items]))
        if cand["tolerance"]:
            parts.append("<h4>Tolerance</h4>" + _table(
                ["cell", "check", a, b, "limit"],
                [[f"<code>{_h(t['probe'])}</code>", _h(t["subject"]), _h(fmt(t["before"])),
                  _h(fmt(t["after"])), _h(fmt(t["limit"]))] for t in cand["tolerance"]]))
        if timing_shown(cand):
            parts.append("<h4>Timing (largest ratios)</h4>" + _table(
                ["cell", "timing", f"{a} s", f"{b} s", "ratio"],
                [[f"<code>{_h(t['probe'])}</code>", _h(t["subject"]), _h(f"{t['before']:.3g}"),
                  _h(f"{t['after']:.3g}"), _h(f"x{t['ratio']:.2f}")]
                 for t in timing_shown(cand)[:ROWS * 2]]))
    parts.append("</section>")
    return "".join(parts)
