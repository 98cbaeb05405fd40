"""Reports are strict JSON (issue 42 item 6): no ``NaN``/``Infinity`` anywhere; a measured
value that is not a finite number is ``null`` with ``"nonfinite"`` saying what it was.

Every JSON file a few representative CLI runs write (reports, merged reports, SARIF, Chrome
traces) is parsed with a parser that refuses those constants."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import cast

import pytest

from laya_tui.core.jsonfast import compact_encoder, dumps_strict, finite, loads_strict
from laya_tui.report.document import report_text, validate_report
from laya_tui.report.merge import dumps_report
from laya_tui.report.sarif_types import SarifLog
from tests._ci_reports import ci_workspace, run_ci
from tests._util import copy_workspace, run_cli

NAN, INF = float("nan"), float("inf")

NAN_PROBES = '''\
import math

from laya_tui import probe


@probe(family="numbers")
def drift(ctx):
    ctx.tolerance("logits", float("nan"), 1e-3)
    ctx.timing("forward", float("inf"))
    ctx.signal("tolerance", subject="probs", value=-math.inf, limit=1e-3,
               detail={"per_layer": [0.1, float("nan")], "worst": float("inf")})
'''


def test_finite_nulls_non_numbers_and_says_why():
    sig = {"kind": "tolerance", "value": NAN, "limit": 1e-3,
           "detail": {"per_layer": [0.5, INF], "worst": -INF, "ok": 2.0}}
    out = finite(sig)
    assert out == {"kind": "tolerance", "value": None, "limit": 1e-3,
                   "detail": {"per_layer": [0.5, None], "worst": None, "ok": 2.0,
                              "nonfinite": {"per_layer[1]": "inf", "worst": "-inf"}},
                   "nonfinite": {"value": "nan"}}
    assert isinstance(sig["value"], float) and math.isnan(sig["value"])  # input unchanged
    clean = {"a": [1, 2.5, {"b": "x"}], "c": None}
    assert finite(clean) is clean  # nothing to do: no copy


def test_the_encoders_are_strict():
    enc = compact_encoder(repr, strict=True)
    assert enc({"value": NAN}) == '{"value": null, "nonfinite": {"value": "nan"}}'
    assert enc([1.5, "x"]) == json.dumps([1.5, "x"])  # the fast path, unchanged text
    assert loads_strict(dumps_strict({"v": INF}, indent=1)) == {"v": None,
                                                                 "nonfinite": {"v": "inf"}}
    with pytest.raises(ValueError, match="NaN is not JSON"):
        loads_strict('{"v": NaN}')


def _report_with_nans() -> dict:
    sigs = [{"kind": "tolerance", "probe": "n/x", "subject": "logits", "value": NAN,
             "limit": 1e-3, "passed": False},
            {"kind": "timing", "probe": "n/x", "subject": "fwd", "seconds": INF}]
    return {"schema": "laya-tui.report/2", "environment": {"load": NAN},
            "probes": [{"id": "n/x", "status": "failed", "seconds": NAN, "signals": sigs,
                        "budget": {"timeout": 60.0, "cpu_seconds": INF}}],
            "summary": {"worst": -INF}, "gates": []}


@pytest.mark.parametrize("write", [report_text, dumps_report])
def test_the_report_writers_write_strict_json(write):
    doc = loads_strict(write(_report_with_nans()))
    probe = doc["probes"][0]
    assert probe["seconds"] is None and probe["nonfinite"] == {"seconds": "nan"}
    assert probe["signals"][0]["value"] is None
    assert probe["signals"][0]["nonfinite"] == {"value": "nan"}
    assert probe["signals"][1]["nonfinite"] == {"seconds": "inf"}
    assert probe["budget"]["nonfinite"] == {"cpu_seconds": "inf"}
    assert doc["environment"]["nonfinite"] == {"load": "nan"}
    assert doc["summary"] == {"worst": None, "nonfinite": {"worst": "-inf"}}


def _json_files(root: Path) -> list[Path]:
    return sorted(p for ext in ("*.json", "*.sarif", "*.trace") for p in root.rglob(ext)
                  if "probes" not in p.parts and p.name != "scenario.json")


def test_every_report_the_cli_writes_is_strict_json(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    nan_ws = tmp_path / "nanws"
    (nan_ws / "probes").mkdir(parents=True)
    (nan_ws / "probes" / "nans.py").write_text(NAN_PROBES)
    proc = run_cli("--workspace", str(nan_ws), "--headless", "--no-cache", "-q",
                   "--json", str(out / "nan.json"), "--sarif", str(out / "nan.sarif"),
                   "--trace", str(out / "nan.trace"), "--html", str(out / "nan.html"),
                   cwd=nan_ws, timeout=120)
    assert proc.returncode == 1, proc.stderr  # the NaN tolerance check fails, as it should
    ws = ci_workspace(tmp_path)
    for k in (1, 2):
        proc = run_ci(ws, "--shard", f"{k}/2", "--json", str(out / f"ci-{k}.json"),
                      "--sarif", str(out / f"ci-{k}.sarif"))
        assert proc.returncode in (0, 1), proc.stderr
    mixed = copy_workspace("mixed", tmp_path)
    proc = run_cli("--workspace", str(mixed), "--headless", "--no-cache", "-q",
                   "--only", "faults/healthy", "--only", "faults/segfault",
                   "--only", "faults/raises", "--json", str(out / "mixed.json"), cwd=mixed,
                   timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    proc = run_cli("merge", str(out / "ci-1.json"), str(out / "ci-2.json"),
                   str(out / "nan.json"), "--json", str(out / "merged.json"), cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    files = _json_files(out)
    assert {p.name for p in files} >= {"nan.json", "nan.sarif", "nan.trace", "ci-1.json",
                                       "ci-2.json", "mixed.json", "merged.json"}
    for path in files:
        text = path.read_text()
        loads_strict(text)  # raises on NaN / Infinity / -Infinity
    html = (out / "nan.html").read_text()
    assert "NaN" not in html and "Infinity" not in html
    nan = loads_strict((out / "nan.json").read_text())
    for name in ("nan.json", "mixed.json", "merged.json"):  # "nonfinite" is in the schema
        validate_report(loads_strict((out / name).read_text()))
    sigs = nan["probes"][0]["signals"]
    assert sigs[0]["value"] is None and sigs[0]["nonfinite"] == {"value": "nan"}
    assert sigs[2]["detail"]["nonfinite"] == {"per_layer[1]": "nan", "worst": "inf"}
    merged = loads_strict((out / "merged.json").read_text())
    assert any(s.get("nonfinite") for p in merged["probes"] for s in p.get("signals", []))


def test_sarif_text_is_strict_json():
    """SARIF is written from the report in memory (an imported trace's values were never
    through the worker's encoder): its writer is strict too."""
    from laya_tui.report.sarif import sarif_chunks

    doc = {"version": "2.1.0", "runs": [{"properties": {"worst": NAN},
                                         "results": [{"properties": {"value": INF}}]}]}
    out = loads_strict("".join(sarif_chunks(cast(SarifLog, doc))))  # partial: a few values
    run = out["runs"][0]
    assert run["properties"] == {"worst": None, "nonfinite": {"worst": "nan"}}
    assert run["results"][0]["properties"] == {"value": None, "nonfinite": {"value": "inf"}}
