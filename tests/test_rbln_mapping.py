"""The RBLN region's ``dump()`` -> signals mapping, on dumps built by the wheel's own ``dump()``.

The fixtures come from ``tests/fixtures/rbln/build_dumps.py``: torch-rbln 0.12.0's
``profiler.py`` loaded by path, a stopped ``RBLNExplain`` given real-shaped counter deltas
(shim op keys such as ``aten::pow.Tensor_Scalar_out``, basename two-frame sites), and its
``dump()`` laying them out (``test_fixtures_match_the_installed_profiler_schema`` rebuilds
them and fails if they drift).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from laya_tui.api import Context
from laya_tui.core.protocol import SignalEvent
from laya_tui.families.explain.rbln import (
    UNACCELERATED_FIX,
    dump_failed,
    fallback_reason,
    map_dump,
    parse_trace,
)
from laya_tui.families.explain.rbln_sites import SiteResolver, parse_frames

FIX = Path(__file__).parent / "fixtures" / "rbln"
COLD = json.loads((FIX / "llama_fp16_cold.json").read_text())
WARM = json.loads((FIX / "llama_fp16_warm.json").read_text())
NORES = json.loads((FIX / "llama_fp16_no_residency.json").read_text())


@pytest.fixture
def layout(tmp_path):
    """A fake install on disk: transformers' llama model, torch's module/linear/functional."""
    site = tmp_path / "site-packages"
    files = {
        "transformers/models/llama/modeling_llama.py": (
            ["# line"] * 63 + ["    def forward(self, hidden_states):"]
            + ["        x = 1"] * 60 + ["def rotate_half(x):"] + ["    pass"] * 30
            + ["def apply_rotary_pos_emb(q, k):"] + ["    pass"] * 5),
        "transformers/activations.py": ["# a"] * 100 + ["    def forward(self, input):"] * 5,
        "transformers/cache_utils.py": ["    def update(self):"] * 1700,
        "torch/nn/modules/module.py": ["    def _call_impl(self):"] * 1800,
        "torch/nn/modules/linear.py": ["    def forward(self, input):"] * 140,
        "torch/nn/functional.py": ["def silu(input):"] * 2500,
    }
    paths = {}
    for rel, lines in files.items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("\n".join(lines) + "\n")
        paths[rel] = str(p)
    torch_root = str(site / "torch") + "/"
    resolver = SiteResolver(modules=list(paths.values()), roots=[str(tmp_path / "ws")],
                            is_internal=lambda path: path.startswith(torch_root))
    return paths, resolver


def _by(agg, kind, subject, reason=None):
    hits = [e for e in agg if e.kind == kind and e.subject == subject
            and (reason is None or e.reason == reason)]
    assert len(hits) == 1, (kind, subject, reason, [(e.kind, e.subject, e.reason) for e in agg])
    return hits[0]


def test_trace_strings_are_basename_frames_innermost_first():
    text = COLD["trace_by_op"]["aten::pow.Tensor_Scalar_out"]
    assert text == "modeling_llama.py:65(forward) <- module.py:1789(_call_impl)"
    assert parse_frames(text) == [
        {"file": "modeling_llama.py", "line": 65, "func": "forward"},
        {"file": "module.py", "line": 1789, "func": "_call_impl"}]
    assert parse_trace(text)[1] == ["modeling_llama.py:65(forward)",
                                   "module.py:1789(_call_impl)"]
    assert parse_trace(None) == (None, [])
    assert parse_frames("weird") == [{"file": "weird", "line": None, "func": None}]


def test_basename_sites_resolve_to_real_files_and_skip_torch_frames(layout):
    paths, resolver = layout
    agg, _ = map_dump(COLD, "prefill", phase="cold", resolver=resolver)
    pow_ = _by(agg, "fallback", "aten::pow.Tensor_Scalar_out")
    assert pow_.site == {"file": paths["transformers/models/llama/modeling_llama.py"],
                         "line": 65, "func": "forward"}
    assert pow_.detail["stack"] == ["modeling_llama.py:65(forward)",
                                    "module.py:1789(_call_impl)"]
    assert pow_.detail["trace_frame"] == "modeling_llama.py:65(forward)"
    # linear.py(forward) <- module.py(_call_impl): both torch's own code -> no user site
    linear = _by(agg, "recompile", "aten::linear")
    assert linear.site is None and linear.detail["trace_internal_only"] is True
    # functional.py (torch) is skipped; activations.py (transformers model code) is the site
    silu = _by(agg, "recompile", "aten::silu.out")
    assert silu.site == {"file": paths["transformers/activations.py"], "line": 103,
                         "func": "forward"}
    bounce = _by(agg, "host_bounce", "strided_v2v_cpu_fallback")
    assert bounce.site["func"] == "rotate_half" and bounce.site["file"].endswith(
        "modeling_llama.py")


def test_basename_resolution_prefers_hints_then_modules_then_workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    script = ws / "scripts" / "run_llama.py"
    script.write_text("def main():\n    pass\n" * 30)
    r = SiteResolver(modules=[], roots=[str(ws)], is_internal=lambda p: False)
    assert r.resolve("run_llama.py", "main", 41) == str(script)
    assert r.resolve("run_llama.py", "missing_func", 41) is None  # wrong file: no match
    assert r.resolve("nowhere.py", "f", 1) is None
    hint = tmp_path / "elsewhere" / "run_llama.py"
    hint.parent.mkdir()
    hint.write_text("def main():\n" * 50)
    r2 = SiteResolver(hints=[str(hint)], modules=[], roots=[str(ws)],
                      is_internal=lambda p: False)
    assert r2.resolve("run_llama.py", "main", 41) == str(hint)
    site, facts = r.site(parse_frames("nowhere.py:3(f) <- run_llama.py:41(main)"))
    assert site == {"file": "nowhere.py", "line": 3, "func": "f"}  # kept as written
    assert facts["trace_unresolved"] is True


def test_cpu_fallbacks_keep_shim_keys_and_name_only_reasons(layout):
    _, resolver = layout
    agg, _ = map_dump(COLD, "prefill", phase="cold", resolver=resolver)
    reason = "dtype-not-fp16, all-scalar inputs"  # region-level causes, names only
    for op, n in COLD["cpu_fallback_by_op"].items():
        e = _by(agg, "fallback", op)
        assert e.count == n and e.reason == reason
        assert e.detail["reasons_region"] == COLD["cpu_fallback_reasons"]
        assert e.detail["phase"] == "cold" and e.detail["region"] == "prefill"
    assert not [e.reason for e in agg if re.search(r"\s\d+\b", e.reason or "")]  # no counts
    assert sum(e.count for e in agg if e.kind == "fallback" and e.subject.startswith("aten::")) \
        == COLD["dispatch"]["cpu_fallback"]
    mean = _by(agg, "fallback", "aten::mean.out")  # the one op with no fast-path handler
    assert COLD["cpu_fallback_unaccelerated"] == ["aten::mean.out"]
    assert mean.detail["fast_path_handler"] is False
    assert mean.fix.startswith(UNACCELERATED_FIX)
    assert "fast-path handler" in mean.fix and "native kernel" not in UNACCELERATED_FIX
    assert "fast_path_handler" not in _by(agg, "fallback", "aten::pow.Tensor_Scalar_out").detail


def test_fallback_reason_names_in_profiler_order():
    assert fallback_reason({"all-scalar inputs": 2, "dtype-not-fp16": 25}) == \
        "dtype-not-fp16, all-scalar inputs"
    assert fallback_reason({"dtype-not-fp16": 19}) == "dtype-not-fp16"
    assert fallback_reason({}) == "ran on CPU (no reason recorded)"


def test_recompiles_per_shim_op():
    agg, _ = map_dump(COLD, "r", resolver=SiteResolver(modules=[], roots=[]))
    for op, n in COLD["recompile_by_op"].items():
        assert _by(agg, "recompile", op).count == n
    assert "stabilize shapes" in _by(agg, "recompile", "aten::linear").fix
    warm, _ = map_dump(WARM, "r", resolver=SiteResolver(modules=[], roots=[]))
    assert not [e for e in warm if e.kind == "recompile"]


def test_transfers_are_counted_once_in_the_right_direction():
    agg, extras = map_dump(COLD, "r", resolver=SiteResolver(modules=[], roots=[]))
    by_site = COLD["hidden_host_bounce"]["by_site"]
    rr = COLD["runtime_residency"]
    torch_side = [e for e in agg
                  if e.kind == "host_bounce" and not e.subject.startswith("runtime/")]
    assert sum(e.count for e in torch_side) == COLD["hidden_host_bounce"]["total_count"]
    assert all(e.bytes is not None for e in torch_side)
    assert sum(e.bytes or 0 for e in torch_side) == COLD["hidden_host_bounce"]["total_bytes"]
    assert _by(agg, "host_bounce", "copy_h2d_staging").detail["direction"] == "h2d"
    assert not [e for e in agg if e.subject == "copy_h2d_noncontig_dst"]  # zero: absent
    batch = _by(agg, "fallback", "v2v_batch_to_per_entry")  # lost batching, not a bounce
    assert (batch.count, batch.bytes, batch.detail["host_round_trip"]) == \
        (by_site["v2v_batch_to_per_entry"]["count"], by_site["v2v_batch_to_per_entry"]["bytes"],
         False)
    # v2v_slow per src-state cause; only src_device_only_real_d2h is a real crossing
    for reason, v in rr["by_reason"].items():
        e = _by(agg, "host_bounce", "runtime/v2v_slow", reason)
        assert (e.count, e.bytes) == (v["count"], v["bytes"])
        assert e.detail["physical"] is (reason == "src_device_only_real_d2h")
        assert e.detail["direction"] == ("d2h" if e.detail["physical"] else "host")
    # physical d2h measures the same copies: a log fact and a witness, never one more bounce
    overhead = [e for e in agg if e.kind == "host_bounce"]
    assert not [e for e in overhead if e.subject in ("runtime/physical_d2h", "runtime/h2d_push")]
    phys = next(x for x in extras if x["subject"] == "r: physical d2h")
    assert (phys["kind"], phys["count"], phys["bytes"]) == (
        "log", rr["real_host_sync_d2h"]["count"], rr["real_host_sync_d2h"]["bytes"])
    assert _by(agg, "host_bounce", "copy_d2d_host_bounce").detail["region_physical_d2h"] == \
        rr["real_host_sync_d2h"]
    push = next(x for x in extras if x["subject"] == "r: host->device push")
    assert push["kind"] == "log" and "not a host bounce" in push["reason"]
    assert (push["count"], push["bytes"]) == (rr["real_host_sync_h2d"]["count"],
                                              rr["real_host_sync_h2d"]["bytes"])
    rej = _by(agg, "fallback", "runtime/v2v_reject", "dtype_mismatch")
    assert (rej.count, rej.bytes, rej.fix) == (2, 8192, "align the src/dst dtype")
    assert _by(agg, "fallback", "runtime/v2v_reject", "internal_fallback").detail[
        "user_fixable"] is False


def test_rebel_runtime_time_and_device_memory():
    _, extras = map_dump(COLD, "r", resolver=SiteResolver(modules=[], roots=[]))
    rt = COLD["rebel_runtime"]
    total = next(x for x in extras if x["subject"] == "r: rebel runtime")
    assert total["kind"] == "timing"
    assert total["seconds"] == pytest.approx(rt["total_ns"] / 1e9)
    assert total["value"] == pytest.approx(rt["wall_fraction"], abs=1e-4)
    assert f"{rt['wall_fraction'] * 100:.1f}% of the region wall time" in total["reason"]
    for prim, v in rt["by_primitive"].items():
        x = next(x for x in extras if x["subject"] == f"r: rebel runtime {prim}")
        assert (x["kind"], x["count"]) == ("timing", v["calls"])
        assert x["seconds"] == pytest.approx(v["ns"] / 1e9)
        assert x["value"] == pytest.approx(v["ns"] / COLD["wall_ns"], abs=1e-4)
    mem = next(x for x in extras if x["subject"] == "r: device memory peak")
    assert mem["bytes"] == COLD["device_memory"]["peak_bytes"]
    fb = next(x for x in extras if x["subject"] == "r: cpu_fallback wall")
    assert fb["seconds"] == pytest.approx(COLD["dispatch"]["cpu_fallback_ns"] / 1e9)
    assert any(x["subject"] == "host.oversubscribed" for x in extras)


def test_dump_without_residency_is_named_without_blaming_an_old_compiler():
    assert NORES["runtime_residency"] == {"available": False}
    agg, extras = map_dump(NORES, "r", resolver=SiteResolver(modules=[], roots=[]))
    assert not [e for e in agg if e.subject.startswith("runtime/")]
    env = next(x for x in extras if x["subject"] == "rbln.runtime_residency")
    assert env["kind"] == "environment" and env["value"] == "unavailable"
    assert "older" not in env["reason"] and "_rt_prof_hidden" in env["reason"]
    assert env["detail"]["pending"] == NORES["pending_runtime_signals"]
    cold, _ = map_dump(COLD, "r", resolver=SiteResolver(modules=[], roots=[]))
    same = {(e.kind, e.subject, e.reason, e.count, e.bytes) for e in cold
            if not e.subject.startswith("runtime/")}
    assert same == {(e.kind, e.subject, e.reason, e.count, e.bytes) for e in agg}


def test_dump_failure_is_a_clear_signal():
    exc = RuntimeError("runtime hidden-reason axis drifted (runtime reports 4 reasons, this "
                       "build names 3); torch-rbln and rebel-compiler/librbln are out of sync")
    sig = dump_failed("prefill", "cold", exc)
    assert sig["kind"] == "environment" and sig["passed"] is False
    assert sig["reason"].startswith("RuntimeError: runtime hidden-reason axis drifted")
    events: list[SignalEvent] = []
    ctx = Context("explain/rbln", "explain", events.append, opts={})
    x = dict(sig)
    ctx.signal(x.pop("kind"), **x)
    assert events[0]["signal"]["subject"] == "rbln.explain.dump"


def test_mapped_entries_are_valid_signals():
    events: list[SignalEvent] = []
    ctx = Context("explain/rbln", "explain", events.append, opts={})
    agg, extras = map_dump(COLD, "r", phase="warm", resolver=SiteResolver(modules=[], roots=[]))
    for e in agg:
        ctx.signal(e.kind, **e.fields())
    for x in extras:
        x = dict(x)
        ctx.signal(x.pop("kind"), **x)
    assert len(events) == len(agg) + len(extras)
    assert {ev["signal"]["kind"] for ev in events} == {
        "fallback", "recompile", "host_bounce", "timing", "environment", "log"}


def _builder():
    import importlib.util
    import sys

    sys.path.insert(0, str(FIX))
    try:
        spec = importlib.util.spec_from_file_location("build_dumps", FIX / "build_dumps.py")
        assert spec is not None and spec.loader is not None
        builder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(builder)
    finally:
        sys.path.remove(str(FIX))
    prof = builder.load_profiler()
    if prof is None:
        pytest.skip("torch-rbln not installed: pip install 'laya-tui[rbln]'")
    return builder, prof


def test_fixtures_match_the_installed_profiler_schema():
    """Rebuild the dumps with the wheel's own dump(): the recorded files must not drift."""
    builder, prof = _builder()
    for name, dump in builder.dumps(prof).items():
        assert dump == json.loads((FIX / f"{name}.json").read_text()), name


