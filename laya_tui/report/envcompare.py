"""What differs between environments (``--env``), cell by cell: the report's
``env_comparison`` section and the ``env-change`` gate.

The first environment is the reference; every later one is a candidate compared with it by
the baseline comparison (:func:`laya_tui.report.diff.diff_reports`: status changes, signals
new and gone, more or fewer occurrences, lowering cells that now fail or pass, first
diagnostics of cells that still fail, tolerance values that moved), on the cells' ids
without their ``@env``. Besides it, each candidate lists every status change, every cell
whose first diagnostic (its reason) changed, every tolerance value that differs and the
largest timing ratios. Text that differs only by where an environment lives (its folder,
``site-packages`` paths, temporary folders, addresses) is the same diagnostic: those parts
are normalised before comparing. Standard library only.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import cast

from laya_tui.core.envs import base_id
from laya_tui.core.open_types import JsonObject
from laya_tui.core.report_types import (
    BeforeAfterDict,
    EnvCandidateDict,
    EnvComparisonDict,
    EnvInfoDict,
    EnvPairDict,
    GateDict,
    ResultDict,
    SignalDict,
    TimingDeltaDict,
    ToleranceDeltaDict,
)
from laya_tui.core.settings import DEFAULT_MARGIN

#: Timing rows kept per candidate (the largest ratios first).
TIMING_ROWS = 100
_HEX = re.compile(r"0x[0-9a-fA-F]{6,}")
_SITE = re.compile(r"[^\s'\"():]*/(site-packages|dist-packages)/")
_TMP = re.compile(r"/tmp/[^/\s'\"():]+")


def envs_report(envs: Mapping[str, EnvInfoDict],
                probes: Iterable[ResultDict]) -> dict[str, EnvInfoDict]:
    """The report's ``envs`` object: each environment's interpreter, versions and compilers,
    plus the facts its own ``env`` cells probed."""
    out: dict[str, EnvInfoDict] = {name: {**info} for name, info in envs.items()}
    for p in probes:
        env = p.get("env")
        if p.get("family") != "env" or env not in out:
            continue
        facts = out[env].setdefault("probed", {})
        for s in p.get("signals") or ():
            if s.get("kind") == "environment" and "subject" in s:
                facts[cast(str, s["subject"])] = s.get("value", s.get("reason"))
    return out


def _normaliser(envs: Mapping[str, EnvInfoDict]) -> Callable[[str], str]:
    roots = sorted({os.path.dirname(os.path.dirname(str(info.get(k))))
                    for info in envs.values() for k in ("python", "executable")
                    if info.get(k)} - {"", "/"}, key=len, reverse=True)
    env_root = re.compile("|".join(re.escape(r) + r"(?![\w.-])" for r in roots)) \
        if roots else None

    def norm(text: str) -> str:
        if env_root is not None:  # an environment's own folder (a venv's root)
            text = env_root.sub("<env>", text)
        text = _SITE.sub(r"\1/", text)
        text = _TMP.sub("/tmp/…", text)
        return _HEX.sub("0x…", text)

    return norm


def _side(probes: Sequence[ResultDict], env: str, norm: Callable[[str], str]
          ) -> list[ResultDict]:
    """One environment's cells under their base ids, reasons normalised (copies)."""
    out: list[ResultDict] = []
    for p in probes:
        if p.get("env") != env:
            continue
        full, base = str(p["id"]), base_id(p)

        def text(t: str | None, full: str = full, base: str = base) -> str | None:
            return norm(t.replace(full, base)) if isinstance(t, str) else t

        sigs: list[SignalDict] = [{**s, "reason": text(s["reason"])}
                                  if isinstance(s.get("reason"), str) else s
                                  for s in p.get("signals") or ()]
        out.append({**p, "id": base, "reason": text(p.get("reason")), "signals": sigs})
    return out


def env_order(probes: Iterable[ResultDict],
              envs: Mapping[str, EnvInfoDict] | None = None) -> list[str]:
    """The environments with cells: in ``envs`` order (the first is the reference), then any
    other in the order their cells appear."""
    seen: dict[str, None] = {}
    for p in probes:
        if p.get("env"):
            seen.setdefault(str(p["env"]), None)
    return [n for n in (envs or {}) if n in seen] + [n for n in seen if n not in (envs or {})]


def compare_envs(probes: Sequence[ResultDict],
                 envs: Mapping[str, EnvInfoDict] | None,
                 *, margin: float = DEFAULT_MARGIN) -> EnvComparisonDict | None:
    """The ``env_comparison`` section, or None when fewer than two environments have cells."""
    from laya_tui.report.diff import ComparedDoc, diff_reports

    envs = envs or {}
    names = env_order(probes, envs)
    if len(names) < 2:
        return None
    norm = _normaliser(envs)
    base = names[0]
    base_cells = _side(probes, base, norm)
    candidates: list[EnvCandidateDict] = []
    for cand in names[1:]:
        cand_cells = _side(probes, cand, norm)
        doc_a: ComparedDoc = {"probes": base_cells,
                              "environment": {"versions": _versions(envs, base)}}
        doc_b: ComparedDoc = {"probes": cand_cells,
                              "environment": {"versions": _versions(envs, cand)}}
        section = cast(JsonObject, diff_reports(  # widened below
            doc_a, doc_b, base_path=f"@{base}", margin=margin, labels=(f"@{base}", f"@{cand}")))
        section.pop("path", None)
        section["versions"] = section.pop("environment")
        section["compilers"] = _compilers(envs, base, cand)
        before = {p["id"]: p for p in base_cells}
        after = {p["id"]: p for p in cand_cells}
        both = [pid for pid in after if pid in before]
        section.update(
            env=cand, base=base,
            statuses=[_pair(before[pid], after[pid]) for pid in both
                      if before[pid]["status"] != after[pid]["status"]],
            diagnostics=[_pair(before[pid], after[pid]) for pid in both
                         if _first(before[pid]) != _first(after[pid])],
            tolerance=_tolerance_deltas(before, after, both),
            timing=_timing_deltas(before, after, both),
            worse=bool(section["regressions"]))
        candidates.append(cast(EnvCandidateDict, section))  # diff_reports' section, widened
    return {"base": base, "envs": names, "tolerance_margin": margin, "candidates": candidates}


