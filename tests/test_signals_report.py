"""Signal construction and the report schema."""

from __future__ import annotations

from typing import Any, cast

import jsonschema
import pytest

from laya_tui.core.results import signal_key
from laya_tui.core.signals import SignalError, format_site, make_signal
from laya_tui.report.document import build_report, validate_report
from laya_tui.report.gates import evaluate_gates


def test_make_signal_drops_none_and_keeps_fields():
    sig = make_signal("fallback", "p", subject="aten::neg", count=3, bytes=None,
                      site={"file": "m.py", "line": 4, "func": "f"})
    assert sig == {"kind": "fallback", "probe": "p", "subject": "aten::neg", "count": 3,
                   "site": {"file": "m.py", "line": 4, "func": "f"}}
    assert signal_key(sig) == ("p", "fallback", "aten::neg", "")
    # format_site takes dict[str, Any] | None, not the SiteDict a signal holds (reported)
    assert format_site(cast(dict[str, Any], sig.get("site"))) == "m.py:4(f)"


@pytest.mark.parametrize("kwargs", [{"kind": "grade"}, {"kind": "log", "severity": "high"},
                                    {"kind": "log", "site": "m.py:3"}])
def test_make_signal_rejects_bad_input(kwargs):
    kind = kwargs.pop("kind")
    with pytest.raises(SignalError):
        make_signal(kind, "p", **kwargs)


def _probe(status="ok", signals=()):
    return {"id": "fam/x", "family": "fam", "status": status, "reason": None, "seconds": 0.1,
            "cached": False, "deps": [], "signals": list(signals), "log_tail": ""}


def test_report_validates_and_counts():
    sig = make_signal("tolerance", "fam/x", subject="out", value=0.5, limit=0.1, passed=False)
    probes = [_probe("failed", [sig]), dict(_probe("crashed"), id="fam/y")]
    gates = evaluate_gates(probes)
    report = build_report(probes, seconds=1.0, gates=gates)
    validate_report(report)
    assert report["schema"] == "laya-tui.report/5"
    assert report["summary"]["status"]["crashed"] == 1
    assert report["summary"]["signals"]["tolerance"] == 1
    assert report["summary"]["passed"] is False
    failed = {g["name"] for g in report["gates"] if not g["passed"]}
    assert failed == {"no-crash", "tolerance"}


def test_schema_rejects_unknown_status_and_kind():
    report = build_report([_probe()], seconds=0.0, gates=evaluate_gates([_probe()]))
    report["probes"][0]["status"] = "grumpy"
    with pytest.raises(jsonschema.ValidationError):
        validate_report(report)
    report["probes"][0]["status"] = "ok"
    report["probes"][0]["signals"] = [{"kind": "grade", "probe": "fam/x"}]
    with pytest.raises(jsonschema.ValidationError):
        validate_report(report)


def test_faulthandler_extension_list_is_trimmed():
    from laya_tui.core.logtext import trim_faulthandler

    text = ("Fatal Python error: Segmentation fault\n  File \"x.py\", line 3 in f\n"
            "Extension modules: numpy._core, " + "m, " * 2000 + "z (total: 2003)\n")
    out = trim_faulthandler(text)
    assert "line 3 in f" in out
    assert out.endswith("Extension modules: (2003 loaded; list omitted)\n")


def test_write_atomic_gives_ordinary_file_permissions(tmp_path):
    import os

    from laya_tui.report.document import write_atomic

    target = tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        write_atomic(str(target), "{}\n")
    finally:
        os.umask(old)
    assert target.read_text() == "{}\n"
    assert (target.stat().st_mode & 0o777) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
