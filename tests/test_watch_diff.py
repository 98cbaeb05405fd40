"""Watch mode's pure parts: the signal diff, the change filter, diagnostics, stream lines."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any

from laya_tui.cli.watch_headless import human_line, stream_line
from laya_tui.watch.changes import ChangeFilter
from laya_tui.watch.engine import Watcher
from laya_tui.watch.record_types import WatchRecord
from laya_tui.watch.records import diagnostic_of, diff_signals
from tests._signals import partial_result
from tests._watch_util import config_for, make_workspace


def sig(kind, subject, **kw):
    return {"kind": kind, "probe": "p", "subject": subject, **kw}


def test_diff_new_gone_changed_by_signal_key():
    before = [sig("fallback", "aten::mul", count=2, reason="dtype-not-fp16"),
              sig("tolerance", "logits", value=1e-3, limit=1e-2, passed=True),
              sig("lowering", "gemm[c,bf16,gpu]", passed=False, reason="bf16 has no C type",
                  detail={"outcome": "lower-failed"}),
              sig("timing", "build", seconds=1.0)]
    after = [sig("fallback", "aten::mul", count=3, reason="dtype-not-fp16"),
             sig("tolerance", "logits", value=1e-3, limit=1e-2, passed=True),
             sig("lowering", "gemm[c,bf16,gpu]", passed=False, reason="bf16 has no C type",
                 detail={"outcome": "build-failed"}),
             sig("timing", "build", seconds=2.0),  # timings drift: not a change
             sig("host_bounce", "d2d_copy", count=1, bytes=4096)]
    new, gone, changed = diff_signals(before, after)
    assert [s["kind"] for s in new] == ["host_bounce"]
    assert gone == []
    assert changed == [
        {"kind": "fallback", "subject": "aten::mul", "reason": "dtype-not-fp16",
         "fields": {"count": [2, 3]}},
        {"kind": "lowering", "subject": "gemm[c,bf16,gpu]", "reason": "bf16 has no C type",
         "fields": {"outcome": ["lower-failed", "build-failed"]}},
    ]


def test_diff_reason_is_identity_and_duplicates_pair_in_order():
    before = [sig("fallback", "neg", reason="unaligned"), sig("log", None, reason="a"),
              sig("log", None, reason="a")]
    after = [sig("fallback", "neg", reason="dtype"), sig("log", None, reason="a")]
    new, gone, changed = diff_signals(before, after)
    assert [s["reason"] for s in new] == ["dtype"]
    assert sorted(str(s["reason"]) for s in gone) == ["a", "unaligned"]
    assert changed == []


def test_diff_nan_equals_nan_and_pass_flip_is_a_change():
    nan = float("nan")
    before = [sig("tolerance", "x", value=nan, passed=False),
              sig("tolerance", "y", value=0.1, passed=True)]
    after = [sig("tolerance", "x", value=nan, passed=False),
             sig("tolerance", "y", value=0.3, passed=False)]
    _, _, changed = diff_signals(before, after)
    assert changed == [{"kind": "tolerance", "subject": "y", "reason": None,
                        "fields": {"value": [0.1, 0.3], "passed": [True, False]}}]


def test_change_filter_ignores_droppings_below_roots_only(tmp_path):
    # The workspace itself may live under a folder named like an ignored one.
    ws = tmp_path / "build" / ".cache" / "ws"
    f = ChangeFilter([str(ws)], ignore_paths=[str(ws / "out")])
    ok = ["kernels/gemm.py", "probes/x.py", "helpers/data.json"]
    bad = [".git/index", "kernels/__pycache__/gemm.cpython-311.pyc", ".venv/lib/x.py",
           "kernels/gemm.py.tmp", "kernels/.gemm.py.swp", "kernels/gemm.py~", "4913",
           "kernels/.#gemm.py", "out/report.json", "node_modules/a.js", "build/lib/x.py",
           ".pytest_cache/v", ".ruff_cache/x"]
    assert [p for p in ok if not f.accepts(os.path.join(ws, p))] == []
    assert [p for p in bad if f.accepts(os.path.join(ws, p))] == []


def test_diagnostic_of_points_at_the_broken_file():
    res = {"status": "failed", "reason": "p.py:3: SyntaxError: invalid syntax at /w/k.py:7",
           "error": {"type": "ProbeFileError",
                     "message": "SyntaxError: invalid syntax at /w/k.py:7",
                     "site": {"file": "/w/p.py", "line": 3}}}
    assert diagnostic_of(partial_result(res)) == {"file": "/w/k.py", "line": 7,
                                                  "message": res["reason"]}
    imp = {"status": "failed", "reason": "ModuleNotFoundError: No module named 'kernels.x'",
           "error": {"type": "ModuleNotFoundError", "message": "No module named 'kernels.x'",
                     "site": {"file": "/w/p.py", "line": 12, "func": "cell"}}}
    found = diagnostic_of(partial_result(imp))
    assert found is not None and found["line"] == 12
    assert diagnostic_of(partial_result({"status": "failed", "reason": "ValueError: x",
                                         "error": {"type": "ValueError"}})) is None
    assert diagnostic_of(partial_result({"status": "ok"})) is None
    # A probe that reports the import failure as its own failing signal (lowering cells).
    lowered: dict[str, Any] = {
               "status": "failed", "reason": "lowering gemm: invalid syntax (gemm.py, line 98)",
               "signals": [{"kind": "lowering", "probe": "p", "passed": False,
                            "site": {"file": "/w/kernels/gemm.py", "line": 98},
                            "detail": {"exception": "SyntaxError", "stage": "import"}}]}
    assert diagnostic_of(partial_result(lowered)) == {"file": "/w/kernels/gemm.py", "line": 98,
                                      "message": lowered["reason"]}
    lowered["signals"][0]["detail"]["exception"] = "TVMError"
    assert diagnostic_of(partial_result(lowered)) is None


def test_stream_line_is_one_compact_json_object_without_the_full_result():
    rec: WatchRecord = {"type": "result", "probe": "kern/cell[foo]", "family": "kern",
           "trigger": "kernels/foo.py", "seconds": 0.5, "latency": 0.6, "status": "ok",
           "reason": None, "previous_status": "ok", "cached": False,
           "new": [sig("fallback", "op2", count=1)], "gone": [], "changed": [],
           "diagnostic": None, "result": partial_result({"id": "kern/cell[foo]", "signals": []})}
    line = stream_line(rec)
    assert "\n" not in line
    back = json.loads(line)
    assert "result" not in back and back["new"][0]["subject"] == "op2"
    assert human_line(rec) == "watch: ok       kern/cell[foo] 0.50s <- kernels/foo.py +1 -0 ~0"


def test_a_workspace_wide_probe_root_never_watches_ignored_folders(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / ".venv" / "lib" / "site-packages").mkdir(parents=True)
    (ws / ".git" / "objects").mkdir(parents=True)
    cfg = dataclasses.replace(config_for(ws), probes=(str(ws),))
    watcher = Watcher(cfg)
    recursive, flat = watcher._watch_roots()
    shutil.rmtree(watcher.runner.log_dir)
    real = ws.resolve()
    assert str(real) in flat
    assert {os.path.basename(r) for r in recursive} == {"probes", "kernels", "helpers"}
