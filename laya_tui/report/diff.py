"""``laya-tui diff BASE.json NEW.json``: what changed between two saved reports.

The comparison is the baseline gate's (:func:`laya_tui.report.baseline.compare`): signals new, gone
and changed, tolerance values that moved, lowering cells, probes ok -> not ok and back. This
module only adds what a diff of two files needs besides it: every other status change (e.g.
failed -> crashed) as a note, and the library versions of the two reports' machines (the
baseline gate compares with this machine). The dashboard opens on the differences: one probe
per changed probe, one row per change, with the new (or, for gone ones, the old) signal's call
site and fix for the same drill-down. Standard library only (Textual when a TTY is there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NotRequired, TypedDict, cast

from laya_tui.core.cellid import family_of
from laya_tui.core.open_types import HostFacts
from laya_tui.core.report_types import (
    BaselineDict,
    BeforeAfterDict,
    ChangeDict,
    ReportDict,
    ResultDict,
    SignalDict,
)
from laya_tui.core.results import signal_key
from laya_tui.core.settings import DEFAULT_MARGIN
from laya_tui.core.signals import KINDS
from laya_tui.report.baseline import Baseline, compare, regressed

#: Change names that are bad news (the rest are improvements or notes).
BAD = frozenset(("new", "more", "more-bytes", "now-failing", "worse", "status"))



class ComparedDoc(TypedDict):
    """What a comparison reads of a report: its cells and its environment (the library
    versions); a saved report is one, ``report.envcompare`` builds one per environment."""

    probes: list[ResultDict]
    environment: HostFacts


class DiffDict(BaselineDict):
    """``laya-tui diff``'s section: the baseline comparison of NEW against BASE, its
    ``environment`` the versions that changed (``{name: {before, after}}``)."""

    new_path: NotRequired[str]  # set by laya-tui diff


def diff_reports(base: ComparedDoc, new: ComparedDoc, *, base_path: str = "BASE",
                 margin: float = DEFAULT_MARGIN,
                 labels: tuple[str, str] = ("BASE", "NEW")) -> DiffDict:
    """The baseline comparison of ``new`` against ``base``, plus status and version changes;
    ``labels`` name the two sides in the messages (``laya-tui diff``: BASE and NEW)."""
    # the baseline section, widened by the callers (envcompare, laya-tui diff) as they go
    # (envcompare passes documents of probes and environment only: all that is read)
    section = cast(DiffDict, dict(compare(Baseline(base_path, cast(ReportDict, base)),
                                          new.get("probes", []), margin=margin)))
    old_status = {p["id"]: p["status"] for p in base.get("probes", [])}
    for p in new.get("probes", []):
        before = old_status.get(p["id"])
        if before is None or before == p["status"] or "ok" in (before, p["status"]):
            continue  # new probes, unchanged ones and ok <-> not ok are already in section
        why = f": {p['reason']}" if p.get("reason") else ""
        section["notes"].append({
            "change": "status", "kind": "probe", "probe": p["id"],
            "before": {"status": before}, "after": {"status": p["status"],
                                                    "reason": p.get("reason")},
            "message": f"was {before}, now {p['status']}{why}"})
    for lst in (section["regressions"], section["improvements"], section["notes"]):
        for item in lst:  # the gate's words name "the baseline" and "this run"
            item["message"] = (item["message"].replace("the baseline", labels[0])
                               .replace("this run", labels[1]))
    section["notes"].sort(key=lambda i: (i["probe"], i["kind"], i.get("subject", ""),
                                         i["change"]))
    section["counts"]["notes"] = len(section["notes"])
    section["environment"] = _versions(base, new)
    return section


def _versions(base: ComparedDoc, new: ComparedDoc) -> dict[str, BeforeAfterDict]:
    def get(doc: ComparedDoc) -> dict[str, object]:
        v = (doc.get("environment") or {}).get("versions")
        return v if isinstance(v, dict) else {}

    old, now = get(base), get(new)
    return {k: {"before": old.get(k), "after": now.get(k)}
            for k in sorted(set(old) | set(now)) if old.get(k) != now.get(k)}


def all_changes(section: DiffDict) -> list[tuple[str, ChangeDict]]:
    """(class, item) for every change: class is regression, improvement or note."""
    out = [("regression", i) for i in section["regressions"]]
    out += [("improvement", i) for i in section["improvements"]]
    out += [("note", i) for i in section["notes"]]
    out.sort(key=lambda ci: (ci[1]["probe"], ci[1]["kind"], ci[1].get("subject", ""),
                             ci[0]))
    return out


# -- text ---------------------------------------------------------------------------------

def diff_text(section: DiffDict, base_label: str, new_label: str) -> str:
    """The whole diff as plain text, grouped by probe (``--headless``)."""
    regs, imps, notes = section["regressions"], section["improvements"], section["notes"]
    p = section["probes"]
    lines = [f"laya-tui diff {base_label} -> {new_label}",
             f"  {regressed(regs)} regression(s), {len(imps)} improvement(s), {len(notes)} "
             "note(s); "
             f"{p['compared']} probe(s) compared ({p['before']} before, {p['after']} after)"]
    occ = [(k, v) for k, v in (section.get("occurrences") or {}).items()
           if v["before"] or v["after"]]
    if occ:
        lines.append("  occurrences: " + ", ".join(
            f"{k} {v['before']} -> {v['after']}" for k, v in occ))
    env = section.get("environment") or {}
    if env:
        lines.append("  versions: " + ", ".join(
            f"{k} {v['before']} -> {v['after']}" for k, v in env.items()))
    probe = None
    marks = {"regression": "-", "improvement": "+", "note": "~"}
    for cls, item in all_changes(section):
        if item["probe"] != probe:
            probe = item["probe"]
            lines.append(f"{probe}")
        lines.append(f"  {marks[cls]} {cls:<11} {item['message']}")
    if not regs and not imps and not notes:
        lines.append("  no differences")
    return "\n".join(lines) + "\n"


def diff_markdown(section: DiffDict, base_label: str, new_label: str) -> str:
    """The diff as markdown (``--markdown PATH``): the baseline section's tables, and notes."""
    from laya_tui.report.markdown import _baseline, _cell, _code

    lines = [f"## laya-tui diff: {_code(base_label)} → {_code(new_label)}", ""]
    words = (("### Baseline:", "### BASE → NEW:"), ("| kind | baseline | now |",
                                                        "| kind | BASE | NEW |"),
             ("since the baseline", "from BASE to NEW"))
    for line in _baseline(cast(BaselineDict, dict(section, path=base_label))):
        for old, new in words:
            line = line.replace(old, new)
        lines.append(line)
    if section["notes"]:
        lines += [f"**Notes** ({len(section['notes'])})", "", "| probe | note |", "|---|---|"]
        lines += [f"| {_code(i['probe'])} | {_cell(i['message'])} |" for i in section["notes"]]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


