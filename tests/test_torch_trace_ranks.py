"""Two processes standing for two ranks of a gloo group write TORCH_TRACE into one folder; the
import gives one cell tree per rank, and the inductor cache hits and misses each rank's
counters recorded (rank 1 compiles after rank 0, from the shared FX-graph cache)."""

from __future__ import annotations

import pytest

from laya_tui.report.document import validate_report
from laya_tui.report.trace_import import trace_report
from tests._signals import detail_of
from tests._torch_trace import run_ranks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_ranks(tmp_path_factory.mktemp("ranks"))


def test_one_cell_tree_per_rank_with_each_ranks_cache_events(ranks):
    report = trace_report(str(ranks["trace"]))
    validate_report(report)
    files = report["imported"]["files"]
    assert [f["label"] for f in files] == ["rank0", "rank1"]
    assert [f["rank"] for f in files] == [0, 1]
    assert all("_rank_" in f["file"] for f in files)  # torch's own per-rank file names
    for rank in (0, 1):
        counters = ranks["ranks"][rank]
        compiles = [s for p in report["probes"] if p["id"].startswith(f"trace/rank{rank}/")
                    for s in p["signals"] if s["kind"] == "compile"]
        assert len(compiles) == 1
        (sig,) = compiles
        assert sig["subject"] is not None
        assert sig["subject"].startswith("g (")
        fx = detail_of(sig)["cache"]["fx_graph"]
        assert fx.get("hit", 0) == counters["fx_hit"]
        assert fx.get("miss", 0) == counters["fx_miss"]
        cell = next(p for p in report["probes"] if p["id"] == f"trace/rank{rank}")
        assert cell["params"]["rank"] == rank
    assert ranks["ranks"][1]["fx_hit"] == 1  # the second rank was served from the cache


def test_ranks_that_compiled_different_frames_are_a_finding_as_tlparse_warns(tmp_path):
    """Rank 1 compiles one more frame: a ``trace/ranks`` finding names what rank 0 lacks,
    where tlparse's multi-rank report warns "Diverging Compilation IDs"; ranks that
    compiled the same frames (the test above) have no such cell."""
    import subprocess

    from laya_tui.families.torch_trace_capture import TLPARSE_HINT, tlparse_command

    run = run_ranks(tmp_path / "diverge", diverge=True)
    report = trace_report(str(run["trace"]))
    validate_report(report)
    cell = next(p for p in report["probes"] if p["id"] == "trace/ranks")
    assert cell["status"] == "failed" and cell["params"]["ranks"] == [0, 1]
    (sig,) = cell["signals"]
    assert detail_of(sig)["lacks"] == {"rank0": ["1/0"]}
    assert cell["reason"] is not None
    assert "rank0 lacks 1/0" in cell["reason"]
    assert report["probes"][0]["id"] == "trace/ranks"  # the finding first
    assert report["imported"]["seconds"] < 60 and report["summary"]["seconds"] == \
        pytest.approx(report["imported"]["seconds"], abs=1e-3)
    tlparse = tlparse_command()
    if tlparse is None:
        pytest.skip(f"tlparse is not installed: {TLPARSE_HINT}")
    out = tmp_path / "tl_out"
    subprocess.run([tlparse, str(run["trace"]), "--all-ranks-html", "--no-browser", "-o",
                    str(out), "--overwrite"], check=True, capture_output=True, timeout=300)
    assert "Diverging Compilation IDs detected across ranks" in (out / "index.html").read_text()


def test_ranks_that_compiled_the_same_frames_have_no_divergence_cell(ranks):
    report = trace_report(str(ranks["trace"]))
    assert not [p for p in report["probes"] if p["id"] == "trace/ranks"]