def _versions(envs: Mapping[str, EnvInfoDict], name: str) -> dict[str, object]:
    info = envs.get(name)
    v = info.get("versions") if info else None
    return dict(v) if isinstance(v, Mapping) else {}


def _compilers(envs: Mapping[str, EnvInfoDict], a: str, b: str) -> dict[str, BeforeAfterDict]:
    def get(name: str) -> dict[str, object]:
        info = envs.get(name)
        c = info.get("compilers") if info else None
        return {k: (v or {}).get("version") if isinstance(v, Mapping) else v
                for k, v in (c.items() if isinstance(c, Mapping) else ())}

    ca, cb = get(a), get(b)
    return {k: {"before": ca.get(k), "after": cb.get(k)}
            for k in sorted(set(ca) | set(cb)) if ca.get(k) != cb.get(k)}


def _first(p: ResultDict) -> tuple[str, str]:
    """A cell's first diagnostic: its reason, when it did not pass (an ok cell has none)."""
    if p.get("status") == "ok":
        return ("ok", "")
    return (str(p.get("status")), " ".join(str(p.get("reason") or "").split()))


def _pair(a: ResultDict, b: ResultDict) -> EnvPairDict:
    return {"probe": a["id"], "before": {"status": a.get("status"), "reason": a.get("reason")},
            "after": {"status": b.get("status"), "reason": b.get("reason")}}


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _tolerances(p: ResultDict) -> dict[str, tuple[float, float | None, bool]]:
    out: dict[str, tuple[float, float | None, bool]] = {}
    for s in p.get("signals") or ():
        v = _num(s.get("value"))
        if s.get("kind") != "tolerance" or v is None:
            continue
        subject = str(s.get("subject") or "")
        v = math.inf if v != v else v
        held = out.get(subject)
        if held is None or v > held[0]:
            out[subject] = (v, _num(s.get("limit")), s.get("passed") is not False)
    return out


def _tolerance_deltas(before: dict[str, ResultDict], after: dict[str, ResultDict],
                      both: list[str]) -> list[ToleranceDeltaDict]:
    """Every tolerance check whose value differs (the largest relative change first)."""
    rows: list[ToleranceDeltaDict] = []
    for pid in both:
        a, b = _tolerances(before[pid]), _tolerances(after[pid])
        for subject in a.keys() & b.keys():
            (va, la, pa), (vb, lb, pb) = a[subject], b[subject]
            if va == vb:
                continue
            rows.append({"probe": pid, "subject": subject, "before": _finite(va),
                         "after": _finite(vb), "limit": lb if lb is not None else la,
                         "passed_before": pa, "passed_after": pb})

    def size(r: ToleranceDeltaDict) -> float:
        a, b = r["before"], r["after"]
        if a is None or b is None:
            return math.inf
        return float(abs(b - a) / max(abs(a), abs(r["limit"] or 0.0) * 0.01, 1e-30))

    rows.sort(key=lambda r: (-size(r), r["probe"], r["subject"]))
    return rows


def _finite(v: float) -> float | None:
    return None if math.isinf(v) else v  # JSON has no inf: None is "not a number"


def _timings(p: ResultDict) -> dict[str, float]:
    out: dict[str, float] = {}
    sec = _num(p.get("seconds"))
    if sec is not None and not p.get("cached"):
        out["(cell)"] = sec
    for s in p.get("signals") or ():
        v = _num(s.get("seconds"))
        if s.get("kind") == "timing" and v is not None:
            out.setdefault(str(s.get("subject") or ""), v)
    return out


def _timing_deltas(before: dict[str, ResultDict], after: dict[str, ResultDict],
                   both: list[str]) -> list[TimingDeltaDict]:
    """Timing signals (and the cells' own seconds) in both: the largest ratios first."""
    rows: list[tuple[float, TimingDeltaDict]] = []
    for pid in both:
        a, b = _timings(before[pid]), _timings(after[pid])
        for subject in a.keys() & b.keys():
            if a[subject] > 0 and b[subject] > 0:
                ratio = b[subject] / a[subject]
                rows.append((-abs(math.log(ratio)), {
                    "probe": pid, "subject": subject, "before": a[subject],
                    "after": b[subject], "ratio": round(ratio, 4)}))
    rows.sort(key=lambda r: (r[0], r[1]["probe"], r[1]["subject"]))
    return [r for _, r in rows[:TIMING_ROWS]]


def env_change_gate(section: EnvComparisonDict | None) -> GateDict:
    """``--fail-on-env-change``: no candidate environment is worse than the reference."""
    failures = []
    base = section["base"] if section else None
    for cand in section["candidates"] if section else []:
        for item in cand["regressions"]:
            failures.append(dict(item, probe=f"{item['probe']}@{cand['env']}",
                                 message=f"@{cand['env']} vs @{base}: {item['message']}"))
    desc = (f"no environment is worse than @{base}" if base
            else "no environment is worse than the first (needs two --env with cells)")
    return {"name": "env-change", "description": desc, "passed": not failures,
            "failures": failures}
