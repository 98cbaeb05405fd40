"""The RBLN runtime log: every line shape torch-rbln 0.12.0 writes, parsed and merged.

``fixtures/rbln/fallback.log`` is both streams on one file descriptor, as
:class:`FdCapture` records them: spdlog's info lines and ``[W] TRACE`` markers (stdout), the
Python ``UserWarning: TRACE`` lines with their code line, c10's bare ``Warning: TRACE
(function log_cpu_fallback)``, and ``[TORCH-RBLN][WARNING]`` lines (stderr): a compile
failure whose error spans two lines, two view-on-device materialisations, a plain warning;
plus the double-space variant (both strings are in the wheel's ``libc10_rbln.so``), an ANSI
coloured level, and a last TRACE truncated mid-line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from laya_tui.families.explain.aggregate import Aggregator
from laya_tui.families.explain.rbln import map_dump
from laya_tui.families.explain.rbln_log import (
    COMPILE_SUBJECT,
    UNATTRIBUTED,
    VIEW_SUBJECT,
    FdCapture,
    match_ops,
    merge_log,
    op_key,
    parse_log,
    split_body,
)
from laya_tui.families.explain.rbln_sites import SiteResolver

FIX = Path(__file__).parent / "fixtures" / "rbln"
MODELING = "/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py"
SDPA = "/venv/lib/python3.11/site-packages/transformers/integrations/sdpa_attention.py"
LOG = (FIX / "fallback.log").read_text()
COLD = json.loads((FIX / "llama_fp16_cold.json").read_text())
NO_FILES = SiteResolver(modules=[], roots=[])


def _recs(text=LOG):
    return {(r.kind, r.op, r.reason): r for r in parse_log(text)}


def test_split_body_and_op_key():
    assert split_body("aten::neg") == ("aten::neg", None)
    assert split_body("sdpa_overrideable (query sequence length 7 not aligned to 32)") == \
        ("sdpa_overrideable", "query sequence length 7 not aligned to 32")
    assert op_key("aten::mul.Tensor") == op_key("mul") == op_key("aten::mul.out") == "mul"


def test_fallback_lines_counts_sites_and_the_double_space_variant():
    recs = _recs()
    pow_ = recs[("fallback", "aten::pow", None)]
    assert pow_.count == 2
    assert pow_.sites == [{"file": MODELING, "line": 65, "func": None,
                           "code": "variance = hidden_states.pow(2).mean(-1, keepdim=True)"}]
    assert pow_.bare_traces == 1  # c10's "Warning: TRACE (function log_cpu_fallback)"
    assert recs[("fallback", "aten::mean", None)].sites == []  # warned once per location
    assert recs[("fallback", "aten::add", None)].sites[0]["line"] == 66
    assert recs[("fallback", "aten::rsqrt", None)].count == 1  # "op ran on CPU  instead"
    sdpa = recs[("fallback", "sdpa_overrideable", "query sequence length 7 not aligned to 32")]
    assert sdpa.count == 2  # the first one has an ANSI-coloured level
    assert (sdpa.sites[0]["file"], sdpa.sites[0]["line"]) == (SDPA, 96)
    argmax = recs[("fallback", "aten::argmax", None)]
    assert argmax.count == 1 and argmax.sites == []  # its TRACE was truncated


def test_torch_rbln_warning_lines():
    recs = _recs()
    comp = next(r for r in recs.values() if r.kind == "compile_fallback")
    assert comp.op == COMPILE_SUBJECT and comp.count == 1
    assert comp.details == [{"error": "RBLN compiler rejected graph: unsupported op "
                                      "aten::_unique2 in subgraph 0"}]
    view = next(r for r in recs.values() if r.kind == "view_materialize")
    assert view.op == VIEW_SUBJECT and view.count == 2
    assert view.details[0] == {"shape": "(2, 4, 7, 16)", "stride": "(896, 16, 128, 1)",
                               "offset": 0}
    warn = next(r for r in recs.values() if r.kind == "warning")
    assert warn.reason.startswith("Model 'forward' unsupported with num_devices=2")
    # the compile error's first line is consumed by the compile failure, not a warning too
    assert [r.kind for r in recs.values()].count("warning") == 1


def test_compile_failure_sentence_alone_and_on_the_prefix_line():
    one = parse_log("[TORCH-RBLN][WARNING] .\nFallback to CPU execution due to RBLN "
                    "compilation failure. The operation will now proceed on the CPU using "
                    "PyTorch. Performance may be impacted.\n")
    assert [(r.kind, r.count, r.details) for r in one] == [("compile_fallback", 1, [])]
    same_line = parse_log("[TORCH-RBLN][WARNING] boom. Fallback to CPU execution due to RBLN "
                          "compilation failure. The operation will now proceed.\n")
    assert same_line[0].details == [{"error": "boom"}]
    err = parse_log("[TORCH-RBLN][ERROR] CPU fallback for compilation failure is disabled: "
                    "`TORCH_RBLN_DISABLE_FALLBACK` contains 'compile_error' or 'all'.\n"
                    "[2026-09-14 19:49:00.170][W] TRACE\n"
                    "[2026-09-14 19:49:00.171][E] device 0 lost\n")
    assert [(r.kind, (r.reason or "")[:10], r.details) for r in err] == [
        ("warning", "CPU fallba", [{"level": "ERROR"}]),
        ("warning", "device 0 l", [{"level": "ERROR"}])]


def test_streams_captured_apart_do_not_misattribute_sites():
    out = "\n".join(ln for ln in LOG.splitlines() if ln.startswith("[2026"))
    err = "\n".join(ln for ln in LOG.splitlines() if not ln.startswith("[2026"))
    recs = _recs(out + "\n" + err)
    assert all(r.sites == [] for r in recs.values() if r.kind == "fallback")
    orphan = recs[("unattributed_trace", UNATTRIBUTED, None)]
    assert {(s["file"], s["line"]) for s in orphan.sites} == {
        (MODELING, 65), (MODELING, 66), (SDPA, 96)}
    assert recs[("fallback", "aten::pow", None)].count == 2  # counts do not depend on order
    agg = merge_log(Aggregator(), list(recs.values()))
    assert not [e for e in agg if e.subject == UNATTRIBUTED]


def test_truncated_fallback_line_is_ignored():
    total = sum(r.count for r in parse_log(LOG) if r.kind == "fallback")
    recs = parse_log(LOG + "\n[2026-09-14 19:49:00.180][I] `aten::ne")
    assert sum(r.count for r in recs if r.kind == "fallback") == total == 8


def test_log_names_meet_shim_keys_without_merging_overloads():
    ops = ["aten::where.self", "aten::where.self_out", "aten::max", "aten::max.unary_out",
           "aten::add.out", "aten::linear"]
    assert match_ops("aten::add", ops) == (["aten::add.out"], False)
    assert match_ops("aten::linear", ops) == (["aten::linear"], False)
    assert match_ops("aten::where", ops) == (["aten::where.self", "aten::where.self_out"], True)
    assert match_ops("aten::max", ops) == (["aten::max", "aten::max.unary_out"], True)
    assert match_ops("aten::where.self_out", ops) == (["aten::where.self_out"], False)
    assert match_ops("aten::add.Tensor", ops) == ([], False)  # another overload: no match
    assert match_ops("sdpa_overrideable", ops) == ([], False)


def test_merge_into_region_signals(tmp_path):
    agg, _ = map_dump(COLD, "prefill", phase="cold", resolver=NO_FILES)
    before = {(e.kind, e.subject): e.count for e in agg}
    merge_log(agg, parse_log(LOG), region="prefill", phase="cold")
    pow_ = next(e for e in agg if e.subject == "aten::pow.Tensor_Scalar_out")
    assert pow_.count == before[("fallback", "aten::pow.Tensor_Scalar_out")]  # region counts
    assert pow_.detail["rbln_log"][0]["op"] == "aten::pow"
    assert pow_.detail["rbln_log"][0]["count"] == 2
    # the region's basename site found no file here; the log's full path of the same file wins
    assert pow_.site == {"file": MODELING, "line": 65, "func": None}
    mean = next(e for e in agg if e.subject == "aten::mean.out")
    assert mean.site == {"file": "modeling_llama.py", "line": 65, "func": "forward"}
    sdpa = next(e for e in agg if e.subject == "sdpa_overrideable")
    assert (sdpa.kind, sdpa.count) == ("fallback", 2)
    assert sdpa.reason == "query sequence length 7 not aligned to 32"
    assert sdpa.site == {"file": SDPA, "line": 96, "func": None}
    assert sdpa.fix is not None and "multiple of 32" in sdpa.fix
    assert sdpa.detail["source"] == "rbln_log" and sdpa.detail["region"] == "prefill"
    comp = next(e for e in agg if e.subject == COMPILE_SUBJECT)
    assert comp.kind == "fallback" and comp.count == 1
    assert comp.reason is not None and "whole compiled graph ran on the CPU" in comp.reason
    assert comp.detail["errors"][0].startswith("RBLN compiler rejected graph")
    view = next(e for e in agg if e.subject == VIEW_SUBJECT)
    assert (view.kind, view.count, len(view.detail["views"])) == ("host_bounce", 2, 2)
    warn = next(e for e in agg if e.kind == "log")
    assert warn.detail["level"] == "WARNING"
    argmax = next(e for e in agg if e.subject == "aten::argmax")
    assert argmax.site is None and argmax.reason is not None
    assert "no reason given" in argmax.reason


def test_ambiguous_log_op_is_merged_into_no_overload():
    dump = json.loads(json.dumps(COLD))
    dump["cpu_fallback_by_op"].update({"aten::where.self": 2, "aten::where.self_out": 1})
    agg, _ = map_dump(dump, "r", resolver=NO_FILES)
    log = ("[2026-09-14 19:49:00.101][I] `aten::where` op ran on CPU instead of RBLN\n"
           "[2026-09-14 19:49:00.101][W] TRACE\n"
           "/m/masking_utils.py:120: UserWarning: TRACE (Triggered internally at x.cpp:1.)\n"
           "  mask = torch.where(cond, a, b)\n")
    merge_log(agg, parse_log(log))
    where = [e for e in agg if e.subject.startswith("aten::where")]
    assert sorted((e.subject, e.count) for e in where) == [
        ("aten::where.self", 2), ("aten::where.self_out", 1)]
    for e in where:
        note = e.detail["rbln_log_ambiguous"][0]
        assert note["candidates"] == ["aten::where.self", "aten::where.self_out"]
        assert "rbln_log" not in e.detail and e.site is None  # no site borrowed either


def test_log_alone_becomes_signals():
    agg = merge_log(Aggregator(), parse_log(LOG))
    assert sorted((e.kind, e.subject, e.count) for e in agg) == [
        ("fallback", "aten::add", 1), ("fallback", "aten::argmax", 1),
        ("fallback", "aten::mean", 1), ("fallback", "aten::pow", 2),
        ("fallback", "aten::rsqrt", 1), ("fallback", "sdpa_overrideable", 2),
        ("fallback", COMPILE_SUBJECT, 1), ("host_bounce", VIEW_SUBJECT, 2),
        ("log", "torch-rbln warning", 1)]


def test_fd_capture_sees_c_and_python_writes(capfd):
    import ctypes

    with FdCapture() as cap:
        print("from python", flush=True)
        os.write(2, b"[2026-09-14 19:49:00.145][I] `aten::neg` op ran on CPU instead of RBLN\n")
        ctypes.CDLL(None).printf(b"from C stdio\n")
    assert "from python" in cap.text
    assert "from C stdio" in cap.text
    assert [r.op for r in parse_log(cap.text)] == ["aten::neg"]
    assert "aten::neg" in capfd.readouterr().err  # written back for the probe's log
