"""``--html PATH``: one self-contained HTML page of a report (a run, ``show`` or ``diff``).

No network at all: the CSS, the script and the page data are inline, so the file opens from
an artifact store or a mail attachment. The page shows the verdict and gates, the changes of
a diff, the lowering matrix with its legend (a click on a cell opens its full diagnostic),
every probe and every signal (filter by kind and text, sort by any column, click for the
detail with its call site's source), the tolerance checks and the environment of the machine
that wrote the report. What it shows is computed by ``report/views/page.py`` (the same view
models as the dashboard's); ``page.js`` only lays it out. Source excerpts are read when the
page is written, from the files that are there then (the page says so for those that are
not). Standard library only.
"""

from __future__ import annotations

import html
from pathlib import Path

from laya_tui.core.jsonfast import dumps_strict
from laya_tui.core.report_types import ReportDict
from laya_tui.report.views.page import page_data

#: The page's script and styles, shipped beside this module and inlined into every page.
_ASSETS = Path(__file__).parent


def _script_json(value: object) -> str:
    """JSON safe inside ``<script>``: no ``</``, no ``<!--``, no U+2028/9 surprises."""
    text = dumps_strict(value, separators=(",", ":"), default=repr, ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def build_html(report: ReportDict, *, diff: ReportDict | None = None,
               title: str = "laya-tui report", workspace: str | None = None) -> str:
    """The page: a template with the data, the CSS and the script inline."""
    data = page_data(report, diff=diff, title=title, workspace=workspace)
    css = _ASSETS.joinpath("page.css").read_text(encoding="utf-8")
    js = _ASSETS.joinpath("page.js").read_text(encoding="utf-8")
    from laya_tui.report.envview import env_html

    # --env: the comparison as a static section (its text can hold no placeholder)
    envs = env_html(report.get("env_comparison"), report.get("envs")).replace("__", "_&#95;")
    return (_TEMPLATE.replace("__ENVS__", envs)
            .replace("__TITLE__", html.escape(data["header"]["title"]))
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
