"""The streamed report text and cache entries hold exactly what the documents hold."""

from __future__ import annotations

import asyncio
import json

from laya_tui.core.cache import ResultCache
from laya_tui.core.report_types import ReportDict
from laya_tui.report.document import report_chunks, report_text, write_report
from tests._signals import partial_report, partial_result


def _report(n: int) -> ReportDict:  # partial: what the stream writes, not a valid report
    sigs = [{"kind": "fallback", "probe": "a/b", "subject": f"op{i}", "count": i,
             "site": {"file": "m.py", "line": i}, "detail": {"x": [1, 2.5, None]}}
            for i in range(n)]
    return partial_report({
        "schema": "laya-tui.report/2", "tool": {"name": "laya-tui"}, "errors": [],
            "probes": [{"id": "a/b", "signals": sigs, "log_tail": "line\nnext \"q\""},
                       {"id": "a/c", "signals": [], "reason": None}],
            "summary": {"probes": 2, "status": {"ok": 2}}, "gates": []})


def test_report_text_round_trips_and_streams_in_slices(tmp_path, capsys):
    report = _report(4500)  # more than two slices of signals
    assert json.loads(report_text(report)) == report
    assert max(len(c) for c in report_chunks(report)) < len(report_text(report)) / 2
    path = tmp_path / "r.json"
    write_report(str(path), report)
    assert json.loads(path.read_text()) == report
    write_report("-", _report(3))
    assert json.loads(capsys.readouterr().out) == _report(3)
    empty = partial_report({"probes": [], "errors": []})
    assert json.loads(report_text(empty)) == empty


def test_cache_store_async_streams_the_same_entry(tmp_path):
    dep = tmp_path / "dep.py"
    dep.write_text("x = 1\n")
    cache = ResultCache(tmp_path / "c")
    result = partial_result({"id": "a/b", "status": "ok",
                             "signals": _report(4500)["probes"][0]["signals"]})
    asyncio.run(cache.store_async("a/b", {}, {}, {}, [str(dep)], result))
    assert cache.lookup("a/b", {}, {}, {}) == result
    assert not list((tmp_path / "c").glob("*.tmp"))
