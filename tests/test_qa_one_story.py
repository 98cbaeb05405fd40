"""QA pass (a user project's run): every output names the same findings, in the same order.

The report below is trimmed from a real run over a user project: a bf16 MLP whose ``if
t.max().item() > 100`` makes ``torch.export`` fail (an aoti cell ``failed`` whose only
account of it is a ``log`` signal at the branch's line) and a GPU-style TileLang kernel that
does not lower for ``c`` (a failing ``lowering`` signal).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import cast

from laya_tui.core.report_types import GateDict, ReportDict, ResultDict, SummaryDict
from laya_tui.report.annotations import annotation_lines
from laya_tui.report.findings import collect_findings
from laya_tui.report.sarif import build_sarif
from laya_tui.report.sources import Sources
from tests._signals import partial_report, partial_result, partial_signal

AOTI = "aoti/model[mlpkg.models:build]"
GEMM = "tilelang/tiled_gemm[c,fp16]"


def user_report(ws: Path) -> ReportDict:
    (ws / "mlpkg").mkdir()
    (ws / "mlpkg" / "models.py").write_text("\n" * 14 + "        if y.max().item() > 100.0:\n")
    (ws / "kernels").mkdir()
    (ws / "kernels" / "tiled_gemm.py").write_text("\n" * 13 + "    def main(A, B, C):\n")
    (ws / "pyproject.toml").write_text('[tool.laya-tui]\nmodels = ["mlpkg.models:build"]\n')
    reason = ("Could not guard on data-dependent expression zuf0 > 100.0 "
              "(unhinted: zuf0 > 100.0).  (Size-like symbols: none)")
    aoti = {"id": AOTI, "family": "aoti", "status": "failed", "state": "finding",
            "reason": f"export failed: GuardOnDataDependentSymNode: {reason}",
            "signals": [
                {"kind": "environment", "probe": AOTI, "subject": "aoti/toolchain"},
                {"kind": "log", "probe": AOTI, "subject": "export", "reason": reason,
                 "site": {"file": str(ws / "mlpkg" / "models.py"), "line": 15,
                          "func": "forward"},
                 "fix": "replace Python branching on tensor values with torch.cond",
                 "detail": {"step": "export", "exception": "GuardOnDataDependentSymNode"}},
                {"kind": "artifact", "probe": AOTI, "subject": "results.json"}]}
    gemm = {"id": GEMM, "family": "tilelang", "status": "failed", "state": "finding",
            "reason": "lowering tiled_gemm[c,fp16]: lower failed: The layout for fragment "
                      "acc can not be inferred correctly.",
            "signals": [{"kind": "lowering", "probe": GEMM, "subject": "tiled_gemm[c,fp16]",
                         "passed": False, "reason": "lower failed: The layout for fragment "
                         "acc can not be inferred correctly.",
                         "site": {"file": str(ws / "kernels" / "tiled_gemm.py"), "line": 14},
                         "detail": {"stage": "lower", "pass": "tl.LayoutInference"}}]}
    ok = {"id": "env/python", "family": "env", "status": "ok", "state": "ok", "signals": []}
    gates: list[GateDict] = [{"name": n, "passed": True, "failures": []}
             for n in ("no-crash", "no-timeout", "no-probe-error", "tolerance")]
    return partial_report({"schema": "laya-tui.report/5", "probes": [aoti, ok, gemm],
                           "gates": gates, "summary": {"passed": True}})


def test_an_ungated_failed_cell_without_a_finding_signal_is_in_sarif_and_annotations(
        tmp_path: Path) -> None:
    report = user_report(tmp_path)
    sources = Sources(str(tmp_path), env={})
    findings = {f.probe: f for f in collect_findings(report, sources)}
    assert set(findings) == {AOTI, GEMM}  # both findings of the summary, markdown, JUnit
    aoti = findings[AOTI]
    assert aoti.rule.id == "laya/probe/failed" and aoti.level == "warning"
    assert aoti.location is not None
    assert (aoti.location.path, aoti.location.line) == ("mlpkg/models.py", 15)
    assert "export failed: GuardOnDataDependentSymNode" in aoti.message
    sarif = build_sarif(report, sources)
    where = {r["properties"]["probe"]: r["locations"][0]["physicalLocation"]
             for r in sarif["runs"][0]["results"]}
    assert where[AOTI]["artifactLocation"]["uri"] == "mlpkg/models.py"
    assert where[AOTI]["region"]["startLine"] == 15
    lines = annotation_lines(list(findings.values()),
                             states={AOTI: "finding", GEMM: "finding"})
    assert any("file=mlpkg/models.py,line=15" in ln and "export failed" in ln for ln in lines)


def test_summary_markdown_and_page_list_the_findings_in_one_order(tmp_path: Path) -> None:
    """The aoti cell comes first in the report; the lowering finding is more severe (a
    failed check), so every output lists it first: the headless summary, its ungated
    kinds (also the page's header), the markdown table, SARIF."""
    from laya_tui.report.document import cell_lines
    from laya_tui.report.markdown import build_markdown
    from laya_tui.report.verdict import ungated, ungated_text
    from laya_tui.report.views.legend import cell_state

    report = user_report(tmp_path)
    kinds = ungated(report["probes"], report["gates"])
    report["summary"].update({"ungated": {"count": 2, "kinds": kinds}, "probes": 3})
    assert ungated_text(kinds) == "2 findings no gate reads (lowering 1, aoti 1)"
    lines = cell_lines(report["probes"], cell_state)
    assert [ln.split(": ")[1] for ln in lines] == [GEMM, AOTI]
    md = build_markdown(report)
    assert "(lowering 1, aoti 1)" in md
    assert md.index(f"`{GEMM}`") < md.index(f"`{AOTI}`")
    results = build_sarif(report, Sources(str(tmp_path), env={}))["runs"][0]["results"]
    assert [r["properties"]["probe"] for r in results] == [GEMM, AOTI]


def _built_not_run() -> ResultDict:
    """A cuda cell of the user's run on a machine without a GPU: ok, lowered and built."""
    pid = "tilelang/tiled_gemm[cuda,fp16]"
    return partial_result({
        "id": pid, "family": "tilelang", "status": "ok", "reason": None, "seconds": 4.8,
        "log_tail": "", "signals": [
            {"kind": "lowering", "probe": pid, "subject": "tiled_gemm[cuda,fp16]",
             "passed": True, "detail": {"outcome": "built", "not_run": "no GPU"}}]})


def test_a_cells_drill_down_badge_is_its_state_word_on_the_page_and_the_dashboard(
        tmp_path: Path) -> None:
    """The tree says ``◐ built, not run`` and ``✗ finding``; the drill-down said ``ok`` and
    ``failed`` (the raw status)."""
    from collections import Counter

    from rich.console import Console

    from laya_tui.report.views.detail import probe_detail
    from laya_tui.tui.model import ProbeState
    from laya_tui.tui.widgets.detail import render_probe

    cell = _built_not_run()
    finding = partial_result({**user_report(tmp_path)["probes"][2], "log_tail": "",
                              "state": None})
    assert probe_detail(cell, signals=1).head.badge == "built, not run"
    assert probe_detail(finding, signals=1).head.badge == "finding"
    for p, word in ((cell, "built, not run"), (finding, "finding")):
        st = ProbeState(id=p["id"], family=p["family"], status=p["status"],
                        reason=p.get("reason"), seconds=p.get("seconds"), report_entry=p)
        st.kinds = Counter(s["kind"] for s in p["signals"])
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(render_probe(st, None))
        first = console.export_text().splitlines()[0]
        assert first.split()[:len(word.split())] == word.split(), first


def test_the_page_opens_its_probe_and_signal_tables_on_the_findings(tmp_path: Path) -> None:
    """The page's probes and signals tables listed report order: the environment's facts and
    ok cells above the lowering finding. They open most important first now, as the
    dashboard's table, the summary and markdown do; report order is one choice away."""
    import pytest

    from laya_tui.report.html import build_html
    from tests._browser import INSTALL_HINT, Browser, find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    (tmp_path / "ws").mkdir()
    report = user_report(tmp_path / "ws")
    report["probes"].insert(0, _built_not_run())
    env = report["probes"][2]
    env["signals"] = [{"kind": "environment", "probe": env["id"], "subject": "python",
                       "value": "3.11.7"}]
    report["summary"] = cast(SummaryDict, {  # partial: no status, the page does not read it
        "passed": True, "probes": 4, "seconds": 1.0, "signals": {}})
    page = tmp_path / "page.html"
    page.write_text(build_html(report, workspace=str(tmp_path / "ws")))
    with Browser(chromium) as b:
        b.open(page.as_uri())
        probes = b.eval("[...document.querySelectorAll('#probes tbody tr')]"
                        ".map(tr => tr.dataset.probe)")
        assert probes == [GEMM, AOTI, "tilelang/tiled_gemm[cuda,fp16]", "env/python"]
        kinds = b.eval("[...document.querySelectorAll('#signals td[data-col=kind]')]"
                       ".map(td => td.innerText)")
        assert kinds[0] == "lowering" and kinds[-1] == "environment", kinds
        b.eval("(() => { const s = document.querySelector('#signals-sort');"
               " s.value = '@report'; s.dispatchEvent(new Event('change')); })()")
        kinds = b.eval("[...document.querySelectorAll('#signals td[data-col=kind]')]"
                       ".map(td => td.innerText)")
        assert kinds[0] == "lowering" and kinds[1] == "environment", kinds  # report order


def test_a_misspelt_table_key_names_the_key_it_resembles(tmp_path: Path) -> None:
    """``kernel = ["kernels"]`` (the s forgotten): the one-line error says which key was
    meant, not only the list of twenty."""
    import pytest

    from laya_tui.cli.config import load_settings
    from laya_tui.core.errors import UsageError

    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui]\nkernel = ["kernels"]\n')
    with pytest.raises(UsageError) as exc:
        load_settings(str(tmp_path))
    msg = str(exc.value)
    assert "unknown key 'kernel'" in msg and msg.endswith("did you mean 'kernels'?")
    assert "\n" not in msg
    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui]\nzzz = 1\n')
    with pytest.raises(UsageError) as exc:
        load_settings(str(tmp_path))
    assert "did you mean" not in str(exc.value)