# -- the dashboard's view of a diff --------------------------------------------------------

def _signals_by_key(report: ReportDict
                    ) -> dict[tuple[str, str, str | None, str | None], SignalDict]:
    """Signals by key; a change's subject and reason may be null (as the JSON has them),
    which no signal's key is."""
    out: dict[tuple[str, str, str | None, str | None], SignalDict] = {}
    for p in report.get("probes", []):
        for s in p.get("signals") or ():
            out.setdefault(signal_key(s, p["id"]), s)
    return out


def _unknown_probe(pid: str) -> ResultDict:
    """A cell neither report has (no change names one): what the view then shows."""
    return {"id": pid, "family": "", "status": "skipped", "reason": None, "seconds": 0.0,
            "cached": False, "deps": [], "signals": [], "log_tail": ""}


def diff_report(base: ReportDict, new: ReportDict, section: DiffDict) -> ReportDict:
    """A report document whose probes are the changed probes and whose signals are the
    changes (kind, subject and reason of the signal; ``detail.change``, ``before``,
    ``after``); the dashboard, the HTML page and ``show`` read it like any report."""
    new_sigs, old_sigs = _signals_by_key(new), _signals_by_key(base)
    new_probes = {p["id"]: p for p in new.get("probes", [])}
    old_probes = {p["id"]: p for p in base.get("probes", [])}
    probes: dict[str, ResultDict] = {}
    for cls, item in all_changes(section):
        pid = item["probe"]
        src = new_probes.get(pid) or old_probes.get(pid) or _unknown_probe(pid)
        entry = probes.get(pid)
        if entry is None:
            entry = probes[pid] = {
                "id": pid, "family": src.get("family") or family_of(pid),
                "status": src.get("status", "skipped"),
                "reason": src.get("reason") if pid in new_probes else "not in the new report",
                "seconds": src.get("seconds", 0.0), "cached": bool(src.get("cached")),
                "deps": src.get("deps", []), "signals": [], "log_tail": src.get("log_tail", ""),
                "file": src.get("file"), "params": src.get("params", {})}
        kind = item["kind"] if item["kind"] in KINDS else "log"
        key = (pid, item["kind"], item.get("subject", ""), item.get("reason", ""))
        orig: Mapping[str, object] = new_sigs.get(key) or old_sigs.get(key) or {}
        sig: dict[str, object] = {"kind": kind, "probe": pid,
                                  "subject": item.get("subject") or item["kind"],
                                  "reason": item["message"]}
        for fld in ("site", "fix"):
            if orig.get(fld):
                sig[fld] = orig[fld]
        after = item.get("after") or {}
        before = item.get("before") or {}
        for fld in ("count", "bytes"):
            if isinstance(after.get(fld), int):
                sig[fld] = after[fld]
        if kind == "tolerance" and isinstance(after.get("limit"), (int, float)):
            sig["value"], sig["limit"] = after.get("value"), after["limit"]
        if kind in ("tolerance", "lowering") and isinstance(after.get("passed"), bool):
            sig["passed"] = after["passed"]  # a failing check stays marked failing
        detail = {"change": item["change"], "class": cls, "before": before or None,
                  "after": after or None}
        orig_detail = orig.get("detail")
        if isinstance(orig_detail, dict):
            for k in ("diagnostic", "source_excerpt", "generated_source", "kernel", "target",
                      "dtype", "spec", "outcome", "stage", "kernel_site"):
                if k in orig_detail:
                    detail[k] = orig_detail[k]
        sig["detail"] = detail
        entry["signals"].append(cast(SignalDict, sig))  # the fields of a signal, set above
    from laya_tui.report.document import summarise

    plist = list(probes.values())
    summary = summarise(plist, 0.0)
    summary["passed"] = not section["regressions"]
    doc: dict[str, object] = {
        "schema": new.get("schema"), "tool": new.get("tool"), "created": new.get("created"),
        "environment": new.get("environment", {}), "errors": new.get("errors", []),
        "probes": plist, "summary": summary,
        "gates": [{"name": "diff", "description": "no regression from BASE to NEW",
                   "passed": not section["regressions"],
                   "failures": section["regressions"]}],
        "diff": section,
    }
    return cast(ReportDict, doc)  # and "diff": the section the dashboard and page show
