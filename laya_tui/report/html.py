"""``--html PATH``: one self-contained HTML page of a report (a run, ``show`` or ``diff``).

No network at all: the CSS, the script and the report itself are inline, so the file opens
from an artifact store or a mail attachment. The page shows the verdict and gates, the
changes of a diff, the lowering matrix (a click on a cell opens its full diagnostic), every
probe and every signal (filter by kind and text, sort by any column, click for the detail
with its call site's source), the tolerance checks and the environment of the machine that
wrote the report. Source excerpts are read when the page is written, from the files that are
there then (the page says so for those that are not). Standard library only.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any

from laya_tui.core.files import source_excerpt
from laya_tui.core.results import failing
from laya_tui.report.gates import describe_failure

#: The page's script and styles, shipped beside this module and inlined into every page.
_ASSETS = Path(__file__).parent
#: Call-site excerpts embedded at most (the failing signals' sites first).
MAX_EXCERPTS = 2_000
CONTEXT = 6
_CELL_RE = re.compile(r"^(?P<family>[^/]+)/(?P<name>[^\[]+)\[(?P<cell>[^\]]*)\]$")
_ORDER = {"c": 0, "llvm": 1, "cuda": 2, "hip": 3, "fp32": 0, "float32": 0, "fp16": 1,
          "float16": 1, "bf16": 2, "bfloat16": 2, "cpu": 0, "gpu": 1}


def lowering_matrix(report: dict[str, Any]) -> dict[str, Any] | None:
    """Kernels x (target, dtype, spec) cells from lowering signals and the cells' statuses:
    ``{kernels, columns, cells: {"kernel|t|d|s": {outcome, probe, signal}}}``, or None."""
    cells: dict[str, dict[str, Any]] = {}
    kernels: dict[str, None] = {}
    columns: dict[tuple[str, str, str], None] = {}
    for pi, p in enumerate(report.get("probes") or []):
        for si, sig in enumerate(p.get("signals") or ()):
            d = sig.get("detail")
            if sig.get("kind") != "lowering" or not isinstance(d, dict) or not all(
                    d.get(k) for k in ("kernel", "target", "dtype")):
                continue
            col = (str(d["target"]), str(d["dtype"]), str(d.get("spec") or ""))
            outcome = str(d.get("outcome") or ("ran" if sig.get("passed") else "lower-failed"))
            kernels.setdefault(str(d["kernel"]), None)
            columns.setdefault(col, None)
            cells["|".join((str(d["kernel"]), *col))] = {
                "outcome": outcome, "probe": pi, "signal": si}
    for pi, p in enumerate(report.get("probes") or []):
        if p.get("family") != "tilelang":
            continue
        m = _CELL_RE.match(str(p.get("id", "")))
        parts = m.group("cell").split(",") if m else []
        if not m or len(parts) != 3:
            continue
        col = (parts[0], parts[1], parts[2])
        key = "|".join((m.group("name"), *col))
        if key in cells and p.get("status") in ("ok", "failed"):
            continue
        kernels.setdefault(m.group("name"), None)
        columns.setdefault(col, None)
        cells[key] = {"outcome": str(p.get("status")), "probe": pi, "signal": None}
    if not cells:
        return None
    cols = sorted(columns, key=lambda c: tuple(x for v in c for x in (_ORDER.get(v, 9), v)))
    return {"kernels": list(kernels), "columns": [list(c) for c in cols], "cells": cells}


def _excerpt(path: str, line: int) -> dict[str, Any] | None:
    found = source_excerpt(path, line, CONTEXT)
    return {"start": found[1], "line": line, "text": found[0]} if found else None


def site_excerpts(report: dict[str, Any], workspace: str | None) -> dict[str, Any]:
    """``{"file:line": excerpt or None}`` for call sites (failing signals first); None
    marks a file that is not readable where the page was written."""
    sites: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    for failing_first in (True, False):
        for p in report.get("probes") or []:
            err = p.get("error") if isinstance(p.get("error"), dict) else {}
            cands = [err.get("site")] if failing_first else []
            for sig in p.get("signals") or ():
                if failing(sig) == failing_first:
                    d = sig.get("detail") if isinstance(sig.get("detail"), dict) else {}
                    cands += [sig.get("site"), d.get("kernel_site")]
            for site in cands:
                if isinstance(site, dict) and site.get("file") and isinstance(
                        site.get("line"), int):
                    key = (str(site["file"]), int(site["line"]))
                    if key not in seen and len(sites) < MAX_EXCERPTS:
                        seen.add(key)
                        sites.append(key)
    out: dict[str, Any] = {}
    for file, line in sites:
        path = file if os.path.isabs(file) or not workspace else os.path.join(workspace, file)
        out[f"{file}:{line}"] = _excerpt(path, line)
    return out


def _gates(report: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for g in report.get("gates") or []:
        if not isinstance(g, dict):
            continue
        fails = [f for f in g.get("failures") or [] if isinstance(f, dict)]
        out.append({"name": g.get("name"), "passed": bool(g.get("passed")),
                    "description": g.get("description"),
                    "failures": [{"probe": f.get("probe"),
                                  "text": describe_failure(str(g.get("name")), f)}
                                 for f in fails[:200]], "more": max(0, len(fails) - 200)})
    return out


def page_data(report: dict[str, Any], *, diff: dict[str, Any] | None = None,
              title: str = "laya-tui report", workspace: str | None = None) -> dict[str, Any]:
    """Everything the page's script renders (the report's probes as they are)."""
    shown = diff if diff is not None else report
    data: dict[str, Any] = {
        "title": title,
        "schema": report.get("schema"), "created": report.get("created"),
        "tool": report.get("tool"), "summary": report.get("summary"),
        "environment": report.get("environment"), "errors": report.get("errors") or [],
        "gates": _gates(report), "probes": report.get("probes") or [],
        "matrix": lowering_matrix(report),
        "excerpts": site_excerpts(report, os.path.abspath(workspace or ".")),
        "baseline": report.get("baseline"),
    }
    if diff is not None:
        data["diff"] = {"section": diff.get("diff"), "probes": shown.get("probes") or [],
                        "gates": _gates(diff)}
    return data


def _script_json(value: Any) -> str:
    """JSON safe inside ``<script>``: no ``</``, no ``<!--``, no U+2028/9 surprises."""
    text = json.dumps(value, separators=(",", ":"), default=repr, ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def build_html(report: dict[str, Any], *, diff: dict[str, Any] | None = None,
               title: str = "laya-tui report", workspace: str | None = None) -> str:
    """The page: a template with the data, the CSS and the script inline."""
    data = page_data(report, diff=diff, title=title, workspace=workspace)
    css = _ASSETS.joinpath("page.css").read_text(encoding="utf-8")
    js = _ASSETS.joinpath("page.js").read_text(encoding="utf-8")
    from laya_tui.report.envview import env_html

    # --env: the comparison as a static section (its text can hold no placeholder)
    envs = env_html(report.get("env_comparison"), report.get("envs")).replace("__", "_&#95;")
    return (_TEMPLATE.replace("__ENVS__", envs).replace("__TITLE__", html.escape(title))
            .replace("__CSS__", css).replace("__JS__", js)
            .replace("__DATA__", _script_json(data)))


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>__TITLE__</title><style>__CSS__</style></head>
<body><div id="app"><noscript>This page needs JavaScript to show the report.</noscript></div>
__ENVS__
<script type="application/json" id="laya-data">__DATA__</script>
<script>__JS__</script></body></html>
"""