def test_the_pages_seconds_of_a_cached_cell_are_not_cut(tmp_path: Path) -> None:
    """A re-run served from the cache showed ``1.9 s ca…`` in the probes table."""
    import pytest

    from laya_tui.report.html import build_html
    from tests._browser import INSTALL_HINT, Browser, find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    report = user_report(tmp_path)
    for p in report["probes"]:
        p.update({"seconds": 1.93, "cached": True})
    report["summary"] = cast(SummaryDict, {  # partial: no status, the page does not read it
        "passed": True, "probes": 3, "seconds": 0.3, "signals": {}})
    page = tmp_path / "page.html"
    page.write_text(build_html(report, workspace=str(tmp_path)))
    with Browser(chromium) as b:
        b.call("Emulation.setDeviceMetricsOverride", session=True, width=1280, height=900,
               deviceScaleFactor=1, mobile=False)
        b.open(page.as_uri())
        cells = b.eval("[...document.querySelectorAll('#probes tbody td.num')]"
                       ".map(td => [td.innerText, td.scrollWidth <= td.clientWidth])")
    assert cells and all("cached" in text or text == "" or text.isdigit()
                         for text, _ in cells), cells
    assert all(fits for _, fits in cells), cells


def test_a_familys_tree_row_counts_its_cells_in_their_own_words() -> None:
    """The tree's ``tilelang  4 · 1 failed`` above ``✗ tiled_gemm[c,fp16]  finding``: the
    family row counts states now, in the cells' words (a probe that raised is not a
    finding)."""
    from laya_tui.tui.model import RunModel
    from laya_tui.tui.widgets.probe_tree import family_label
    from tests.test_tui_model import run

    model = RunModel()
    bad = partial_signal({"kind": "lowering", "subject": "k[c,fp16]", "passed": False,
                          "reason": "no"})  # its probe: the event's
    run(model, "fam/a", [bad], status="failed")
    run(model, "fam/b", [bad], status="failed")
    run(model, "fam/c", [], status="skipped")
    run(model, "fam/d", [])
    assert str(family_label("fam", model)) == "fam  4 · 2 findings · 1 skipped"
    assert str(family_label("fam", model, width=12)) == "fam 4 ✗2 ⊘1"


