"""The RBLN region's ``dump()`` -> signals mapping, on recorded dumps of the wheel's schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from laya_tui.api import Context
from laya_tui.regions.rbln import map_dump, parse_trace

FIX = Path(__file__).parent / "fixtures" / "rbln"
NEW = json.loads((FIX / "llama_fp16_new_runtime.json").read_text())
OLD = json.loads((FIX / "llama_fp16_old_runtime.json").read_text())
MODELING = "/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py"


def _by(agg, kind, subject, reason=None):
    hits = [e for e in agg if e.kind == kind and e.subject == subject
            and (reason is None or e.reason == reason)]
    assert len(hits) == 1, (kind, subject, reason, [(e.kind, e.subject, e.reason) for e in agg])
    return hits[0]


def test_trace_strings_parse_into_site_and_stack():
    site, frames = parse_trace("/a/m.py:65(forward) <- /a/m.py:297(forward)")
    assert site == {"file": "/a/m.py", "line": 65, "func": "forward"}
    assert frames == ["/a/m.py:65(forward)", "/a/m.py:297(forward)"]
    assert parse_trace(None) == (None, [])
    assert parse_trace("weird")[0] == {"file": "weird", "line": None, "func": None}


def test_cpu_fallbacks_carry_counts_reasons_sites_and_unaccelerated():
    agg, _ = map_dump(NEW, "prefill", phase="cold")
    reason = "dtype-not-fp16 15, all-scalar inputs 4"  # region-level histogram, both fired
    for op, n in NEW["cpu_fallback_by_op"].items():
        e = _by(agg, "fallback", op)
        assert e.count == n
        assert e.reason == reason
        assert e.detail["reasons_region"] == NEW["cpu_fallback_reasons"]
        assert e.detail["phase"] == "cold" and e.detail["region"] == "prefill"
    pow_ = _by(agg, "fallback", "aten::pow")
    assert pow_.site == {"file": MODELING, "line": 65, "func": "forward"}
    assert pow_.detail["stack"] == NEW["trace_by_op"]["aten::pow"].split(" <- ")
    assert pow_.fix == next(n["fix"] for n in NEW["notes"]
                            if n["signal"] == "dispatch/cpu_fallback")
    neg = _by(agg, "fallback", "aten::neg")
    assert neg.site == {"file": MODELING, "line": 121, "func": "rotate_half"}
    assert neg.detail["fast_path_handler"] is False
    assert neg.fix.startswith("no CPU fast-path handler")
    assert "fast_path_handler" not in pow_.detail
    assert sum(e.count for e in agg if e.kind == "fallback" and e.subject.startswith("aten::")) \
        == NEW["dispatch"]["cpu_fallback"]


def test_single_reason_is_attributed_to_every_op():
    dump = json.loads(json.dumps(NEW))
    dump["cpu_fallback_reasons"] = {"dtype-not-fp16": 19}
    agg, _ = map_dump(dump, "r")
    assert {e.reason for e in agg if e.kind == "fallback" and e.subject.startswith("aten::")} \
        == {"dtype-not-fp16"}


def test_recompiles_per_op_with_sites_where_traced():
    agg, _ = map_dump(NEW, "r")
    for op, n in NEW["recompile_by_op"].items():
        assert _by(agg, "recompile", op).count == n
    assert _by(agg, "recompile", "aten::mm").site["line"] == 256
    assert _by(agg, "recompile", "aten::mul.Tensor").site is None  # never traced
    assert "stabilize shapes" in _by(agg, "recompile", "aten::mm").fix


def test_host_bounces_per_site_with_exact_bytes_and_fixes():
    agg, _ = map_dump(NEW, "r")
    by_site = NEW["hidden_host_bounce"]["by_site"]
    notes = {n["signal"]: n["fix"] for n in NEW["notes"]}
    for name in ("copy_d2d_host_bounce", "copy_h2d_staging", "strided_v2v_cpu_fallback"):
        e = _by(agg, "host_bounce", name)
        assert (e.count, e.bytes) == (by_site[name]["count"], by_site[name]["bytes"])
        assert e.fix == notes[f"host_bounce/{name}"]
    assert _by(agg, "host_bounce", "copy_d2d_host_bounce").site["line"] == 64
    assert _by(agg, "host_bounce", "copy_h2d_staging").detail["direction"] == "h2d"
    assert not [e for e in agg if e.subject == "copy_h2d_noncontig_dst"]  # zero count: absent
    torch_side = [e for e in agg
                  if e.kind == "host_bounce" and not e.subject.startswith("runtime/")]
    assert sum(e.count for e in torch_side) == NEW["hidden_host_bounce"]["total_count"]
    assert sum(e.bytes for e in torch_side) == NEW["hidden_host_bounce"]["total_bytes"]
    batch = _by(agg, "fallback", "v2v_batch_to_per_entry")  # lost batching, not a bounce
    assert (batch.count, batch.bytes, batch.detail["host_round_trip"]) == (1, 2048, False)


def test_runtime_residency_physical_transfers_and_reject_reasons():
    agg, extras = map_dump(NEW, "r")
    rr = NEW["runtime_residency"]
    for reason, v in rr["by_reason"].items():
        e = _by(agg, "host_bounce", "runtime/v2v_slow", reason)
        assert (e.count, e.bytes) == (v["count"], v["bytes"])
        assert e.fix and e.detail["physical"] is False
    d2h = _by(agg, "host_bounce", "runtime/physical_d2h")
    assert (d2h.count, d2h.bytes, d2h.detail["direction"]) == (3, 21504, "d2h")
    h2d = _by(agg, "host_bounce", "runtime/h2d_push")
    assert (h2d.count, h2d.bytes, h2d.detail["direction"]) == (5, 1024, "h2d")
    rej = _by(agg, "fallback", "runtime/v2v_reject", "dtype_mismatch")
    assert (rej.count, rej.bytes, rej.fix) == (2, 8192, "align the src/dst dtype")
    internal = _by(agg, "fallback", "runtime/v2v_reject", "internal_fallback")
    assert (internal.count, internal.bytes) == (1, 256)
    assert internal.detail["user_fixable"] is False
    kinds = {(x["kind"], x["subject"]) for x in extras}
    assert ("timing", "r: cpu_fallback wall") in kinds
    assert ("environment", "host.oversubscribed") in kinds
    assert ("environment", "rbln.runtime_residency") not in kinds
    timing = next(x for x in extras if x["kind"] == "timing")
    assert timing["seconds"] == pytest.approx(NEW["dispatch"]["cpu_fallback_ns"] / 1e9)


def test_older_runtime_says_residency_is_unavailable_and_keeps_the_rest():
    assert OLD["runtime_residency"] == {"available": False}
    agg, extras = map_dump(OLD, "r")
    assert not [e for e in agg if e.subject.startswith("runtime/")]
    env = next(x for x in extras if x["subject"] == "rbln.runtime_residency")
    assert env["kind"] == "environment" and env["value"] == "unavailable"
    assert "older rebel-compiler" in env["reason"]
    assert env["detail"]["pending"] == OLD["pending_runtime_signals"]
    new_agg, _ = map_dump(NEW, "r")
    same = {(e.kind, e.subject, e.reason, e.count, e.bytes) for e in new_agg
            if not e.subject.startswith("runtime/")}
    assert same == {(e.kind, e.subject, e.reason, e.count, e.bytes) for e in agg}


def test_mapped_entries_are_valid_signals():
    events = []
    ctx = Context("explain/rbln", "explain", events.append, opts={})
    agg, extras = map_dump(NEW, "r", phase="warm")
    for e in agg:
        ctx.signal(e.kind, **e.fields())
    for x in extras:
        x = dict(x)
        ctx.signal(x.pop("kind"), **x)
    assert len(events) == len(agg) + len(extras)
    assert all(ev["signal"]["kind"] in {"fallback", "recompile", "host_bounce", "timing",
                                        "environment"} for ev in events)


def test_fixtures_match_the_installed_profiler_schema():
    """Rebuild the dumps with the wheel's own dump(): the recorded files must not drift."""
    import importlib.util
    import sys

    sys.path.insert(0, str(FIX))
    try:
        spec = importlib.util.spec_from_file_location("build_dumps", FIX / "build_dumps.py")
        builder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(builder)
    finally:
        sys.path.remove(str(FIX))
    prof = builder.load_profiler()
    if prof is None:
        pytest.skip("torch-rbln not installed: pip install 'laya-tui[rbln]'")
    assert builder.build(prof, runtime=True) == NEW
    assert builder.build(prof, runtime=False) == OLD


def test_rbln_region_unavailable_reason_is_the_import_error():
    pytest.importorskip("torch")
    from laya_tui.rbln_status import runtime_reason, torch_rbln_installed
    from laya_tui.regions.rbln import unavailable_reason

    reason = unavailable_reason()
    if not torch_rbln_installed():
        assert reason and "not installed" in reason
    elif runtime_reason() is not None:
        assert reason and reason.startswith("FileNotFoundError: Could not find librbln.so")
    else:
        pytest.skip("RBLN runtime present: the RBLN region is available here")
