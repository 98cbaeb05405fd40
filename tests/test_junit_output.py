"""``--junit``: golden XML, validated against the Jenkins xUnit junit-10.xsd."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from laya_tui.report.document import build_report, validate_report
from laya_tui.report.gates import GateSettings, evaluate_all
from laya_tui.report.junit import build_junit
from tests._ci_reports import (
    FLAGS,
    REGRESS,
    check_golden,
    ci_workspace,
    normalized,
    real_report,
    run_ci,
)
from tests._xml import attr, child, text

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


@pytest.mark.parametrize("which", ["base", "now"])
def test_cli_file_has_a_case_per_cell_and_counts_that_match(runs, which):
    d, base, now = runs
    report = base if which == "base" else now
    root = ET.parse(d / f"{which}.xml").getroot()  # what --junit wrote
    suites = root.findall("testsuite")
    families = sorted({p["family"] for p in report["probes"]})
    assert [s.get("name") for s in suites] == families + ["laya-tui.gates"] * (
        len(suites) > len(families))
    cells = [f"{c.get('classname')}/{c.get('name')}" for s in suites[:len(families)]
             for c in s.findall("testcase")]
    assert sorted(cells) == sorted(p["id"] for p in report["probes"])
    for suite in suites:
        cases = suite.findall("testcase")
        assert suite.get("tests") == str(len(cases))
        for count, tag in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
            assert suite.get(count) == str(sum(c.find(tag) is not None for c in cases))
        # a family's cells run one after another: its span holds them all
        assert float(attr(suite, "time")) >= sum(float(attr(c, "time")) for c in cases) \
            - 0.001 * (len(cases) + 1)
    for total in ("tests", "failures", "errors"):
        assert root.get(total) == str(sum(int(attr(s, total)) for s in suites))
    assert root.get("time") == f"{report['summary']['seconds']:.3f}"  # the run's, not a sum


def test_the_xsd_rejects_our_output_once_broken(runs, schema):
    # the check the tests above rely on can fail on our own XML, as CI readers would
    d, _, _ = runs
    xml = (d / "now.xml").read_text()
    schema.validate(xml)

    def broken(change) -> str:
        root = ET.fromstring(xml)
        change(root)
        return ET.tostring(root, encoding="unicode")

    assert not schema.is_valid(broken(lambda r: r.find("testsuite").attrib.pop("failures")))
    assert not schema.is_valid(broken(lambda r: r.find("testsuite").set("time", "1.5 s")))
    assert not schema.is_valid(broken(lambda r: r.find("testsuite/testcase").attrib.pop("name")))


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
    (failure,) = llama.findall("failure")  # one per case, naming every gate it failed
    assert failure.get("type") == "fail-on:host_bounce,baseline"  # in gate order
    assert attr(failure, "message").endswith(" (+3 more)")
    lines = text(failure).splitlines()
    assert sum(ln.startswith("gate baseline: ") for ln in lines) == 3
    assert sum(ln.startswith("gate fail-on:host_bounce: ") for ln in lines) == 1
    assert len(set(lines)) == len(lines)  # nothing repeated
    num = cases["ci/numerics"]
    (failure,) = num.findall("failure")
    assert set(attr(failure, "type").split(",")) == {"tolerance", "baseline"}
    assert "3e-05 > limit 2e-05" in text(failure)
    assert cases["laya-tui.gates/max:fallback"].find("failure") is not None
    assert cases["laya-tui.gates/max:cast"].find("failure") is None
    base_cases = _cases(build_junit(base))
    skipped = base_cases["ci/optional_backend"].find("skipped")
    assert skipped is not None and "pip install" in attr(skipped, "message")
    out = text(child(base_cases["ci/gemm_kernel[c,bf16,gpu]"], "system-out"))
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
    settings = GateSettings(fail_on=("skipped",), max_counts={"fallback": 0})
    gates, extra = evaluate_all(probes, settings,
                                [{"file": "probes/bad.py", "error": "SyntaxError \x01"}])
    report = build_report(probes, seconds=1.0, gates=gates, errors=[
        {"file": "probes/bad.py", "error": "SyntaxError", "line": 3}], extra=extra)
    validate_report(report)
    xml = build_junit(report)
    schema.validate(xml)
    cases = _cases(xml)
    crashed = cases["ci/llama_forward"]
    assert child(crashed, "failure").get("type") == "no-crash"
    assert "]]> <&>" in attr(child(crashed, "failure"), "message")
    last = cases[probes[-1]["id"]]
    assert last.find("skipped") is None and child(last, "failure").get("type") == "fail-on:skipped"
    assert cases["laya-tui.gates/probe-files"].find("failure") is not None


def test_cli_junit_with_gate_failure(tmp_path, schema):
    ws = ci_workspace(tmp_path, {"crash": True})
    proc = run_ci(ws, "--junit", str(tmp_path / "j.xml"))
    assert proc.returncode == 1
    schema.validate(str(tmp_path / "j.xml"))
    case = _cases((tmp_path / "j.xml").read_text())["ci/numerics"]
    assert child(case, "failure").get("type") == "no-crash"