def test_a_user_models_tolerance_finding_is_at_its_factory(tmp_path: Path) -> None:
    """``--model mlpkg.models:build_drift`` whose bf16 output fails its tolerance: the
    finding had no site, so SARIF kept it as a run-level notification and the annotation had
    no file; it is at the factory's ``def`` in the user's file now."""
    from laya_tui.report.annotations import finding_command

    (tmp_path / "mlpkg").mkdir()
    (tmp_path / "mlpkg" / "__init__.py").write_text("")
    (tmp_path / "mlpkg" / "models.py").write_text(
        "import torch\n\n\ndef build():\n    pass\n\n\ndef build_drift():\n    pass\n")
    pid = "explain/model:mlpkg.models:build_drift[eager]"
    report = partial_report({"schema": "laya-tui.report/5", "probes": [{
        "id": pid, "family": "explain", "status": "failed", "state": "finding",
        "reason": "tolerance bfloat16 vs fp32 cpu output: 0.9085 > limit 0.05",
        "file": "/usr/lib/python3/site-packages/laya_tui/builtin_probes/explain_models.py",
        "signals": [{"kind": "tolerance", "probe": pid,
                     "subject": "bfloat16 vs fp32 cpu output", "value": 0.9085,
                     "limit": 0.05, "passed": False}]}],
        "gates": [{"name": "tolerance", "passed": False,
                   "failures": [{"probe": pid, "subject": "bfloat16 vs fp32 cpu output"}]}],
        "summary": {"passed": False}})
    sources = Sources(str(tmp_path), env={})
    [finding] = collect_findings(report, sources)
    assert finding.location is not None
    assert (finding.location.path, finding.location.line) == ("mlpkg/models.py", 8)
    assert "file=mlpkg/models.py,line=8" in finding_command(finding)
    doc = build_sarif(report, sources)
    [result] = doc["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 8


def test_junit_names_a_failed_tolerance_once() -> None:
    """The message read ``✗ finding: tolerance: tolerance bfloat16 vs fp32 ...``."""
    import xml.etree.ElementTree as ET

    from laya_tui.report.junit import build_junit

    pid = "explain/model:mlpkg.models:build_drift[eager]"
    entry = {"probe": pid, "subject": "bfloat16 vs fp32 cpu output", "value": 0.9085,
             "limit": 0.05}
    report = partial_report({"schema": "laya-tui.report/5", "probes": [{
        "id": pid, "family": "explain", "status": "failed", "state": "finding",
        "reason": "tolerance bfloat16 vs fp32 cpu output: 0.9085 > limit 0.05",
        "seconds": 0.7, "signals": []}],
        "gates": [{"name": "tolerance", "passed": False, "failures": [entry]}],
        "summary": {"passed": False}})
    failure = ET.fromstring(build_junit(report)).find(".//failure")
    assert failure is not None
    message = failure.get("message") or ""
    assert message.startswith("✗ finding: tolerance bfloat16 vs fp32 cpu output: 0.90")
    assert message.endswith("> limit 0.05") and "tolerance: tolerance" not in message
