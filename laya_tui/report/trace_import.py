"""A TORCH_TRACE folder as a laya-tui report: ``laya-tui show TRACE_DIR`` and ``laya-tui
import TRACE_DIR`` (docs/architecture.md, 'TORCH_TRACE: reading the logs users have').

Cells (family ``trace``), per log file (one per rank):

- ``trace/<proc>``: the log itself (an ``artifact``), its torch version, what was read
  (records, record types this version does not know, bad records with their lines) and
  the inductor cache totals;
- ``trace/<proc>/frame<N>`` (``trace/<proc>/ca<K>/frame<N>`` under compiled autograd): one
  Dynamo frame, i.e. one code object with its compiles: a ``compile`` signal for its first
  compile, a ``recompile`` per later compile (the failing guard, the user line that
  installed it where the log records it), ``fallback`` signals for graph breaks (graph-break
  type, GB id, user frame) and for compiles that failed; seconds and cache hits/misses in
  the compile signals; status ``failed`` with the first guard when it recompiled;
- ``trace/<proc>/export``: torch.export calls that failed (status ``failed``);
- ``trace/ranks``: only where the ranks' logs hold different compile ids (status
  ``failed``): the ranks compiled different frames, which can hang a collective (tlparse's
  "Diverging Compilation IDs detected across ranks"), naming what each rank lacks.

``<proc>`` is ``rank<R>`` (the records' rank, else torch's ``..._rank_<R>_`` file name), or
``proc<i>`` for a log with no rank; a second log of one rank gets ``rank<R>-2``.
Standard library only.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import TYPE_CHECKING

from laya_tui.core.errors import UsageError
from laya_tui.core.open_types import Detail, JsonObject, Params
from laya_tui.core.report_types import (
    ImportedDict,
    ImportedFileDict,
    ReportDict,
    ResultDict,
    SignalDict,
    SiteDict,
)
from laya_tui.core.results import make_result
from laya_tui.core.signals import make_signal
from laya_tui.core.tracelog import CompileKey, TraceFrame, trace_files
from laya_tui.report import trace_facts as tf
from laya_tui.report.trace_gather import Compile, TraceLog, read_log

if TYPE_CHECKING:
    from laya_tui.report.gates import GateSettings

FAMILY = "trace"
FIRST_COMPILE = "first compile of this frame"  # the explain family's wording
FIX_COLD = "one-time cost of the first call per frame; warm the model before timing"
FIX_RECOMPILE_SHAPE = ("a new input shape recompiles: pad/bucket inputs to fixed shapes, or "
                       "compile with dynamic=True / torch._dynamo.mark_dynamic")
FIX_RECOMPILE = "a guard failed: keep that value stable between calls, or make it dynamic"
FIX_GRAPH_BREAK = "rewrite the construct Dynamo cannot trace"
FIX_EXPORT = ("make the traced code export-friendly at that line (torch.cond for data-"
              "dependent branches, torch._check for unbacked sizes), or try "
              "torch.export.draft_export for a report")
NO_GUARD = "recompile (the failing guard is not in the log)"
# -- from what a log said to cells --------------------------------------------------------

def _site(f: TraceFrame | tf.CodeSite) -> SiteDict:
    """A frame's ``{file, line, func}`` (those it has), as a signal's site."""
    site: SiteDict = {"file": f["file"]}
    if "line" in f:
        site["line"] = f["line"]
    if "func" in f:
        site["func"] = f["func"]
    return site


def _frame_detail(f: TraceFrame) -> Detail:
    """A frame's ``{file, line, func, code}`` (those it has), for a signal's detail."""
    return {k: v for k, v in f.items() if k in ("file", "line", "func", "code")}


def _frame_name(comp: list[Compile]) -> tuple[str, SiteDict | None]:
    """``f (pkg/model.py:3)`` and the frame's own site, from its metrics or start stack."""
    for c in comp:
        m = c.metrics or {}
        if m.get("co_name") and m.get("co_filename"):
            file, line = str(m["co_filename"]), m.get("co_firstlineno")
            site: SiteDict = {"file": file, "line": line, "func": str(m["co_name"])}
            return f"{m['co_name']} ({tf.short_path(file)}:{line})", site
    for c in comp:
        if c.start_stack:
            f = c.start_stack[-1]
            return (f"{f.get('func', '?')} ({tf.short_path(f['file'])}:{f.get('line')})",
                    _site(f))
    return "frame (name not in the log)", None


