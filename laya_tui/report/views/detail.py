"""Everything known about one signal or one probe, as a list of sections: the dashboard's
detail pane and full-screen detail, and the page's detail panel, draw these. What a section
says, its order and its wording live here; the renderers only draw them (and read the
source files a section points at: the dashboard when it draws, the page when it is written).
Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from laya_tui.core.open_types import Detail as SignalDetail
from laya_tui.core.results import ResultLike, SignalLike, failing
from laya_tui.core.shapes import as_dict, as_list
from laya_tui.core.signals import FAILING_STATUSES, LIVE_STATUSES, Status
from laya_tui.report.views.sections import (
    Block,
    Detail,
    Facts,
    FileHead,
    Head,
    Plot,
    ProbeLog,
    Section,
    Source,
    Table,
    lexer_for,
    sort_table,
)
from laya_tui.report.views.text import (
    exact_bytes,
    human_seconds,
    number,
    pass_seconds,
    plain,
    printable,
    site_text,
    yes_no,
)

#: The section types live in ``views/sections.py``; importers of this module keep finding
#: them here.
__all__ = ["Block", "Detail", "Facts", "FileHead", "Head", "Plot", "ProbeLog", "Section",
           "Source", "Table", "buffer_lines", "drift_sections", "lexer_for", "log_text",
           "numerics_sections", "own_fact", "plain_signal", "probe_detail", "signal_detail",
           "sort_table", "tilelang_sections"]


def _facts(title: str | None, pairs: list[tuple[str, object]]) -> list[Section]:
    rows = tuple([(label, plain(v)) for label, v in pairs if v is not None and v != ""])
    return [Facts(title, rows)] if rows else []


def _source(title: str, site: object, context: int) -> list[Section]:
    if not isinstance(site, dict) or not site.get("file"):
        return []
    line = site.get("line")
    if not isinstance(line, int) or isinstance(line, bool):
        return [Facts(title, (("at", site_text(site)),))]
    return [Source(title, site_text(site), str(site["file"]), line, context)]


#: A signal's own fields that its detail lists as facts, in this order, each under its own
#: name (the detail's facts from ``detail`` come between the reason and the value, its
#: stages before the fix).
OWN_FACTS: tuple[str, ...] = ("reason", "value", "count", "bytes", "seconds", "fix")


def own_fact(field: str, value: object, *, limited: bool = False) -> str:
    """The text of the fact that field ``field`` of a signal gives for ``value``; empty when
    the detail lists none (absent, an empty reason or fix, a value beside a ``limit``:
    the tolerance section shows that one)."""
    if value is None:
        return ""
    if field in ("reason", "fix"):
        return printable(value) if value else ""
    if field == "value":
        return "" if limited else plain(value)
    if field == "count":
        return printable(number(value))
    if field == "bytes":
        return printable(exact_bytes(value))
    if field == "seconds":
        return printable(human_seconds(value))
    raise KeyError(field)


def plain_signal(sig: SignalLike) -> bool:
    """Whether a signal's detail is only its :data:`OWN_FACTS`, its call site and the log
    tail: no ``detail`` to show, no limit, not a tolerance (most of a 100,000-signal
    flood; the page builds those from each distinct value once, ``views/page.py``)."""
    d = sig.get("detail")
    return not (isinstance(d, dict) and d) and "limit" not in sig and str(
        sig.get("kind") or "?") != "tolerance"


def _own(sig: SignalLike, fields: tuple[str, ...], limited: bool) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for field in fields:
        text = own_fact(field, sig.get(field), limited=limited)
        if text:
            out.append((field, text))
    return out


def signal_detail(sig: SignalLike, probe: str, *, has_log: bool = False,
                  full: bool = True) -> Detail:
    """The sections of one signal of cell ``probe`` (``full``: the full-screen detail and
    the page; else the dashboard's pane, with shorter excerpts; ``has_log``: the probe
    wrote a log tail, shown last)."""
    get = sig.get
    d = get("detail")
    if not isinstance(d, dict):
        d = {}
    kind = str(get("kind") or "?")
    limited = "limit" in sig
    facts = _own(sig, OWN_FACTS[:1], limited)
    if d:
        facts += _detail_facts(sig, d)
    facts += _own(sig, OWN_FACTS[1:5], limited)
    if d:
        facts += _stage_facts(d)
    facts += _own(sig, OWN_FACTS[5:], limited)
    if d and d.get("change"):  # a diff's change record
        facts += [("change", f"{d['change']} ({d.get('class', '')})"),
                  ("before", _json(d.get("before")) if d.get("before") else None),
                  ("after", _json(d.get("after")) if d.get("after") else None)]
    parts: list[Section] = _facts(None, facts)
    if d and d.get("checks"):
        parts += _facts("checks", [
            (str(name), f"{number(c.get('value'))} vs limit {number(c.get('limit'))}"
             + ("" if c.get("passed") is None else "  ok" if c.get("passed") else "  FAIL"))
            for name, c in as_dict(d.get("checks")).items() if isinstance(c, dict)])
    if kind == "tolerance" or limited:
        parts += _tolerance(sig, d, full)
    parts += _source("call site", get("site"), 12 if full else 4)
    if d:
        parts += _detail_sections(sig, d, kind, full)
    if has_log:
        parts.append(ProbeLog(f"log tail of {probe}", probe, None if full else 8))
    head = Head(printable(kind), printable(get("subject") or ""), probe, failing(sig))
    return Detail(head, tuple(parts))


def _detail_facts(sig: SignalLike, d: SignalDetail) -> list[tuple[str, object]]:
    """The diagnostic and the outcome, from ``detail``."""
    out: list[tuple[str, object]] = []
    diagnostic = d.get("diagnostic")
    if diagnostic and diagnostic != sig.get("reason"):
        out.append(("diagnostic", printable(diagnostic)))
    if d.get("outcome"):
        cell = ", ".join(str(d[k]) for k in ("kernel", "target", "dtype", "spec") if d.get(k))
        out.append(("outcome", f"{d['outcome']}  ({cell})" if cell else d["outcome"]))
    if "placement" in d:
        from laya_tui.report.views.placement import placement_text

        out.append(("placement", placement_text(d["placement"])))
    return out


def _stage_facts(d: SignalDetail) -> list[tuple[str, object]]:
    """How long each stage took, and where it stopped, from ``detail``."""
    stages = ", ".join(f"{k} {human_seconds(v)}" for k, v in as_dict(d.get("seconds")).items()
                       if isinstance(v, (int, float)))
    return [("stages", stages or None), ("stage", d.get("stage")), ("pass", d.get("pass")),
            ("exception", d.get("exception")), ("run", d.get("run_skipped")),
            ("build cached", d.get("build_cached"))]


def _detail_sections(sig: SignalLike, d: SignalDetail, kind: str,
                     full: bool) -> list[Section]:
    """The kernel site, buffers, stack, files, excerpts, a TileLang cell's sections and
    whatever else ``detail`` holds."""
    parts: list[Section] = []
    ksite, site = as_dict(d.get("kernel_site")), as_dict(sig.get("site"))
    if ksite.get("file") and (ksite.get("file"), ksite.get("line")) != (
            site.get("file"), site.get("line")):
        parts += _source("kernel site", ksite, 8 if full else 3)
    buffers = [b for b in as_list(d.get("buffers")) if isinstance(b, dict)]
    parts += _facts("buffers", [
        (str(b.get("name", "?")), " ".join(str(b[k]) for k in ("scope", "dtype") if b.get(k))
         + (f"  {b['file']}:{b.get('line')}" if b.get("file") else "")) for b in buffers])
    if d.get("stack"):
        parts.append(Block("stack", printable("\n".join(map(str, as_list(d["stack"]))))[:4000]))
    parts += _facts("files", [(k.replace("_", " "), d.get(k)) for k in (
        "generated_source", "wrapped_source", "path", "package", "command") if d.get(k)])
    excerpt = d.get("source_excerpt")
    if excerpt:
        gen = str(d.get("generated_source") or "")
        if gen:
            parts.append(Block("generated source", printable(excerpt), lexer_for(gen, "c")))
        elif str(excerpt).strip() not in str(d.get("diagnostic") or ""):
            parts.append(Block("excerpt", printable(excerpt)))  # already numbered
    if kind == "lowering":
        parts += tilelang_sections(d, full=full)
    parts += numerics_sections(d)
    rest = {k: v for k, v in d.items() if k not in _SHOWN}
    if rest:
        limit = 4000 if full else 300
        parts.append(Facts("more detail", tuple((printable(k), _json(v)[:limit])
                                                for k, v in rest.items())))
    return parts


def _tolerance(sig: SignalLike, d: SignalDetail, full: bool) -> list[Section]:
    rows: list[tuple[str, object]] = [("value", number(sig.get("value"))),
                                   ("limit", number(sig.get("limit"))),
                                   ("passed", yes_no(sig.get("passed")))]
    if "argmax_match" in d:
        n = d.get("rows")
        rows.append(("argmax", f"{d['argmax_match']} / {n} rows match" if n is not None
                     else str(d["argmax_match"])))
    if "top2_gap_min" in d:
        rows.append(("top-2 gap", f"min {number(d['top2_gap_min'])}"))
    mismatches = as_list(d.get("mismatch_rows"))
    if mismatches:
        gaps = as_list(d.get("mismatch_top2_gaps")) + [None] * len(mismatches)
        rows.append(("mismatches", ", ".join(
            f"row {r}" + (f" (gap {number(g)})" if g is not None else "")
            for r, g in zip(mismatches, gaps, strict=False))))
    return _facts("tolerance", rows) + drift_sections(d.get("drift"), full=full)


def drift_sections(drift: object, *, full: bool = True) -> list[Section]:
    """Where the drift starts: the first module past its limit, the closest one, and the
    per-module max |diff| along the model (execution order) with the limits."""
    drift = as_dict(drift)
    if not isinstance(drift.get("curve"), list):
        return []
    curve = [c for c in drift["curve"] if isinstance(c, list) and len(c) == 3]
    first = drift.get("first_past_limit")
    rows: list[tuple[str, object]] = []
    if isinstance(first, dict):
        rows.append(("starts at", f"{first.get('module')} ({first.get('type')}): max|diff| "
                                  f"{number(first.get('max_diff'))} > limit "
                                  f"{number(first.get('limit'))}"))
    else:
        rows.append(("starts at", "no module past its limit"))
    worst = as_dict(drift.get("worst"))
    if worst.get("ratio") is not None:
        rows.append(("closest", f"{worst.get('module')} ({worst.get('type')}): "
                                f"{number(worst.get('ratio'))} of its limit"))
    rows.append(("modules", f"{drift.get('compared', len(curve))} module call(s) compared"
                 + (f", every {drift['curve_every']}th plotted" if drift.get("curve_every")
                    else "")))
    skipped = [s for s in as_list(drift.get("skipped")) if isinstance(s, dict)]
    if skipped:
        rows.append(("skipped", "; ".join(f"{s.get('module')}: {s.get('reason')}"
                                          for s in skipped[:4])))
    rows.append(("curve", drift.get("artifact")))
    parts = _facts("where the drift starts", rows)
    points = tuple((i + 1, float(c[1]), float(c[2])) for i, c in enumerate(curve)
                   if all(isinstance(v, (int, float)) for v in c[1:]))
    at = drift.get("curve_first") if isinstance(first, dict) else None
    first_x = at + 1 if isinstance(at, int) and 0 <= at < len(curve) else None
    if len(points) >= 2:
        parts.append(Plot("max |diff| per module call (log scale) and its limit", points,
                          first_x, 16 if full else 12))
    return parts


def numerics_sections(d: Mapping[str, object]) -> list[Section]:
    """A precision plan's facts; a gap table's facts and its table (issue 43)."""
    from laya_tui.report.views import numerics as nv

    parts: list[Section] = []
    plan = nv.plan_of(d)
    if plan:
        parts += _facts("precision plan", list(nv.plan_facts(plan)))
    gap = nv.gap_of(d)
    if gap:
        parts += _facts("gap table", list(nv.gap_facts(gap)))
        rows = nv.rows_of(gap)
        if rows:
            parts.append(Table(
                "each module's error, and its own (re-run on the fp32 inputs)",
                tuple(label for label, _ in nv.COLUMNS),
                tuple(tuple(printable(t) for t in nv.row_texts(r)) for r in rows),
                tuple(tuple(nv.row_values(r)) for r in rows)))
    return parts


def tilelang_sections(d: Mapping[str, object], *, full: bool = True) -> list[Section]:
    """A TileLang lowering cell: the kernel's arguments and where each came from, the
    slowest passes, the IR the failing pass received (implicated buffers highlighted), the
    diff made by the last pass that changed the IR, and ``repro.py``."""
    parts: list[Section] = []
    sources = as_dict(d.get("arg_sources"))
    parts += _facts("kernel arguments", [
        (str(k), f"{v!r}" + (f"   from {sources[k]}" if sources.get(k) else ""))
        for k, v in as_dict(d.get("args")).items()])
    how: list[tuple[str, object]] = [(k, str(d[k])) for k in ("execution_backend", "built_with",
                                                            "out_idx", "reference")
                                  if d.get(k) is not None]
    built_by = d.get("built_by")
    if isinstance(built_by, Mapping):
        how.insert(0, ("built by", ", ".join(f"{k} {v}" for k, v in built_by.items())))
    run = as_dict(d.get("file_run"))
    if run.get("entries"):
        how.append(("the file's run", "; ".join(map(str, as_list(run["entries"])))))
    parts += _facts("as the file builds it", how)
    passes = as_dict(d.get("passes"))
    if passes.get("slowest"):
        head = (f"slowest passes ({passes.get('passes')} passes, "
                f"{human_seconds(passes.get('total_s'))} in all)")
        parts += _facts(head, [(str(name), pass_seconds(sec) + (f"  ({runs} runs)"
                                                                if runs != 1 else ""))
                               for name, sec, runs in as_list(passes["slowest"])])
    names = tuple(str(b.get("name")) for b in as_list(d.get("buffers")) if isinstance(b, dict))
    ir_before, last_diff = d.get("ir_before"), d.get("last_pass_diff")
    if isinstance(ir_before, str):
        parts.append(FileHead(f"IR before {d.get('ir_before_pass') or 'the failing pass'}",
                              ir_before, 400 if full else 60, "python", names,
                              "o: open in $EDITOR"))
    if isinstance(last_diff, str):
        parts.append(FileHead("diff made by the last pass that changed the IR: "
                              f"{d.get('last_pass') or '?'}", last_diff,
                              200 if full else 30, "diff"))
    if isinstance(d.get("repro"), str):
        parts.append(Block("reproduce", f"python {printable(d['repro'])}"))
    return parts


def buffer_lines(text: str, names: tuple[str, ...] | list[str]) -> set[int]:
    """1-based lines of ``text`` that allocate or bind one of the buffers ``names``."""
    hits = set()
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip().split("=", 1)[0].strip() in names:
            hits.add(n)
    return hits


def probe_detail(result: ResultLike, *, signals: int, full: bool = True) -> Detail:
    """A probe cell without a selected signal: status, reason, error, log tail
    (``result``: its report entry, or the fields the dashboard knows while it runs)."""
    status = str(result.get("status") or "pending")
    err = as_dict(result.get("error"))
    deps = [str(x) for x in as_list(result.get("deps"))]
    seconds = result.get("seconds")
    from laya_tui.report.views.nodes import node_line

    facts: list[tuple[str, object]] = [
        ("status", "could not be examined: the probe never reached its subject (not a "
                   "finding); fix the cause below and re-run" if status == Status.ERROR
         else None),
        ("reason", printable(result.get("reason")) if result.get("reason") else None),
        ("seconds", human_seconds(seconds) + ("  (cached)" if result.get("cached") else "")
         if isinstance(seconds, (int, float)) else None),
        ("file", result.get("file")),
        ("node", node_line(result.get("node"))),  # --cluster: where it ran (report/5)
        ("deps", ", ".join(deps[:8]) + (" …" if len(deps) > 8 else "") if deps else None),
        ("signals", str(signals)),
    ]
    parts: list[Section] = _facts(None, facts)
    from laya_tui.report.views.numerics import numerics_facts

    parts += _facts("numerics", list(numerics_facts(result)))
    parts += _source("raised at", err.get("site"), 8 if full else 3)
    if err.get("traceback") and full:
        parts.append(Block("traceback", printable(err["traceback"]), dim=True))
    tail = str(result.get("log_tail") or "")
    label = "stderr tail" if status == Status.CRASHED else "log tail"
    if tail.strip():
        parts.append(Block(label, _tail(tail, None if full else 40), dim=True))
    elif status not in LIVE_STATUSES:
        parts.append(Block(label, "(the probe wrote nothing to stdout or stderr)", dim=True))
    pid = str(result.get("id") or "")
    from laya_tui.report.views.legend import cell_state, state_word

    # the badge is the cell's state word (as the tree, summary and every file say it): a
    # cell built but not run is never "ok" here either, a finding is "finding"
    return Detail(Head(state_word(cell_state(result)), pid, pid, status in FAILING_STATUSES),
                  tuple(parts))


#: Detail keys shown in their own sections (the rest go to "more detail").
_SHOWN = frozenset((
    "placement", "gap_table", "precision_plan",
    "diagnostic", "source_excerpt", "generated_source", "path", "package", "argmax_match",
    "rows", "top2_gap_min", "mismatch_rows", "mismatch_top2_gaps", "stack", "kernel",
    "target", "dtype", "spec", "outcome", "seconds", "stage", "pass", "exception",
    "run_skipped", "build_cached", "kernel_site", "checks", "buffers", "command",
    "wrapped_source", "file", "drift", "args", "arg_sources", "passes", "ir_before",
    "ir_before_pass", "last_pass", "last_pass_diff", "repro", "pass_timing_report",
    "pass_configs", "change", "class", "before", "after", "built_by", "file_run",
    "execution_backend", "built_with", "out_idx", "reference"))


def _json(value: object) -> str:
    return printable(json.dumps(value, default=repr, ensure_ascii=False))


def log_text(text: str, lines: int | None) -> str:
    """A log tail as shown: printable, its last ``lines`` lines (None: all)."""
    return _tail(text, lines)


def _tail(text: str, lines: int | None) -> str:
    rows = printable(text).rstrip().splitlines()
    if lines is not None and len(rows) > lines:
        rows = ["…", *rows[-lines:]]
    return "\n".join(rows)
