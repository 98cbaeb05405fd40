"""The RBLN fallback log: parsing captured text and merging it with a region's signals."""

from __future__ import annotations

import json
import os
from pathlib import Path

from laya_tui.regions.aggregate import Aggregator
from laya_tui.regions.rbln import map_dump
from laya_tui.regions.rbln_log import FdCapture, merge_log, op_key, parse_log, split_body

FIX = Path(__file__).parent / "fixtures" / "rbln"
MODELING = "/transformers/models/llama/modeling_llama.py"

#: Captured with TORCH_RBLN_LOG_LEVEL=INFO shapes: interleaved unrelated lines, a
#: double-space variant, and a last TRACE truncated mid-line (no trailing newline).
LOG = (FIX / "fallback.log").read_text()


def test_split_body():
    assert split_body("aten::neg") == ("aten::neg", None)
    assert split_body("sdpa_overrideable (query sequence length 7 not aligned to 32)") == \
        ("sdpa_overrideable", "query sequence length 7 not aligned to 32")
    assert op_key("aten::mul.Tensor") == op_key("mul") == "mul"


def test_parse_counts_reasons_and_traced_sites():
    recs = {(r.op, r.reason): r for r in parse_log(LOG)}
    assert set(recs) == {("aten::neg", None), ("aten::argmax", None),
                         ("sdpa_overrideable", "query sequence length 7 not aligned to 32")}
    neg = recs[("aten::neg", None)]
    assert neg.count == 3  # the double-space variant of the line counts too
    assert neg.sites == [{"file": MODELING, "line": 148, "func": None,
                          "code": "return torch.cat((-x2, x1), dim=-1)"}]
    sdpa = recs[("sdpa_overrideable", "query sequence length 7 not aligned to 32")]
    assert sdpa.count == 2
    assert sdpa.sites[0]["file"] == "/transformers/integrations/sdpa_attention.py"
    assert sdpa.sites[0]["line"] == 96
    argmax = recs[("aten::argmax", None)]
    assert argmax.count == 1 and argmax.sites == []  # its TRACE was truncated


def test_truncated_fallback_line_is_ignored():
    recs = parse_log(LOG + "\n[2026-09-14 19:49:00.180][I] `aten::ne")
    assert sum(r.count for r in recs) == 6


def test_merge_into_region_signals_same_op_and_log_only_ops():
    dump = json.loads((FIX / "llama_fp16_new_runtime.json").read_text())
    agg, _ = map_dump(dump, "prefill", phase="cold")
    before = {(e.kind, e.subject): e.count for e in agg}
    merge_log(agg, parse_log(LOG), region="prefill", phase="cold")
    neg = next(e for e in agg if e.kind == "fallback" and e.subject == "aten::neg")
    assert neg.count == before[("fallback", "aten::neg")]  # the region's count stays
    assert neg.reason == "dtype-not-fp16 15, all-scalar inputs 4"
    assert neg.detail["rbln_log"] == [{"count": 3, "reason": None, "sites": [
        {"file": MODELING, "line": 148, "func": None,
         "code": "return torch.cat((-x2, x1), dim=-1)"}]}]
    sdpa = next(e for e in agg if e.subject == "sdpa_overrideable")
    assert (sdpa.kind, sdpa.count) == ("fallback", 2)
    assert sdpa.reason == "query sequence length 7 not aligned to 32"
    assert sdpa.site == {"file": "/transformers/integrations/sdpa_attention.py", "line": 96,
                         "func": None}
    assert "multiple of 32" in sdpa.fix
    assert sdpa.detail["source"] == "rbln_log" and sdpa.detail["region"] == "prefill"
    argmax = next(e for e in agg if e.subject == "aten::argmax")
    assert argmax.site is None and argmax.count == 1
    assert "no reason given" in argmax.reason


def test_log_alone_becomes_fallback_signals():
    agg = merge_log(Aggregator(), parse_log(LOG))
    assert sorted((e.subject, e.count) for e in agg) == [
        ("aten::argmax", 1), ("aten::neg", 3), ("sdpa_overrideable", 2)]
    assert all(e.kind == "fallback" for e in agg)


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
