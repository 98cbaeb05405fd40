"""``--trace``: Chrome trace events of a run, validated like a trace viewer would read them:
every span closed, nested spans inside their parents, time never going back on a track."""

from __future__ import annotations

import json

from laya_tui.core.trace import Span, TraceDoc, build_trace, check_trace, spans_of
from tests._tui import DEMO_REPORT, RECORDED, TILELANG_REPORT
from tests._util import WORKSPACES, run_cli

MLX_REPORT = RECORDED / "mlx_report.json"  # recorded with per-probe start/end times
AOTI_REPORT = RECORDED / "aoti_gpu_report.json"


def _validate(doc: TraceDoc) -> list[Span]:
    json.loads(json.dumps(doc))  # plain JSON
    assert isinstance(doc["traceEvents"], list)
    for ev in doc["traceEvents"]:
        assert ev["ph"] in ("B", "E", "M") and isinstance(ev["pid"], int)
        assert isinstance(ev["tid"], int)
        if ev["ph"] != "M":
            assert isinstance(ev["ts"], int) and ev["ts"] >= 0
    assert check_trace(doc) == []
    spans = spans_of(doc)
    by_track: dict = {}
    for s in spans:
        assert s["end"] >= s["start"]
        by_track.setdefault(s["track"], []).append(s)
    for track, items in by_track.items():
        roots = sorted((s for s in items if s["depth"] == 0), key=lambda s: s["start"])
        for a, b in zip(roots, roots[1:], strict=False):
            assert a["end"] <= b["start"], f"probe spans overlap on {track}"
        for s in items:
            if s["depth"]:
                parent = [r for r in items if r["depth"] == s["depth"] - 1
                          and r["start"] <= s["start"] and s["end"] <= r["end"]]
                assert parent, f"{s['name']} is outside every parent on {track}"
    return spans


def _threads(doc: TraceDoc) -> dict[int, str]:
    return {ev["tid"]: ev["args"]["name"] for ev in doc["traceEvents"]
            if ev["ph"] == "M" and ev["name"] == "thread_name"}


def test_recorded_times_one_track_per_worker_and_stage_spans():
    report = json.loads(MLX_REPORT.read_text())
    doc = build_trace(report)
    spans = _validate(doc)
    assert _threads(doc) == {1: "mlx worker"}
    probes = [s for s in spans if s["depth"] == 0]
    assert [s["name"] for s in sorted(probes, key=lambda s: s["start"])] == \
        [p["id"] for p in report["probes"]]
    first = report["probes"][0]
    for s, p in zip(sorted(probes, key=lambda s: s["start"]), report["probes"], strict=True):
        assert s["args"]["probe"] == p["id"] and s["args"]["status"] == p["status"]
        assert abs((s["end"] - s["start"]) / 1e6 - (p["ended"] - p["started"])) < 1e-5
        assert abs(s["start"] / 1e6 - (p["started"] - first["started"])) < 1e-5
    names = {s["name"] for s in spans if s["depth"] == 1}
    assert {"cold total", "warm total"} <= names
    cold = [s for s in spans if s["name"] == "cold forward"]
    assert cold and all(s["depth"] == 2 for s in cold)  # nested in its phase's total
    assert doc["otherData"]["start_times"] == "recorded"


def test_tilelang_stages_nest_in_their_cells():
    doc = build_trace(json.loads(TILELANG_REPORT.read_text()))
    spans = _validate(doc)
    stages = [s for s in spans if s["depth"] == 1]
    assert stages and {s["name"].rsplit("/", 1)[1] for s in stages} <= {"lower", "build", "run"}
    assert all((s.get("root") or "").startswith("tilelang/") for s in stages)
    assert "not recorded" in doc["otherData"]["start_times"]  # a report/1 without times


def test_aoti_stages_and_per_call_latencies_left_out():
    spans = _validate(build_trace(json.loads(AOTI_REPORT.read_text())))
    aoti = {s["name"] for s in spans if s["root"] == "aoti/decision[bf16,cuda]"
            and s["depth"] == 1}
    assert {"export", "package", "load-fresh"} <= aoti
    assert not any(n.startswith("latency/") for n in aoti)


def test_the_validator_catches_broken_traces():
    ok = {"pid": 1, "tid": 1}
    assert check_trace({"traceEvents": [{**ok, "ph": "B", "name": "a", "ts": 0}]}) == [
        "span 'a' on track (1, 1) is never closed"]
    crossed = [{**ok, "ph": "B", "name": "a", "ts": 0}, {**ok, "ph": "B", "name": "b", "ts": 1},
               {**ok, "ph": "E", "name": "a", "ts": 2}, {**ok, "ph": "E", "name": "b", "ts": 3}]
    assert any("inside" in p for p in check_trace({"traceEvents": crossed}))
    back = [{**ok, "ph": "B", "name": "a", "ts": 5}, {**ok, "ph": "E", "name": "a", "ts": 4}]
    assert any("back in time" in p for p in check_trace({"traceEvents": back}))
    assert check_trace([]) == ["not a Chrome trace (no traceEvents list)"]


def test_a_real_run_writes_a_valid_trace_and_html(tmp_path):
    """The runner records each probe's wall start and end; ``--trace`` lays them out."""
    trace, page, rep = tmp_path / "t.json", tmp_path / "r.html", tmp_path / "r.json"
    out = run_cli("--workspace", str(WORKSPACES / "ci"), "--headless", "--no-cache", "-q",
                  "--jobs", "2", "--json", str(rep), "--trace", str(trace), "--html", str(page),
                  cwd=WORKSPACES / "ci", timeout=120)
    assert out.returncode in (0, 1), out.stderr
    report = json.loads(rep.read_text())
    for p in report["probes"]:
        assert p["started"] <= p["ended"]
        assert abs((p["ended"] - p["started"]) - p["seconds"]) < 0.05
    doc = json.loads(trace.read_text())
    spans = _validate(doc)
    families = sorted({p["family"] for p in report["probes"]})
    assert sorted(_threads(doc).values()) == [f"{f} worker" for f in families]
    assert sorted(s["name"] for s in spans if s["depth"] == 0) == \
        sorted(p["id"] for p in report["probes"])
    assert "<script src" not in page.read_text() and page.stat().st_size > 5_000


def test_demo_report_without_times_is_laid_out_per_family():
    doc = build_trace(json.loads(DEMO_REPORT.read_text()))
    spans = _validate(doc)
    assert sorted(_threads(doc).values()) == ["env worker", "explain worker", "faults worker"]
    crashed = [s for s in spans if s["name"] == "faults/segfault"]
    assert crashed[0]["args"]["status"] == "crashed" and "SIGSEGV" in crashed[0]["args"]["reason"]
