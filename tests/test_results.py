"""Typed results: one identity, one "failing" rule and one builder for signals and results."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from laya_tui.core.results import (
    ProbeResult,
    Signal,
    failing,
    make_result,
    signal_key,
)
from laya_tui.core.signals import FIELDS, make_signal

PROBE: dict[str, Any] = {"id": "tilelang/gemm[c]", "family": "tilelang", "file": "/w/probes/t.py",
         "func": "gemm", "param": "c", "params": {"target": "c"}}


def test_signal_fields_are_the_schema_fields_in_order():
    names = [f.name for f in dataclasses.fields(Signal)]
    assert names == ["kind", "probe", *FIELDS]


def test_signal_round_trips_and_reads_like_its_dict():
    raw = make_signal("lowering", "tilelang/gemm[c]", subject="gemm", reason="no layout",
                      passed=False, site={"file": "k.py", "line": 3},
                      detail={"outcome": "lower-failed"})
    sig = Signal.from_dict(raw)
    assert sig.to_dict() == raw
    assert json.dumps(sig.to_dict()) == json.dumps(raw)  # same bytes, same key order
    assert sig.get("reason") == "no layout" and sig["subject"] == "gemm"
    assert sig.get("count") is None and sig.get("count", 1) == 1 and "count" not in sig
    with pytest.raises(KeyError):
        sig["bytes"]
    assert sig.key() == signal_key(raw) == ("tilelang/gemm[c]", "lowering", "gemm", "no layout")
    assert sig.failing() and failing(raw)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sig.reason = "changed"  # type: ignore[misc]


def test_unknown_fields_from_a_newer_writer_are_dropped():
    sig = Signal.from_dict({"kind": "log", "probe": "p", "severity": "high"})
    assert sig.to_dict() == {"kind": "log", "probe": "p"}


@pytest.mark.parametrize(("sig", "expected"), [
    ({"kind": "tolerance", "passed": False}, True),
    ({"kind": "tolerance", "passed": True}, False),
    ({"kind": "lowering", "detail": {"outcome": "run-failed"}}, True),
    ({"kind": "lowering", "detail": {"outcome": "ran"}}, False),
    ({"kind": "fallback", "count": 3}, False),
])
def test_failing_is_one_rule(sig, expected):
    assert failing(sig) is expected
    assert Signal.from_dict(sig).failing() is expected


def test_key_takes_the_probe_from_the_caller_when_given():
    raw = {"kind": "cast", "subject": "x", "count": 2}
    assert signal_key(raw, "p/q") == ("p/q", "cast", "x", "")
    assert signal_key({"kind": "cast", "subject": 3}) == ("", "cast", "3", "")


def test_make_result_keeps_the_report_key_order():
    res = make_result(PROBE, "ok", None, seconds=1.5, deps=["probes/t.py"], signals=[],
                      log_tail="", started=10.0, ended=11.5)
    assert list(res) == ["id", "family", "cached", "params", "file", "started", "status",
                         "reason", "seconds", "deps", "signals", "log_tail", "ended"]
    err = make_result(PROBE, "failed", "boom", seconds=0.0, deps=[], signals=[],
                      error={"type": "ProbeFileError", "message": "boom", "site": None})
    assert "started" not in err and list(err)[-1] == "error"
    assert not [k for k in res if k.startswith("_")]  # no private keys ride in a result


def test_probe_result_snapshot_round_trips():
    raw = make_result(PROBE, "failed", "no layout", seconds=0.25, deps=["k.py"],
                      signals=[make_signal("lowering", PROBE["id"], subject="gemm",
                                           passed=False)],
                      log_tail="tail", started=1.0, ended=1.25)
    snap = ProbeResult.from_dict(raw)
    assert snap.to_dict() == raw and list(snap.to_dict()) == list(raw)
    assert snap.key() == PROBE["id"] and snap.failing()
    assert [s.key() for s in snap.failing_signals()] == [signal_key(raw["signals"][0])]
    assert isinstance(snap.signals, tuple) and isinstance(snap.deps, tuple)
    assert not ProbeResult.from_dict(dict(raw, status="ok", signals=[])).failing()
