"""SARIF results point only into the user's files: transformers' cast notes (whose frames
are in ``.venv/.../site-packages``, inside the workspace here) land on the user's code, and
the same finding seen twice (two regions, two library lines) is one result."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from laya_tui.report.sarif import validate_sarif
from tests._util import run_cli


def test_cast_notes_of_a_transformers_model_stay_in_the_users_files(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out, sarif = tmp_path / "r.json", tmp_path / "r.sarif"
    proc = run_cli("--headless", "--jobs", "1", "--only", "explain/tiny_llama[bf16,eager]",
                   "--no-cache", "--json", str(out), "--sarif", str(sarif), "--out",
                   str(tmp_path / "o"), env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
                   timeout=600)
    assert sarif.exists(), proc.stderr[-2000:]
    report, doc = json.loads(out.read_text()), json.loads(sarif.read_text())
    validate_sarif(doc)
    casts = [s for p in report["probes"] for s in p["signals"] if s["kind"] == "cast"]
    in_library = [s for s in casts if "site-packages" in str((s.get("site") or {}).get("file"))]
    assert in_library  # the premise: torch records these casts inside transformers
    results = doc["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert results and not [u for u in uris if "site-packages" in u or u.startswith(".venv")]
    places = collections.Counter(
        (r["ruleId"], r["partialFingerprints"]["layaSignal/v1"], u) for r, u in
        zip(results, uris, strict=True))
    assert max(places.values()) == 1  # no result twice
    # every cast occurrence is still counted: the results' counts sum to the signals'
    counted = sum(int(r["properties"].get("count", 1)) for r in results
                  if r["ruleId"] == "laya/cast")
    assert counted == sum(int(s.get("count", 1)) for s in casts)