def test_rbln_region_unavailable_reason_is_torch_rblns_own():
    pytest.importorskip("torch")
    from laya_tui.families.explain.rbln import device_reason, unavailable_reason
    from laya_tui.families.rbln_status import runtime_reason, torch_rbln_installed

    reason = unavailable_reason()
    if not torch_rbln_installed():
        assert reason and "not installed" in reason
    elif runtime_reason() is not None:
        assert reason == runtime_reason()
        assert reason is not None and reason.startswith("Could not find librbln.so")
        assert device_reason() == reason  # no runtime: no device either
    else:
        pytest.skip("RBLN runtime present: the RBLN region is available here")


class _StoppedRegion:
    """Stands in for ``torch.rbln.explain()`` on a host without the runtime: its stop()
    succeeds and its dump() returns a recorded dump, or raises as torch-rbln's dump() does
    when it and librbln disagree (the region's handling is what is tested, not torch-rbln)."""

    def __init__(self, dump=None, error=None):
        self._dump, self._error = dump, error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def dump(self):
        if self._error is not None:
            raise self._error
        return self._dump


@pytest.mark.parametrize("fails", [False, True])
def test_rbln_region_maps_the_dump_or_reports_its_failure(monkeypatch, fails):
    torch = pytest.importorskip("torch")
    import types

    from laya_tui.families.explain.rbln import RblnRegion

    error = RuntimeError("runtime hidden-reason axis drifted (runtime reports 4 reasons, this "
                         "build names 3); torch-rbln and rebel-compiler/librbln are out of sync")
    fake = _StoppedRegion(COLD, error if fails else None)
    monkeypatch.setattr(torch, "rbln", types.SimpleNamespace(explain=lambda with_stack: fake),
                        raising=False)
    with RblnRegion("prefill", phase="cold") as region:
        print("[2026-09-14 19:49:00.101][I] `aten::argmax` op ran on CPU instead of RBLN",
              flush=True)
    subjects = {e.subject for e in region.entries}
    assert "aten::argmax" in subjects  # the captured log is merged either way
    extras = region.extra_signals()
    if fails:
        assert subjects == {"aten::argmax"}
        env = next(x for x in extras if x["subject"] == "rbln.explain.dump")
        assert env["reason"].startswith("RuntimeError: runtime hidden-reason axis drifted")
    else:
        assert "aten::pow.Tensor_Scalar_out" in subjects
        assert not [x for x in extras if x["subject"] == "rbln.explain.dump"]
    # issue 43: the region's placement is torch.rbln.explain's own dispatch counts
    placement = region.summary()["placement"]
    if fails:
        assert placement["on_device"] is None and "dump() failed" in placement["note"]
    else:
        disp = COLD["dispatch"]
        assert placement == {"on_device": disp["total"] - disp["cpu_fallback"],
                             "fallback": disp["cpu_fallback"],
                             "share": round(disp["cpu_fallback"] / disp["total"], 6),
                             "unit": "device placement",
                             "counted": "op calls (torch.rbln.explain dispatch.total, "
                                        "cpu_fallback)"}
        # the per-op fallback counts the same dump gives add up to the CPU share
        assert placement["fallback"] == sum(COLD["cpu_fallback_by_op"].values())
        from laya_tui.report.views.placement import placement_text

        assert placement_text(placement) == "on device 385 ops · CPU 27 (6.55%)"


def test_rbln_placement_of_an_idle_region_says_nothing_ran_there():
    from laya_tui.families.explain.placement import NO_RBLN_DISPATCH, rbln_placement

    idle = {**WARM, "dispatch": {**WARM["dispatch"], "total": 0, "cpu_fallback": 0}}
    assert rbln_placement(idle) == {"on_device": None, "fallback": None, "share": None,
                                    "unit": None, "note": NO_RBLN_DISPATCH}
    assert rbln_placement(WARM)["on_device"] == 824 - 54
