"""Artifacts per workspace (issue 41): two projects with a same-named kernel, run at once
without --out, each get their own repro.py and generated source, naming their own file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from laya_tui.core.files import artifact_dir

ROOT = Path(__file__).resolve().parents[1]
WIDEN = ROOT / "tests" / "fixtures" / "labels" / "widen_half.py"


def test_artifact_dir_is_per_workspace_unless_out_is_given(tmp_path: Path) -> None:
    a = artifact_dir({"workspace": str(tmp_path / "a")}, "tilelang")
    b = artifact_dir({"workspace": str(tmp_path / "b")}, "tilelang")
    assert a != b and a.endswith("tilelang") and b.endswith("tilelang")
    assert artifact_dir({"workspace": str(tmp_path / "a"), "out": str(tmp_path / "o")},
                        "aoti") == str(tmp_path / "o" / "aoti")


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="no C++ compiler")
def test_two_workspaces_with_a_same_named_kernel_run_at_once(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "PYTHONPATH": str(ROOT)}
    procs, reports = [], []
    for name in ("one", "two"):
        ws = tmp_path / name
        (ws / "kernels").mkdir(parents=True)
        (ws / "kernels" / "widen_half.py").write_text(
            f"# project {name}\n" + WIDEN.read_text())
        report = ws / "r.json"
        reports.append((ws, report))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "laya_tui", "--headless", "--no-cache", "--no-demo",
             "--only", "tilelang/widen_half*", "--kernels", str(ws / "kernels"),
             "--json", str(report)], cwd=ws, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    for p in procs:
        p.communicate(timeout=600)
    paths: list[set[str]] = []
    for ws, report in reports:
        probe = next(p for p in json.loads(report.read_text())["probes"]
                     if p["id"] == "tilelang/widen_half[c,fp16-fp32]")
        (low,) = [s for s in probe["signals"] if s["kind"] == "lowering"]
        repro = Path(low["detail"]["repro"])
        own = str(ws / "kernels" / "widen_half.py")
        assert repr(os.path.realpath(own)) in repro.read_text()  # its own kernel file
        sources = [s["detail"]["path"] if "path" in s.get("detail", {}) else s.get("path")
                   for s in probe["signals"] if s["kind"] == "artifact"]
        paths.append({str(repro), low["detail"]["wrapped_source"], *filter(None, sources)})
    assert not paths[0] & paths[1]  # nothing shared between the two projects


HOLD = ("import sys, time; from laya_tui.core.files import run_slot; "
        "print(run_slot(sys.argv[1]), flush=True); time.sleep(float(sys.argv[2]))")


def test_overlapping_runs_of_one_workspace_take_separate_slots(tmp_path: Path) -> None:
    """A live process holds its slot; a second one takes the next; once both end, a later
    process reuses slot-0 (its files overwritten in place, none deleted)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), "30"], env=env,
                             stdout=subprocess.PIPE, text=True)
    assert first.stdout is not None
    assert first.stdout.readline().strip() == "slot-0"
    second = subprocess.run([sys.executable, "-c", HOLD, str(tmp_path), "0"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert second.stdout.strip() == "slot-1"
    first.kill()
    first.wait()
    third = subprocess.run([sys.executable, "-c", HOLD, str(tmp_path), "0"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert third.stdout.strip() == "slot-0"
