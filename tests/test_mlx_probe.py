"""The mlx probe family: its cells, its signals, and its skip when MLX is missing."""

from __future__ import annotations

import sys

import pytest

from laya_tui.api import Context, Skipped
from laya_tui.core.report_types import SignalDict
from laya_tui.worker.loader import import_probe_file, probes_in
from tests._util import REPO

PROBE_FILE = str(REPO / "probes" / "mlx_forward.py")


def _module():
    return import_probe_file(PROBE_FILE, str(REPO))


def _run(func_name: str, probe_id: str, **kwargs):
    signals: list[SignalDict] = []
    ctx = Context(probe_id, "mlx", lambda ev: signals.append(ev["signal"]), opts={})
    fn = next(s.func for s in probes_in(_module()) if s.func.__name__ == func_name)
    fn(ctx, **kwargs)
    return ctx, signals


def test_cells_and_light_discovery():
    mod = _module()
    ids = [pid for spec in probes_in(mod) for pid, _ in spec.cells()]
    assert ids == ["mlx/encoder[fp32,eager]", "mlx/encoder[fp32,compiled]",
                   "mlx/encoder[fp16,eager]", "mlx/encoder[fp16,compiled]",
                   "mlx/encoder[fp32,retrace]", "mlx/encoder[fp32,bucketed]"]
    assert not hasattr(mod, "mx") and not hasattr(mod, "torch")


def test_skips_with_install_hint_without_mlx(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlx", None)
    monkeypatch.setitem(sys.modules, "mlx.core", None)
    with pytest.raises(Skipped, match=r"mlx not installed .*pip install 'mlx(\[cpu\])?'"):
        _run("encoder_retrace", "mlx/encoder[fp32,retrace]")


def test_retrace_cell_signals():
    pytest.importorskip("mlx.core", reason="pip install 'mlx[cpu]'")
    ctx, signals = _run("encoder_retrace", "mlx/encoder[fp32,retrace]")
    assert ctx.failures == []
    rec = [s for s in signals if s["kind"] in ("compile", "recompile")]
    assert [s["reason"] for s in rec] == ["new input shape (2, 40)", "new input shape (3, 40)",
                                          "new input shape (2, 56)"]
    assert [s["kind"] for s in rec] == ["compile", "recompile", "recompile"]
    assert [s["count"] for s in rec] == [1, 2, 3]
    assert [s["detail"]["phase"] for s in rec] == ["cold", "warm", "warm"]
    assert {s["subject"] for s in rec} == {"encoder_forward"}
    traces = [s for s in signals if s.get("subject") == "trace"]
    assert [s["value"] for s in traces] == [1, 0, 0, 1, 1, 0]
    retrace = [s for s in signals if s["kind"] == "timing" and s["subject"] == "retrace"]
    assert [s["detail"]["shape"] for s in retrace] == [[2, 40], [3, 40], [2, 56]]
    assert all(s["detail"]["first_call_s"] > 0 for s in retrace)


def test_bucketed_cell_signals():
    pytest.importorskip("mlx.core", reason="pip install 'mlx[cpu]'")
    ctx, signals = _run("encoder_bucketed", "mlx/encoder[fp32,bucketed]", bucket=16)
    assert ctx.failures == []
    rec = [s for s in signals if s["kind"] in ("compile", "recompile")
           and s["subject"] == "encoder_forward"]
    assert [s["reason"] for s in rec] == ["new input shape (2, 48)", "new input shape (2, 64)",
                                          "new input shape (2, 96)"]
    summary = [s for s in signals if s["kind"] == "log" and s["subject"] == "padding"][-1]
    assert summary["detail"]["traces"] == 3 and summary["detail"]["unbucketed"]["traces"] == 8
    assert summary["value"] > summary["detail"]["unbucketed"]["padding_waste"]
    assert summary["detail"]["unique_inputs"] == 16


@pytest.mark.slow
def test_parity_cell_fp16_compiled():
    pytest.importorskip("mlx.core", reason="pip install 'mlx[cpu]'")
    ctx, signals = _run("encoder_parity", "mlx/encoder[fp16,compiled]", dtype="fp16",
                        compiled=True)
    assert ctx.failures == []
    tol = [s for s in signals if s["kind"] == "tolerance"]
    assert len(tol) == 3 and all(s["limit"] == 1e-2 and s["passed"] for s in tol)
    phases = {(s["subject"], s["detail"]["phase"]) for s in signals if s["kind"] == "timing"}
    for name in ("prepare", "graph", "forward", "convert", "total"):
        assert (name, "cold") in phases and (name, "warm") in phases
    assert ("torch_eager", "warm") in phases
    fwd = next(s for s in signals if s["kind"] == "timing" and s["subject"] == "forward"
               and s["detail"]["phase"] == "warm")
    assert fwd["detail"]["padding_waste"] == pytest.approx(183 / 372)
