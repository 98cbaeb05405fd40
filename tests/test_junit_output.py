"""``--junit``: golden XML, validated against the Jenkins xUnit junit-10.xsd."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from laya_tui.gates import GateSettings, evaluate_all
from laya_tui.junit import build_junit
from laya_tui.report import build_report, validate_report
from tests._ci_reports import (
    FLAGS,
    REGRESS,
    check_golden,
    ci_workspace,
    normalized,
    real_report,
    run_ci,
)

xmlschema = pytest.importorskip("xmlschema", reason="pip install xmlschema (dev extra)")
XSD = Path(__file__).parent / "fixtures" / "junit-10.xsd"


@pytest.fixture(scope="module")
def schema():
    return xmlschema.XMLSchema(str(XSD))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("junit")
    ws = ci_workspace(d)
    base = real_report(ws, d / "base.json", None, "--junit", str(d / "base.xml"))
    now = real_report(ws, d / "now.json", REGRESS, "--baseline", str(d / "base.json"),
                      "--junit", str(d / "now.xml"), *FLAGS)
    return d, base, now


def _cases(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    return {f"{c.get('classname')}/{c.get('name')}": c for c in root.iter("testcase")}


def test_cli_files_validate(runs, schema):
    d, _, _ = runs
    for name in ("base.xml", "now.xml"):
        schema.validate(str(d / name))


def test_schema_is_real(schema):
    # the XSD rejects what CI readers reject: a suite without counts, a bad time
    assert not schema.is_valid('<testsuites><testsuite name="x" tests="1">'
                               '<testcase name="a"/></testsuite></testsuites>')
    assert not schema.is_valid('<testsuites><testsuite name="x" tests="1" failures="0" '
                               'errors="0" time="1.5 s"><testcase name="a"/></testsuite>'
                               '</testsuites>')
    assert not schema.is_valid('<testsuites><testsuite name="x" tests="1" failures="0" '
                               'errors="0"><testcase/></testsuite></testsuites>')


@pytest.mark.parametrize("which", ["base", "now"])
def test_golden(runs, schema, which):
    _, base, now = runs
    xml = build_junit(normalized(base if which == "base" else now))
    schema.validate(xml)
    check_golden(f"junit_{which}.xml", xml)


def test_cells_failures_and_skips(runs):
    _, base, now = runs
    cases = _cases(build_junit(now))
    assert len(cases) == len(now["probes"]) + 2  # + max:fallback, max:cast
    llama = cases["ci/llama_forward"]
    types = sorted(f.get("type") for f in llama.findall("failure"))
    assert types == ["baseline", "baseline", "baseline", "fail-on:host_bounce"]
    num = cases["ci/numerics"]
    assert {f.get("type") for f in num.findall("failure")} == {"tolerance", "baseline"}
    assert "3e-05 > limit 2e-05" in num.find("failure").get("message")
    assert cases["laya-tui.gates/max:fallback"].find("failure") is not None
    assert cases["laya-tui.gates/max:cast"].find("failure") is None
    base_cases = _cases(build_junit(base))
    skipped = base_cases["ci/optional_backend"].find("skipped")
    assert skipped is not None and "pip install" in skipped.get("message")
    out = base_cases["ci/gemm_kernel[c,bf16,gpu]"].find("system-out").text
    assert "no gate fails on it" in out and "bf16 has no C type" in out
    root = ET.fromstring(build_junit(now))
    assert root.get("tests") == str(len(cases))
    assert root.get("failures") == str(sum(1 for c in cases.values()
                                           if c.find("failure") is not None))


def test_hostile_text_and_crashes_still_validate(runs, schema):
    _, base, _ = runs
    probes = copy.deepcopy(base["probes"])
    probes[0].update(status="crashed", reason="SIGSEGV \x1b[31mcore\x00 dumped\x07 ]]> <&>",
                     log_tail="\x1b[1mINFO\x1b[0m tilelang \ud800 lowering\x0c")
    probes[-1].update(status="skipped", reason="")
    settings = GateSettings(fail_on=["skipped"], max_counts={"fallback": 0})
    gates, extra = evaluate_all(probes, settings,
                                [{"file": "probes/bad.py", "error": "SyntaxError \x01"}])
    report = build_report(probes, seconds=1.0, gates=gates, errors=[
        {"file": "probes/bad.py", "error": "SyntaxError", "line": 3}], extra=extra)
    validate_report(report)
    xml = build_junit(report)
    schema.validate(xml)
    cases = _cases(xml)
    crashed = cases["ci/llama_forward"]
    assert crashed.find("failure").get("type") == "no-crash"
    assert "]]> <&>" in crashed.find("failure").get("message")
    last = cases[probes[-1]["id"]]
    assert last.find("skipped") is None and last.find("failure").get("type") == "fail-on:skipped"
    assert cases["laya-tui.gates/probe-files"].find("failure") is not None


def test_cli_junit_with_gate_failure(tmp_path, schema):
    ws = ci_workspace(tmp_path, {"crash": True})
    proc = run_ci(ws, "--junit", str(tmp_path / "j.xml"))
    assert proc.returncode == 1
    schema.validate(str(tmp_path / "j.xml"))
    case = _cases((tmp_path / "j.xml").read_text())["ci/numerics"]
    assert case.find("failure").get("type") == "no-crash"
