"""Per-cell TORCH_TRACE slices: two cells run one after the other in one (warm) process each
get their own log, headed so it reads alone; what it holds is what TORCH_LOGS printed for
that cell; tlparse reads it (skipped with the install hint when tlparse is not installed);
a real explain cell run by laya-tui links both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from laya_tui.core.protocol import SignalEvent
from laya_tui.core.tracelog import trace_files
from laya_tui.families.torch_trace_capture import TLPARSE_HINT, tlparse_command
from laya_tui.report.document import validate_report
from laya_tui.report.trace_import import trace_report
from tests._signals import detail_of, site_of
from tests._torch_trace import torch_env, torch_logs_graph_breaks, torch_logs_recompiles
from tests._util import REPO, run_cli

pytestmark = pytest.mark.timeout(900)

#: Two explain cells and one env cell in one process, as a warm worker runs them.
CELLS = '''\
import json
import sys

import torch

from laya_tui.api import Context
from laya_tui.families.torch_trace_capture import cell_trace


def f(x):
    y = x.sin()
    if y.sum() > 0:  # graph break
        y = y * 2
    return y.cos()


def g(x):
    return x.cos() + 1


events = []
for cell, family, fn in (("explain/one", "explain", f), ("explain/two", "explain", g),
                         ("env/three", "env", g)):
    print(f"=== cell {cell}", file=sys.stderr, flush=True)
    ctx = Context(cell, family, events.append, opts={"out": sys.argv[1]})
    torch._dynamo.reset()
    with cell_trace(ctx):
        c = torch.compile(fn, backend="eager", dynamic=False)
        c(torch.ones(4))
        c(torch.ones(8))
print(json.dumps(events))
'''


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cells")
    script = folder / "cells.py"
    script.write_text(CELLS)
    env = torch_env(TORCH_LOGS="graph_breaks,recompiles",
                    PYTHONPATH=os.pathsep.join(p for p in (str(REPO),
                                                           os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, str(script), str(folder / "out")], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = json.loads(proc.stdout.strip().splitlines()[-1])
    logs = {}
    for chunk in proc.stderr.split("=== cell ")[1:]:
        name, _, text = chunk.partition("\n")
        logs[name.strip()] = text
    sigs: dict[str, list[dict]] = {}
    for e in events:
        sigs.setdefault(e["probe"], []).append(e["signal"])
    return {"script": str(script), "signals": sigs, "torch_logs": logs}


def _artifact(sigs, subject):
    return next((s for s in sigs if s["kind"] == "artifact" and s["subject"] == subject), None)


def test_each_cell_gets_its_own_slice_and_reads_alone(cells):
    one, two = cells["signals"]["explain/one"], cells["signals"]["explain/two"]
    assert "env/three" not in cells["signals"]  # other families: no slice
    log_one, log_two = (_artifact(one, "torch trace"), _artifact(two, "torch trace"))
    assert Path(log_one["detail"]["path"]).parent != Path(log_two["detail"]["path"]).parent
    assert trace_files(str(Path(log_one["detail"]["path"]).parent)) == [
        log_one["detail"]["path"]]
    rep_one = trace_report(log_one["detail"]["path"])
    rep_two = trace_report(log_two["detail"]["path"])
    validate_report(rep_one)
    validate_report(rep_two)
    funcs_two = {p["params"]["frame"].split(" ")[0] for p in rep_two["probes"]
                 if "/frame" in p["id"]}
    assert funcs_two == {"g"}  # nothing of cell one in cell two's slice
    # g's file was interned while cell one ran; cell two's slice names it anyway
    for p in rep_two["probes"]:
        for s in p["signals"]:
            called = (s.get("detail") or {}).get("called_from")
            if called:
                assert called["file"] == cells["script"]
    assert log_two["detail"]["compiles"] == 2 and log_two["detail"]["graph_breaks"] == 0
    assert log_one["detail"]["open"].startswith("laya-tui show ")


def test_a_slice_holds_what_torch_logs_printed_for_that_cell(cells):
    for cell in ("explain/one", "explain/two"):
        text = cells["torch_logs"][cell]
        at, _ = torch_logs_graph_breaks(text)
        logged = torch_logs_recompiles(text)
        art = _artifact(cells["signals"][cell], "torch trace")
        report = trace_report(art["detail"]["path"])
        breaks = [s for p in report["probes"] for s in p["signals"]
                  if s.get("subject") == "graph break"]
        assert all(s["count"] is not None for s in breaks)
        assert sum(s["count"] or 0 for s in breaks) == sum(at.values()) == \
            art["detail"]["graph_breaks"]
        assert {(site_of(s)["file"], site_of(s)["line"]) for s in breaks} == set(at)
        recs = [s for p in report["probes"] for s in p["signals"] if s["kind"] == "recompile"]
        assert len(recs) == len(logged) == art["detail"]["recompiles"]
        assert sorted(str(s["reason"]) for s in recs) == sorted(
            r["guards"][0].partition(": ")[2] for r in logged)


def test_tlparse_reads_the_slice(cells):
    if tlparse_command() is None:
        pytest.skip(f"tlparse is not installed: {TLPARSE_HINT}")
    one = cells["signals"]["explain/one"]
    page = _artifact(one, "tlparse page")
    assert page is not None, _artifact(one, "torch trace")["detail"]["tlparse"]
    index = Path(page["detail"]["path"])
    assert index.is_file() and index.name == "index.html"
    listing = json.loads((index.parent / "compile_directory.json").read_text())
    report = trace_report(page["detail"]["log"])
    ids = {detail_of(s)["compile_id"] for p in report["probes"] for s in p["signals"]
           if s["kind"] in ("compile", "recompile")}
    # tlparse lists each compile as "[frame/compile]" (plus "[-/-]": records of none)
    tl_ids = {k.strip("[]").split("_")[0] for k in listing} - {"-/-"}
    assert ids == tl_ids
    assert "failures_and_restarts.html" in os.listdir(index.parent)


@pytest.mark.slow
def test_a_real_explain_cell_links_its_trace_and_its_tlparse_page(tmp_path):
    pytest.importorskip("torch", reason="torch not installed: pip install 'laya-tui[torch]'")
    (tmp_path / "tinymod.py").write_text(
        "import torch\n\n\nclass Tiny(torch.nn.Module):\n    def forward(self, x):\n"
        "        y = x.sin()\n        if y.sum() > 0:  # graph break\n            y = y * 2\n"
        "        return y.relu()\n\n\ndef factory():\n"
        "    return Tiny(), [(torch.ones(2, 8),), (torch.ones(3, 8),)]\n")
    env = torch_env(PYTHONPATH=str(tmp_path))
    env.pop("LAYA_TUI_CELL_TRACE", None)
    out = run_cli("--headless", "--model", "tinymod:factory", "--only",
                  "explain/model:*[compile]", "--json", str(tmp_path / "r.json"), "--out",
                  str(tmp_path / "out"), "--no-cache", "--workspace", str(tmp_path),
                  cwd=tmp_path, env=env, timeout=800)
    assert out.returncode == 0, out.stderr[-3000:]
    (cell,) = json.loads((tmp_path / "r.json").read_text())["probes"]
    art = _artifact(cell["signals"], "torch trace")
    assert art is not None and Path(art["detail"]["path"]).is_file()
    assert Path(art["detail"]["path"]).is_relative_to(tmp_path / "out" / "torch_trace")
    explain_recompiles = sum(s.get("count", 1) for s in cell["signals"]
                             if s["kind"] == "recompile")
    assert art["detail"]["recompiles"] == explain_recompiles > 0
    report = trace_report(art["detail"]["path"])
    assert all(s["count"] is not None for p in report["probes"] for s in p["signals"]
               if s["kind"] == "recompile")
    assert sum(s["count"] or 0 for p in report["probes"] for s in p["signals"]
               if s["kind"] == "recompile") == explain_recompiles
    if tlparse_command() is not None:
        page = _artifact(cell["signals"], "tlparse page")
        assert page is not None and Path(page["detail"]["path"]).is_file()
    else:
        assert TLPARSE_HINT in art["detail"]["tlparse"]


def test_a_rerun_replaces_the_cells_last_slice_and_a_cell_that_traced_nothing_leaves_none(
        tmp_path):
    from laya_tui.api import Context
    from laya_tui.families.torch_trace_capture import LOG_PREFIX, cell_folder, cell_trace

    opts = {"out": str(tmp_path)}
    folder = Path(cell_folder(opts, "explain/x[a,b]"))
    (folder / "tlparse").mkdir(parents=True)
    (folder / f"{LOG_PREFIX}old.log").write_text("V1201 00:00:00.000000 1 x.py:1] {}\n")
    (folder / "notes.txt").write_text("kept")
    events: list[SignalEvent] = []
    with cell_trace(Context("explain/x[a,b]", "explain", events.append, opts=opts)):
        pass  # nothing compiled: no record, no log, no signal
    assert sorted(os.listdir(folder)) == ["notes.txt"] and events == []
    assert folder.parent == tmp_path / "torch_trace"
    assert folder.name.startswith("explain_x_a_b-")
