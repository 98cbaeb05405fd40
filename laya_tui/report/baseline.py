"""``--baseline``: load an earlier report and compare this run with it.

Signals are matched by their stable key (probe id, kind, subject, reason). Only probes that
completed (status ``ok`` or ``failed``) in both reports are compared signal by signal; the
others are listed as notes, so a probe added in a pull request, or one skipped on the
baseline's machine, never fails the gate by itself (its own thresholds still apply).

Regressions (they fail the ``baseline`` gate):
  * fallback / recompile / host_bounce / cast: a new key, more occurrences, more bytes
    (``compile``, a frame's first compile, is not compared; a report/1 baseline's
    "cold compile" recompiles are read as ``compile``);
  * lowering: a cell (probe, subject) that fails now and did not fail before;
  * tolerance: a check that fails now and passed before (or is new and fails), or a value
    worse than before by more than ``margin`` x max(|before|, 1% of the limit);
  * a probe that was ``ok`` and now is not.
Improvements (never fail): the reverse of each. A baseline written before a cell's id
changed is read under the new id (:mod:`laya_tui.core.renamed`). Loading and validating the
baseline file is :mod:`laya_tui.report.baseline_load`'s. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from laya_tui.core.renamed import renamed_ids, renamed_index, same_lowering_reason
from laya_tui.core.report_types import (
    BaselineDict,
    BeforeAfterDict,
    ChangeDict,
    GateDict,
    ResultDict,
)
from laya_tui.core.results import COUNTED_KINDS, SignalKey, failing, occurrences, signal_key
from laya_tui.core.settings import DEFAULT_MARGIN
from laya_tui.core.signals import COMPLETED_STATUSES
from laya_tui.report.baseline_load import (
    CURRENT_VERSION,
    PREFIX,
    REQUIRED,
    Baseline,
    load_baseline,
    no_gc,
    parse_baseline,
)

#: Loading and validating a baseline lives in ``report/baseline_load.py``; its names stay
#: importable from here.
__all__ = ["COMPARED_COUNTED", "COMPLETED", "CURRENT_VERSION", "INF", "PREFIX", "REQUIRED",
           "Baseline", "baseline_gate", "compare", "load_baseline", "parse_baseline",
           "regressed", "summary_lines"]

COMPLETED = COMPLETED_STATUSES
#: First compiles (``compile``) are one-time costs, not compared: only real recompiles are.
COMPARED_COUNTED: tuple[str, ...] = tuple(k for k in COUNTED_KINDS if k != "compile")
_COUNTED = frozenset(COMPARED_COUNTED)
INF = math.inf


# -- indexing -----------------------------------------------------------------------------

def _num(value: object) -> float | None:
    if type(value) is float or type(value) is int:
        return INF if value != value else float(value)
    return None


def _text(value: object) -> str:
    return value if type(value) is str else str(value)


@dataclass(slots=True)
class _Counted:
    """A counted signal's occurrences and bytes, summed over its probe's signals."""

    count: int
    bytes: int


@dataclass(slots=True)
class _Checked:
    """A tolerance check: its largest value (None: none was a number), that value's limit,
    and whether any of its signals failed."""

    value: float | None
    limit: float | None
    failed: bool


#: Statuses and reasons by probe, counted and tolerance signals by key, lowering cells
#: (failing, first diagnostic) by (probe, subject).
_Index = tuple[dict[str, tuple[str, str | None]], dict[SignalKey, _Counted | _Checked],
               dict[tuple[str, str], tuple[bool, str]]]


def _index(probes: list[ResultDict]) -> _Index:
    """One pass: statuses, aggregated counted/tolerance keys, lowering cells."""
    status: dict[str, tuple[str, str | None]] = {}
    agg: dict[SignalKey, _Counted | _Checked] = {}
    cells: dict[tuple[str, str], tuple[bool, str]] = {}
    counted = _COUNTED
    for p in probes:
        pid = p["id"]
        status[pid] = (p["status"], p.get("reason"))
        for s in p.get("signals") or ():
            kind = s.get("kind")
            if kind in counted:
                key = signal_key(s, pid)
                n = occurrences(s)
                b = s.get("bytes", 0)
                if type(b) is not int:
                    b = 0
                a = agg.get(key)
                if a is None:
                    agg[key] = _Counted(n, b)
                else:
                    assert isinstance(a, _Counted)  # its key names a counted kind
                    a.count += n
                    a.bytes += b
            elif kind == "tolerance":
                key = signal_key(s, pid)
                v = _num(s.get("value"))
                failed = failing(s)
                t = agg.get(key)
                if t is None:
                    agg[key] = _Checked(v, _num(s.get("limit")), failed)
                else:
                    assert isinstance(t, _Checked)  # its key's kind is tolerance
                    if v is not None and (t.value is None or v > t.value):
                        t.value, t.limit = v, _num(s.get("limit"))
                    t.failed = t.failed or failed
            elif kind == "lowering":
                cell = (pid, _text(s.get("subject", "")))
                failed = failing(s)
                prev = cells.get(cell)
                if prev is None or (failed and not prev[0]):
                    cells[cell] = (failed, _text(s.get("reason", "")))
    return status, agg, cells


# -- messages -----------------------------------------------------------------------------

def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _g(v: float | None) -> str:
    if v is None:
        return "n/a"
    return "inf/nan" if v == INF else f"{v:.3g}"


def _what(kind: str, subject: str, reason: str) -> str:
    text = kind + (f" {subject}" if subject else "")
    return text + (f" ({reason})" if reason else "")


def _item(change: str, kind: str, probe: str, subject: str, reason: str,
          before: dict[str, object] | None, after: dict[str, object] | None,
          message: str) -> ChangeDict:
    out: dict[str, object] = {"change": change, "kind": kind, "probe": probe}
    if subject:
        out["subject"] = subject
    if reason:
        out["reason"] = reason
    out["before"] = before
    out["after"] = after
    out["message"] = message
    return cast(ChangeDict, out)  # in the report's key order


# -- comparison ---------------------------------------------------------------------------

def _counted(key: SignalKey, now: _Counted | None, old: _Counted | None,
             regs: list[ChangeDict], imps: list[ChangeDict]) -> None:
    pid, kind, subject, reason = key
    what = _what(kind, subject, reason)
    if old is None:
        assert now is not None
        extra = f", {_bytes(now.bytes)}" if now.bytes else ""
        regs.append(_item("new", kind, pid, subject, reason, None,
                          {"count": now.count, "bytes": now.bytes},
                          f"new {what}: {now.count}x{extra}"))
        return
    if now is None:
        imps.append(_item("gone", kind, pid, subject, reason,
                          {"count": old.count, "bytes": old.bytes}, None, f"gone: {what}"))
        return
    n, nb, o, ob = now.count, now.bytes, old.count, old.bytes
    if n == o and nb == ob:
        return
    before: dict[str, object] = {"count": o, "bytes": ob}
    after: dict[str, object] = {"count": n, "bytes": nb}
    parts = []
    if n != o:
        parts.append(f"{o}x -> {n}x")
    if nb != ob:
        parts.append(f"{_bytes(ob)} -> {_bytes(nb)}")
    text = f"{what}: {', '.join(parts)}"
    if n > o:
        regs.append(_item("more", kind, pid, subject, reason, before, after, "more " + text))
    elif nb > ob:
        regs.append(_item("more-bytes", kind, pid, subject, reason, before, after,
                          "more bytes " + text))
    else:
        change = "fewer" if n < o else "fewer-bytes"
        imps.append(_item(change, kind, pid, subject, reason, before, after, f"{change} {text}"))


def _tolerance(key: SignalKey, now: _Checked, old: _Checked | None,
               margin: float, regs: list[ChangeDict], imps: list[ChangeDict]) -> None:
    pid, kind, subject, reason = key
    nv, nl, nf = now.value, now.limit, now.failed
    after: dict[str, object] = {"value": nv, "limit": nl, "passed": not nf}
    name = f"tolerance {subject}".rstrip()
    if old is None:
        if nf:
            regs.append(_item("now-failing", kind, pid, subject, reason, None, after,
                              f"{name}: {_g(nv)} > limit {_g(nl)} (new check)"))
        return
    ov, ol, of = old.value, old.limit, old.failed
    before: dict[str, object] = {"value": ov, "limit": ol, "passed": not of}
    if nf and not of:
        regs.append(_item("now-failing", kind, pid, subject, reason, before, after,
                          f"{name}: {_g(nv)} > limit {_g(nl)} (was {_g(ov)})"))
        return
    if of and not nf:
        imps.append(_item("now-passing", kind, pid, subject, reason, before, after,
                          f"{name} passes now: {_g(ov)} -> {_g(nv)} (limit {_g(nl)})"))
        return
    if nv is None or ov is None or nv == ov:
        return
    slack = margin * max(abs(ov), 0.01 * abs(nl or 0.0)) if ov != INF else 0.0
    if nv == INF or (ov != INF and nv > ov + slack):
        regs.append(_item("worse", kind, pid, subject, reason, before, after,
                          f"{name} worse: {_g(ov)} -> {_g(nv)} (limit {_g(nl)}, margin "
                          f"{margin:.0%})"))
    elif ov == INF or nv < ov - slack:
        imps.append(_item("better", kind, pid, subject, reason, before, after,
                          f"{name} better: {_g(ov)} -> {_g(nv)} (limit {_g(nl)})"))


def _sort_key(item: ChangeDict) -> tuple[str, str, str | None, str | None, str]:
    return (item["probe"], item["kind"], item.get("subject", ""), item.get("reason", ""),
            item["change"])


def compare(baseline: Baseline, probes: list[ResultDict], *,
            margin: float = DEFAULT_MARGIN) -> BaselineDict:
    """The ``baseline`` report section: regressions, improvements and notes, sorted."""
    with no_gc():
        return _compare(baseline, probes, margin)


def _compare(baseline: Baseline, probes: list[ResultDict],
             margin: float) -> BaselineDict:
    b_status, b_agg, b_cells = _index(baseline.report["probes"])
    n_status, n_agg, n_cells = _index(probes)
    renames = renamed_ids(b_status, n_status)
    if renames:  # a baseline written before a cell's id changed: read under the new id
        b_status, b_agg, b_cells = renamed_index(renames, b_status, b_agg, b_cells)
    regs: list[ChangeDict] = []
    imps: list[ChangeDict] = []
    notes: list[ChangeDict] = []
    compared: set[str] = set()
    for pid, (st, reason) in n_status.items():
        old = b_status.get(pid)
        if old is None:
            notes.append(_item("not-compared", "probe", pid, "", "", None, {"status": st},
                               "new probe: not in the baseline"))
            continue
        if st in COMPLETED and old[0] in COMPLETED:
            compared.add(pid)
        elif st in COMPLETED:
            notes.append(_item("not-compared", "probe", pid, "", "", {"status": old[0]},
                               {"status": st},
                               f"signals not compared: the baseline probe was {old[0]}"))
        if old[0] == "ok" and st != "ok":
            why = f": {reason}" if reason else ""
            regs.append(_item("status", "probe", pid, "", "", {"status": "ok"},
                              {"status": st, "reason": reason}, f"was ok, now {st}{why}"))
        elif old[0] != "ok" and st == "ok":
            imps.append(_item("status", "probe", pid, "", "", {"status": old[0],
                                                             "reason": old[1]},
                              {"status": "ok"}, f"was {old[0]}, now ok"))
    for pid, (st, _) in b_status.items():
        if pid not in n_status:
            notes.append(_item("not-run", "probe", pid, "", "", {"status": st}, None,
                               "in the baseline, not in this run"))
    occurrences = {k: {"before": 0, "after": 0} for k in (*COMPARED_COUNTED, "tolerance",
                                                           "lowering")}
    for key, now in n_agg.items():
        if key[0] not in compared:
            continue
        was = b_agg.get(key)
        if isinstance(now, _Checked):  # a tolerance key
            assert was is None or isinstance(was, _Checked)
            occurrences["tolerance"]["after"] += now.failed
            _tolerance(key, now, was, margin, regs, imps)
        else:
            assert was is None or isinstance(was, _Counted)
            occurrences[key[1]]["after"] += now.count
            if was != now:
                _counted(key, now, was, regs, imps)
    for key, was in b_agg.items():
        if key[0] not in compared:
            continue
        if isinstance(was, _Checked):  # a tolerance key
            occurrences["tolerance"]["before"] += was.failed
            if key not in n_agg:
                notes.append(_item("gone-check", "tolerance", key[0], key[2], key[3],
                                   {"value": was.value, "limit": was.limit,
                                    "passed": not was.failed},
                                   None, f"tolerance {key[2]}: check no longer reported"))
        else:
            occurrences[key[1]]["before"] += was.count
            if key not in n_agg:
                _counted(key, None, was, regs, imps)
    for cell, (failed, reason) in n_cells.items():
        if cell[0] not in compared:
            continue
        occurrences["lowering"]["after"] += failed
        old_cell = b_cells.get(cell)
        pid, subject = cell
        after: dict[str, object] = {"passed": not failed, "reason": reason or None}
        before: dict[str, object] | None = None if old_cell is None else {
            "passed": not old_cell[0], "reason": old_cell[1] or None}
        if failed and (old_cell is None or not old_cell[0]):
            text = "new failing lowering cell" if old_cell is None else "lowering now fails:"
            regs.append(_item("now-failing", "lowering", pid, subject, reason, before, after,
                              f"{text} {subject}" + (f": {reason}" if reason else "")))
        elif failed and old_cell is not None and not same_lowering_reason(old_cell[1], reason):
            notes.append(_item("diagnostic-changed", "lowering", pid, subject, reason, before,
                               after, f"lowering {subject} still fails, new first diagnostic: "
                               f"{reason}"))
        elif not failed and old_cell is not None and old_cell[0]:
            imps.append(_item("now-passing", "lowering", pid, subject, "", before, after,
                              f"lowering {subject} passes now (was: {old_cell[1]})"))
    for cell, (failed, reason) in b_cells.items():
        if cell[0] in compared:
            occurrences["lowering"]["before"] += failed
            if cell not in n_cells:
                notes.append(_item("gone-check", "lowering", cell[0], cell[1], reason,
                                   {"passed": not failed, "reason": reason or None}, None,
                                   f"lowering {cell[1]}: cell no longer reported"))
    for lst in (regs, imps, notes):
        lst.sort(key=_sort_key)
    return {
        "path": baseline.path,
        "schema": baseline.report.get("schema"),
        "created": baseline.created,
        "tool_version": (baseline.report.get("tool") or {}).get("version"),
        "tolerance_margin": margin,
        "probes": {"before": len(b_status), "after": len(n_status), "compared": len(compared)},
        "occurrences": occurrences,
        "counts": {"regressions": _by_kind(regs), "improvements": _by_kind(imps),
                   "notes": len(notes)},
        "environment": _environment_changes(baseline.report.get("environment")),
        "regressions": regs,
        "improvements": imps,
        "notes": notes,
    }


def regressed(items: Sequence[ChangeDict]) -> int:
    """How many regressions ``items`` are: a cell that broke (was ok, is not) is one,
    however many of its lowering and tolerance items say the same; every other item is
    one (the items themselves all stay in the list)."""
    broken = {i.get("probe") for i in items if i.get("change") == "status"}
    return len(broken) + sum(1 for i in items if i.get("probe") not in broken)


def _by_kind(items: Sequence[ChangeDict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i["kind"]] = out.get(i["kind"], 0) + 1
    return dict(sorted(out.items()))


def _environment_changes(old_env: object) -> dict[str, BeforeAfterDict]:
    """Library versions that differ between the baseline's machine and this one."""
    from laya_tui.core.versions import library_versions

    old = (old_env or {}).get("versions") if isinstance(old_env, dict) else None
    if not isinstance(old, dict):
        return {}
    now = library_versions()
    return {k: {"before": old.get(k), "after": now.get(k)}
            for k in sorted(set(old) | set(now)) if old.get(k) != now.get(k)}


def baseline_gate(section: BaselineDict) -> GateDict:
    """The ``baseline`` gate: passes when the comparison found no regression."""
    regs = section["regressions"]
    return {"name": "baseline",
            "description": f"no regression against the baseline {section['path']}",
            "passed": not regs, "failures": [dict(r) for r in regs]}


def summary_lines(section: BaselineDict, limit: int = 10) -> list[str]:
    """A few stderr lines: counts, then the first regressions."""
    regs, imps = section["regressions"], section["improvements"]
    p = section["probes"]
    lines = [f"  baseline {section['path']}: {regressed(regs)} regression(s), {len(imps)} "
             f"improvement(s) over {p['compared']} compared probe(s)"]
    for item in regs[:limit]:
        lines.append(f"    regression {item['probe']}: {item['message']}")
    if len(regs) > limit:
        lines.append(f"    ... and {len(regs) - limit} more (see the JSON report)")
    return lines
