"""Read a saved report (``laya-tui show``/``diff``): the baseline loader's checks, its wording.

One validation for every reader of an earlier report: :func:`laya_tui.report.baseline.load_baseline`
does the work (schema version, shape, truncation); only its messages are re-worded, since the
file here is the subject, not a baseline. Standard library only.
"""

from __future__ import annotations

from typing import cast

from laya_tui.core.cellid import family_of
from laya_tui.core.errors import UsageError
from laya_tui.core.open_types import JsonObject
from laya_tui.core.report_types import ReportDict
from laya_tui.report.baseline import load_baseline


def load_saved_report(path: str) -> ReportDict:
    """The report document at ``path``; any problem is a one-line :class:`UsageError`."""
    try:
        return normalise(load_baseline(path).report)
    except UsageError as exc:
        text = str(exc)
        for old, new in ((f"cannot read baseline {path}", f"cannot read {path}"),
                         (f"baseline {path}", path),
                         ("regenerate the baseline", "regenerate the report")):
            text = text.replace(old, new)
        raise UsageError(text) from None


def normalise(report: ReportDict) -> ReportDict:
    """Fill what readers index without asking (a hand-edited or partial report must not
    crash them): each probe's family and fields, a summary with every count, gate lists."""
    from laya_tui.report.document import summarise

    for p in report["probes"]:
        p.setdefault("family", family_of(p["id"]))
        p.setdefault("signals", [])
        p.setdefault("reason", None)
        p.setdefault("cached", False)
        p.setdefault("deps", [])
        p.setdefault("log_tail", "")
        if not isinstance(p.get("seconds"), (int, float)):
            p["seconds"] = 0.0
    if not isinstance(report.get("environment"), dict):
        report["environment"] = {}
    if not isinstance(report.get("errors"), list):
        report["errors"] = []
    gates = report.get("gates")
    report["gates"] = [g for g in gates if isinstance(g, dict) and "name" in g] \
        if isinstance(gates, list) else []
    for g in report["gates"]:
        g["passed"] = bool(g.get("passed"))
        if not isinstance(g.get("failures"), list):
            g["failures"] = []
    summary = cast("JsonObject | None", report.get("summary"))  # as read: any shape
    fresh = summarise(report["probes"], float((summary or {}).get("seconds") or 0.0)
                      if isinstance(summary, dict) and isinstance(
                          summary.get("seconds"), (int, float)) else 0.0)
    if isinstance(summary, dict):
        counts: JsonObject = dict(fresh)
        for key, value in counts.items():
            if not isinstance(summary.get(key), type(value)):
                summary[key] = value
        for key in ("status", "signals"):
            for k, n in counts[key].items():
                summary[key].setdefault(k, n)
    else:
        report["summary"] = fresh
        summary = cast("JsonObject", fresh)
    if not isinstance(summary.get("passed"), bool):
        summary["passed"] = all(g["passed"] for g in report["gates"])
    return report


def durations_from_report(path: str) -> dict[str, float]:
    """``{probe id: seconds}`` from an earlier laya-tui report (a UsageError when unusable)."""
    from laya_tui.core.shard import is_seconds
    from laya_tui.report.merge import load_report

    doc = load_report(path, what="--durations report", any_readable=True)
    out: dict[str, float] = {}
    for p in doc["probes"]:
        sec = p.get("seconds")
        if isinstance(p.get("id"), str) and is_seconds(sec):
            out[p["id"]] = float(sec or 0.0)
    return out