def _cid(key: CompileKey) -> str:
    ca, frame, fcid = key
    return (f"!{ca}/" if ca is not None else "") + f"{frame}/{'-' if fcid is None else fcid}"


def _seconds(m: JsonObject | None) -> float | None:
    v = (m or {}).get("entire_frame_compile_time_s")
    return round(float(v), 6) if isinstance(v, (int, float)) and v >= 0 else None


def _cache_detail(counts: Counter[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for event, n in sorted(counts.items()):
        cache, _, outcome = event.partition(":")
        out.setdefault(cache, {})[outcome] = n
    return out


def _compile_detail(c: Compile, frame: str) -> Detail:
    m = c.metrics or {}
    d: Detail = {"compile_id": _cid(c.key), "frame": frame, "source": "torch_trace"}
    for k in ("backend_compile_time_s", "inductor_compile_time_s", "code_gen_time_s",
              "graph_op_count", "graph_node_count", "guard_count", "cache_size",
              "structured_logging_overhead_s"):
        if m.get(k) is not None:
            d[k] = m[k]
    if c.cache:
        d["cache"] = _cache_detail(c.cache)
    calls = tf.user_only(c.start_stack[:-1])
    if calls:
        d["called_from"] = _frame_detail(calls[-1])
    if m.get("restart_reasons"):
        d["restarts"] = len(m["restart_reasons"])
    return d


def frame_signals(probe: str, comps: list[Compile], log: TraceLog, files: list[str]
                  ) -> tuple[list[SignalDict], str, SiteDict | None]:
    """The signals of one frame (its compiles in compile-id order), its name and site;
    ``files``: the log's full file names (to resolve the ones torch shortened)."""
    frame, fsite = _frame_name(comps)
    sigs: list[SignalDict] = []
    for c in comps:
        m = c.metrics
        detail = _compile_detail(c, frame)
        seconds = _seconds(m)
        if m is not None and m.get("fail_type"):
            reason = str(m.get("fail_reason") or c.error or "").strip().splitlines()
            site: SiteDict | None = fsite
            if m.get("fail_user_frame_filename"):
                site = {"file": str(m["fail_user_frame_filename"]),
                        "line": m.get("fail_user_frame_lineno")}
            sigs.append(make_signal(
                "fallback", probe, subject=frame, count=1,
                reason=f"compile failed, ran eager: {m['fail_type']}: "
                       f"{(reason[0] if reason else '')[:300]}",
                site=site, seconds=seconds, detail=detail,
                fix="fix the failing construct or graph-break around it"))
        elif c.key[2] in (0, None):
            sigs.append(make_signal("compile", probe, subject=frame, count=1,
                                    reason=FIRST_COMPILE, site=fsite, seconds=seconds,
                                    fix=FIX_COLD, detail=detail))
        else:
            sigs.append(_recompile(probe, c, frame, fsite, detail, seconds, log, files))
    sigs.extend(_graph_breaks(probe, comps))
    return sigs, frame, fsite


def _recompile(probe: str, c: Compile, frame: str, fsite: SiteDict | None,
               detail: Detail, seconds: float | None, log: TraceLog, files: list[str],
               ) -> SignalDict:
    failures = [tf.parse_guard_failure(g) for g in c.guard_failures]
    reason, site = NO_GUARD, fsite
    fix = FIX_RECOMPILE
    if failures:
        first = failures[0]
        reason = first["guard"][:300]
        detail["guard_failures"] = c.guard_failures[:10]
        if first.get("failed_compile"):
            detail["failed_compile_id"] = first["failed_compile"]
        user = tf.user_only(first.get("stack") or [])
        found: tuple[TraceFrame | tf.CodeSite, str] | None = (
            (user[-1], "guard failure's user stack") if user else None)
        if found is None and first.get("failed_compile"):
            found = _origin_in(log, first, c.key, files)
        if found is not None:
            origin, where = found
            detail["guard_origin"] = {**origin, "from": where}
            if not tf.is_torch_file(origin["file"]):  # else: the frame's line
                site = _site(origin)
        if "size mismatch" in reason or "stride mismatch" in reason:
            fix = FIX_RECOMPILE_SHAPE
    return make_signal("recompile", probe, subject=frame, count=1, reason=reason, site=site,
                       seconds=seconds, fix=fix, detail=detail)


def _origin_in(log: TraceLog, first: tf.GuardFailure, key: CompileKey, files: list[str]
               ) -> tuple[tf.CodeSite, str] | None:
    """The failing guard's origin in the guard tree of the compile whose guard failed, and
    where it was found."""
    frame_s, _, fcid_s = first["failed_compile"].rpartition("/")
    try:
        failed_key = (key[0], int(frame_s.rpartition("/")[2]), int(fcid_s))
    except ValueError:
        return None
    failed = log.compiles.get(failed_key)
    if failed is None or not failed.origins:
        return None
    origin = tf.origin_of(first["guard"], failed.origins)
    if origin is None:
        return None
    origin = origin.copy()
    origin["file"] = tf.resolve_file(origin["file"], files)
    return origin, "guard tree of " + first["failed_compile"]


def _graph_breaks(probe: str, comps: list[Compile]) -> list[SignalDict]:
    """Graph breaks of a frame, one signal per (type, user line), counted over compiles."""
    # (break type, (file, line) of the user line) -> the signal, its ids
    by: dict[tuple[str | None, tuple[str, int | None] | None],
             tuple[SignalDict, list[str]]] = {}
    for c in comps:
        for gb in c.breaks:
            site = gb.get("site")
            key = (gb["type"], None if site is None else (site.get("file"), site.get("line")))
            entry = by.get(key)
            if entry is None:
                detail: Detail = {"graph_break": True, "source": "torch_trace",
                                          "graph_break_type": gb["type"], "compile_ids": []}
                for k_in, k_out in (("gb_id", "graph_break_id"),
                                    ("documentation", "documentation"),
                                    ("explanation", "explanation"), ("hints", "hints"),
                                    ("context", "context"), ("skipped_frame", "skipped_frame")):
                    if value := gb.get(k_in):
                        detail[k_out] = value
                if gb.get("stack"):
                    detail["stack"] = [tf_frame(f) for f in gb["stack"][-7:]]
                fix = next((h for h in gb.get("hints", []) if not _boiler(h)), FIX_GRAPH_BREAK)
                entry = by[key] = (make_signal(
                    "fallback", probe, subject="graph break", count=0, reason=gb["type"],
                    site=_site(site) if site else None, fix=fix, detail=detail),
                    detail["compile_ids"])
            sig, compile_ids = entry
            sig["count"] = (sig.get("count") or 0) + 1
            compile_ids.append(_cid(c.key))
    return [sig for sig, _ in by.values()]


def tf_frame(f: TraceFrame) -> str:
    """``file:line in func`` (one stack line of a signal's detail)."""
    return f"{f.get('file')}:{f.get('line')} in {f.get('func')}"


def _boiler(hint: str) -> bool:
    low = hint.lower()
    return "report an issue" in low or low.startswith("this graph break is fundamental")


def _export_signals(probe: str, log: TraceLog) -> tuple[list[SignalDict], str | None]:
    sigs: list[SignalDict] = []
    first_reason = None
    for e in log.exports:
        stack = tf.user_only(e.get("stack") or [])
        call = stack[0] if stack else None
        detail: Detail = {"record": e["kind"], "line_in_log": e["line"]}
        if call:
            detail["export_call"] = _frame_detail(call)
        site: SiteDict | None = None
        if e["kind"] == "make_fx_fail_partial":
            if not any("/export/" in f["file"] for f in e["stack"]):
                detail["not_export"] = True  # make_fx outside torch.export
            stop = e.get("stop")
            unb = e.get("unbacked")
            if stop:
                site = _site(stop)
                detail["stopped_at_code"] = stop.get("code")
            if unb and unb.get("symbol"):
                detail["unbacked_symbol"] = unb
            where = f"{tf.short_path(site['file'])}:{site['line']} ({site.get('func')})" \
                if site else "an unknown line"
            what = "torch.export" if not detail.get("not_export") else "make_fx tracing"
            reason = f"{what} failed: the partial graph stops at {where}"
            if stop and stop.get("code"):
                reason += f": {stop['code']}"
        else:
            what = "missing" if e["kind"] == "missing_fake_kernel" else "mismatched"
            reason = f"torch.export: {what} fake kernel for torch.ops.{e.get('op')}"
            if e.get("reason"):
                detail["fake_kernel_reason"] = e["reason"]
        first_reason = first_reason or reason
        sigs.append(make_signal("log", probe, subject="torch.export", reason=reason[:400],
                                site=site, fix=FIX_EXPORT, detail=detail))
    return sigs, first_reason


def _result(cell: str, status: str, reason: str | None, signals: list[SignalDict], *,
            params: Params, file: str | None, seconds: float = 0.0,
            started: float | None = None, ended: float | None = None) -> ResultDict:
    return make_result({"id": cell, "family": FAMILY, "params": params, "file": file},
                       status, reason, seconds=round(seconds, 6), deps=[], signals=signals,
                       started=started, ended=ended)


def _order(key: CompileKey) -> tuple[int, int, int]:
    return tuple(-1 if v is None else v for v in key)  # type: ignore[return-value]


def log_results(log: TraceLog, label: str) -> list[ResultDict]:
    """The cells of one log (see the module docstring)."""
    stats = log.stats
    files = sorted(set(stats.strings.values()), key=len, reverse=True)
    base = f"{FAMILY}/{label}"
    results: list[ResultDict] = []
    frames: dict[tuple[int | None, int | None], list[Compile]] = {}
    for key in sorted(log.compiles, key=_order):
        frames.setdefault((key[0], key[1]), []).append(log.compiles[key])
    totals: Counter[str] = Counter()
    for (ca, frame_id), comps in frames.items():
        cell = f"{base}/ca{ca}/frame{frame_id}" if ca is not None else \
            f"{base}/frame{frame_id}"
        sigs, name, fsite = frame_signals(cell, comps, log, files)
        for s in sigs:
            totals[s["kind"] if s.get("subject") != "graph break" else "graph break"] += \
                (s.get("count", 1) or 0)
        secs = [s for s in (_seconds(c.metrics) for c in comps) if s is not None]
        starts = [(c.metrics or {}).get("start_time") for c in comps]
        spans = [(st, st + (_seconds(c.metrics) or 0.0)) for st, c in zip(starts, comps,
                                                                           strict=True)
                 if isinstance(st, (int, float))]
        params: Params = {"rank": stats.rank, "frame_id": frame_id, "frame": name,
                  "compiles": len(comps), "log": os.path.basename(stats.path)}
        if ca is not None:
            params["compiled_autograd_id"] = ca
        # a frame that recompiled is a finding of its kind, never "ran, nothing failed"
        recompiles = [g for g in sigs if g["kind"] == "recompile"]
        status, reason = ("failed", f"recompiled {len(recompiles)} time(s): "
                          f"{recompiles[0].get('reason') or NO_GUARD}") if recompiles \
            else ("ok", None)
        results.append(_result(
            cell, status, reason, sigs, params=params,
            file=fsite.get("file") if fsite else None, seconds=sum(secs),
            started=min(a for a, _ in spans) if spans else None,
            ended=max(b for _, b in spans) if spans else None))
    if log.exports:
        sigs, reason = _export_signals(f"{base}/export", log)
        results.append(_result(f"{base}/export", "failed", reason, sigs,
                               params={"rank": stats.rank, "exports_failed": len(sigs)},
                               file=None))
    results.insert(0, _log_cell(log, label, totals, len(frames)))
    return results


def _log_cell(log: TraceLog, label: str, totals: Counter[str], nframes: int) -> ResultDict:
    stats = log.stats
    cell = f"{FAMILY}/{label}"
    sigs = [make_signal("artifact", cell, subject="torch trace log", bytes=stats.bytes,
                        detail={"path": os.path.abspath(stats.path), "lines": stats.lines,
                                "records": stats.records})]
    if log.torch_version:
        sigs.append(make_signal("environment", cell, subject="torch", value=log.torch_version,
                                detail={"from": "torch_version record"}))
    parts = [f"{stats.records} records"]
    if stats.unknown:
        parts.append(f"{sum(stats.unknown.values())} of {len(stats.unknown)} record type(s) "
                     "this version does not know")
    if stats.bad:
        parts.append(f"{stats.bad} bad record(s) skipped")
    detail: Detail = {"records": stats.records, "by_type": dict(
        stats.by_type.most_common()), "unknown": dict(stats.unknown), "bad": stats.bad,
        "bad_lines": stats.bad_lines, "pids": sorted(stats.pids), "rank": stats.rank}
    sigs.append(make_signal("log", cell, subject="records", reason=", ".join(parts),
                            detail=detail))
    sigs.append(make_signal(
        "log", cell, subject="compiles",
        reason=f"{nframes} frame(s): {totals['compile']} compile(s), "
               f"{totals['recompile']} recompile(s), {totals['graph break']} graph break(s), "
               f"{totals['fallback']} failed compile(s)",
        detail={"frames": nframes, **{k: totals[k] for k in sorted(totals)}}))
    if log.cache:
        cache = _cache_detail(log.cache)
        text = "; ".join(f"{name}: " + ", ".join(f"{n} {o}" for o, n in sorted(c.items()))
                         for name, c in cache.items())
        sigs.append(make_signal("log", cell, subject="caches", reason=text[:400],
                                detail={"cache": cache}))
    status, reason = "ok", None
    if stats.records == 0:
        status = "error"
        reason = (f"not a TORCH_TRACE log: no record in {stats.lines} line(s)" if stats.lines
                  else "empty log")
    return _result(cell, status, reason, sigs, file=None,
                   params={"rank": stats.rank, "log": os.path.abspath(stats.path),
                           "bytes": stats.bytes})


FIX_RANKS = ("make every rank take the same compiled path (the same shapes, the same "
             "branches, the same compiled functions), or mark the differing inputs dynamic")


def rank_divergence(logs: list[TraceLog], labels: list[str]) -> ResultDict | None:
    """The ``trace/ranks`` cell when ranked logs hold different compile ids, else None."""
    ids = {label: {_cid(k) for k in log.compiles} for log, label in zip(logs, labels,
                                                                        strict=True)
           if log.stats.rank is not None}
    if len(ids) < 2 or len({frozenset(v) for v in ids.values()}) == 1:
        return None
    every = set().union(*ids.values())
    lacks = {label: sorted(every - have) for label, have in ids.items() if every - have}
    cell = f"{FAMILY}/ranks"
    counts = ", ".join(f"{label} {len(have)}" for label, have in ids.items())
    missing = "; ".join(f"{label} lacks {', '.join(v)}" for label, v in lacks.items())
    reason = (f"ranks compiled different frames (compile ids: {counts}): {missing}; "
              "a collective can hang or time out")
    sig = make_signal("log", cell, subject="rank divergence", reason=reason, fix=FIX_RANKS,
                      detail={"compile_ids": {k: sorted(v) for k, v in ids.items()},
                              "lacks": lacks})
    return _result(cell, "failed", reason, [sig], file=None,
                   params={"ranks": sorted(log.stats.rank for log in logs
                                           if log.stats.rank is not None)})


def _labels(logs: list[TraceLog]) -> list[str]:
    out: list[str] = []
    seen: Counter[str] = Counter()
    unranked = 0
    for log in logs:
        rank = log.stats.rank
        if rank is None:
            label = f"proc{unranked}"
            unranked += 1
        else:
            label = f"rank{rank}"
        seen[label] += 1
        out.append(label if seen[label] == 1 else f"{label}-{seen[label]}")
    return out


def read_trace(path: str) -> tuple[list[ResultDict], ImportedDict]:
    """Every cell of a TORCH_TRACE folder (or one log), and the report's ``imported`` section;
    a path with no log, or logs with no record at all, is a :class:`UsageError`."""
    files = trace_files(path)
    if not files:
        if not os.path.exists(path):
            raise UsageError(f"no such TORCH_TRACE folder or log: {path}")
        raise UsageError(f"no TORCH_TRACE log in {path} (torch writes "
                         "dedicated_log_torch_trace_*.log files there)")
    logs = []
    for f in files:
        try:
            logs.append(read_log(f))
        except OSError as exc:
            raise UsageError(f"cannot read {f}: {exc.strerror or exc}") from None
    if not any(log.stats.records for log in logs):
        raise UsageError(f"{path}: not a TORCH_TRACE log (no record in {len(files)} file(s))")
    logs.sort(key=lambda lg: (lg.stats.rank is None, lg.stats.rank or 0,
                              lg.stats.first_time or "", lg.stats.path))
    results: list[ResultDict] = []
    inputs: list[ImportedFileDict] = []
    labels = _labels(logs)
    for log, label in zip(logs, labels, strict=True):
        results.extend(log_results(log, label))
        s = log.stats
        inputs.append({"file": os.path.abspath(s.path), "label": label, "rank": s.rank,
                       "bytes": s.bytes, "records": s.records, "unknown": sum(
                           s.unknown.values()), "bad": s.bad, "torch": log.torch_version})
    diverged = rank_divergence(logs, labels)
    if diverged is not None:
        results.insert(0, diverged)
    imported: ImportedDict = {"from": "TORCH_TRACE", "path": os.path.abspath(path), "files": inputs}
    return results, imported


def trace_report(path: str, gates: GateSettings | None = None) -> ReportDict:
    """The report document of a TORCH_TRACE folder, gates evaluated (``gates``: a
    :class:`laya_tui.report.gates.GateSettings`, default gates when None)."""
    from laya_tui.report.document import build_report
    from laya_tui.report.gates import evaluate_all

    t0 = time.perf_counter()
    results, imported = read_trace(path)
    gate_list, extra = evaluate_all(results, gates, [])
    # the import's own time (the cells keep the compile seconds the logs recorded)
    seconds = time.perf_counter() - t0
    imported["seconds"] = round(seconds, 3)
    report = build_report(results, seconds=seconds, gates=gate_list, extra={
        **extra, "imported": imported})
    versions = sorted({t for f in imported["files"] if (t := f.get("torch"))})
    report["environment"] = {"versions": {"torch": versions[0]} if len(versions) == 1 else
                             ({"torch": ", ".join(versions)} if versions else {}),
                             "host": {}, "source": f"TORCH_TRACE {imported['path']}"}
    return report
