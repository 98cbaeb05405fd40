"""report/5: the ``node`` a ``--cluster`` cell ran on (issue 47), written, validated, shown
in the drill-down and kept by the dashboard's snapshot; a saved report/4
(``tests/fixtures/report_v4``, written before the field) still reads. No Ray needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from laya_tui.core.report_types import NodeDict, ResultDict
from laya_tui.core.results import ProbeResult, make_result
from laya_tui.core.signals import READABLE_SCHEMAS, SCHEMA_ID
from laya_tui.report.document import build_report, validate_report
from laya_tui.report.views.detail import Facts, probe_detail
from laya_tui.report.views.nodes import node_line, node_rows

V4 = Path(__file__).resolve().parent / "fixtures" / "report_v4" / "report.json"

NODE: NodeDict = {"id": "c9d0bff2" + "0" * 48, "host": "gpu-box",
        "resources": {"CPU": 8.0, "GPU": 1.0},
        "versions": {"python": "3.11.7", "torch": "2.13.0", "numpy": "2.4.6",
                     "laya-tui": "0.1.0", "mlx": None}}


def cluster_result() -> ResultDict:
    probe = {"id": "gpu/gpu[x]", "family": "gpu", "params": {"device": "GPU"}, "file": None}
    result = make_result(probe, "ok", None, seconds=0.5, deps=[], signals=[], log_tail="")
    result["node"] = NODE
    return result


def facts(detail: Any) -> dict[str, str]:
    return {k: v for s in detail.sections if isinstance(s, Facts) for k, v in s.rows}


def test_the_fixture_is_report_4_without_the_field_and_still_reads():
    from laya_tui.cli.show import early_check
    from laya_tui.report.baseline import compare, load_baseline
    from laya_tui.report.saved import durations_from_report, load_saved_report

    doc = json.loads(V4.read_text())
    assert doc["schema"] == "laya-tui.report/4" != SCHEMA_ID == "laya-tui.report/5"
    assert "laya-tui.report/4" in READABLE_SCHEMAS
    assert all("node" not in p for p in doc["probes"])
    early_check(str(V4))  # show opens it
    saved = load_saved_report(str(V4))
    assert [p["id"] for p in saved["probes"]] == [p["id"] for p in doc["probes"]]
    base = load_baseline(str(V4))
    section = compare(base, doc["probes"])
    assert section["regressions"] == [] and section["probes"]["compared"] == 5
    assert set(durations_from_report(str(V4))) == {p["id"] for p in doc["probes"]}
    # its cells read as local ones: no node line in their drill-down
    assert "node" not in facts(probe_detail(doc["probes"][0], signals=1))
    # and a report/5 of the same cells validates with or without nodes
    validate_report(build_report(doc["probes"], seconds=1.0, gates=[]))


def test_a_cluster_result_writes_and_validates_its_node():
    report = build_report([cluster_result()], seconds=1.0, gates=[])
    validate_report(report)
    assert report["schema"] == "laya-tui.report/5"
    assert report["probes"][0]["node"]["host"] == "gpu-box"
    bad = json.loads(json.dumps(report))
    del bad["probes"][0]["node"]["host"]
    with pytest.raises(jsonschema.ValidationError):
        validate_report(bad)


def test_the_drill_down_names_the_node():
    line = node_line(NODE)
    assert line == ("gpu-box (c9d0bff2) · CPU 8, GPU 1 · python 3.11.7, torch 2.13.0, "
                    "laya-tui 0.1.0")
    assert facts(probe_detail(cluster_result(), signals=0))["node"] == line
    assert node_line(None) is None and node_line({"host": "x"}) is None


def test_the_dashboards_snapshot_keeps_the_node():
    frozen = ProbeResult.from_dict(cluster_result())
    assert frozen.node == NODE
    assert frozen.to_dict()["node"] == NODE
    assert "node" not in ProbeResult.from_dict(json.loads(V4.read_text())["probes"][0]).to_dict()


def test_the_nodes_side_by_side_mark_what_differs():
    other = dict(NODE, id="0c144f02" + "1" * 48, host="cpu-box", resources={"CPU": 2.0},
                 versions=dict(NODE["versions"], torch=None))
    results = [dict(cluster_result(), id=f"c{i}", node=n)
               for i, n in enumerate((NODE, other, NODE))]
    results.append(dict(cluster_result(), id="local"))
    del results[-1]["node"]
    names, rows = node_rows(results)
    assert names == ["gpu-box (c9d0bff2)", "cpu-box (0c144f02)"]
    by = {what: (vals, differs) for what, vals, differs in rows}
    assert by["cells"] == (["2", "1"], False)
    assert by["resources"] == (["CPU 8, GPU 1", "CPU 2"], False)
    assert by["torch"] == (["2.13.0", "-"], True)
    assert by["python"] == (["3.11.7", "3.11.7"], False)
    assert [what for what, _, _ in rows][:4] == ["cells", "resources", "python", "torch"]
    assert node_rows([dict(cluster_result(), node=None)]) == ([], [])
