"""Bad input: one line, exit 2, nothing already written lost."""

from __future__ import annotations

import json
import os

import pytest

from tests._util import WORKSPACES, copy_workspace, run_cli


def _one_line_error(proc):
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("laya-tui: error: ")
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_unknown_flag():
    proc = run_cli("--frobnicate")
    assert proc.returncode == 2
    assert "--frobnicate" in _one_line_error(proc)


def test_missing_probe_path(tmp_path):
    proc = run_cli("--headless", "--probes", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert "probe path does not exist" in _one_line_error(proc)


def test_only_matching_nothing(tmp_path):
    ws = copy_workspace("mixed", tmp_path)
    proc = run_cli("--workspace", str(ws), "--headless", "--only", "nothing/*", cwd=ws)
    assert proc.returncode == 2
    assert "matches no probe" in _one_line_error(proc)


@pytest.mark.parametrize("name,needle", [("broken", "bad_syntax.py:5: SyntaxError"),
                                         ("importerr", "ModuleNotFoundError")])
def test_broken_probe_file_keeps_old_report(tmp_path, name, needle):
    out = tmp_path / "report.json"
    out.write_text('{"keep": true}')
    proc = run_cli("--workspace", str(WORKSPACES / name), "--headless", "--json", str(out),
                   "--cache-dir", str(tmp_path / "c"))
    assert proc.returncode == 2
    assert needle in _one_line_error(proc)
    assert json.loads(out.read_text()) == {"keep": True}


def test_unwritable_output_runs_nothing(tmp_path):
    ws = copy_workspace("mixed", tmp_path)
    proc = run_cli("--workspace", str(ws), "--headless", "--json",
                   str(tmp_path / "no" / "such" / "dir" / "r.json"))
    assert proc.returncode == 2
    assert "does not exist" in _one_line_error(proc)
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "r.json").write_text("old")
    os.chmod(ro / "r.json", 0o444)
    if os.geteuid() != 0:  # root writes anyway
        proc = run_cli("--workspace", str(ws), "--headless", "--json", str(ro / "r.json"))
        assert proc.returncode == 2


def test_bad_timeout_value():
    proc = run_cli("--headless", "--timeout", "soon")
    assert proc.returncode == 2
    _one_line_error(proc)


def test_list_prints_ids_and_runs_nothing(tmp_path):
    ws = copy_workspace("mixed", tmp_path)
    marker = tmp_path / "pid"
    proc = run_cli("--workspace", str(ws), "--list", env={"LAYA_TEST_PIDFILE": str(marker)})
    assert proc.returncode == 0, proc.stderr
    ids = proc.stdout.split()
    assert ids[:2] == ["faults/healthy", "faults/segfault"]
    assert "other/cells[a]" in ids and "other/cells[b]" in ids
    assert not marker.exists()


def test_list_into_a_closed_pipe_is_quiet(tmp_path):
    """`laya-tui --list | head -1`: a reader that stops early is not an internal error."""
    import subprocess
    import sys

    ws = copy_workspace("mixed", tmp_path)
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first id
    try:
        proc = subprocess.run([sys.executable, "-m", "laya_tui", "--workspace", str(ws),
                               "--list"], stdout=w, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(w)
    assert proc.returncode == 141, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def test_json_to_stdout_is_the_only_stdout(tmp_path):
    ws = copy_workspace("mixed", tmp_path)
    proc = run_cli("--workspace", str(ws), "--headless", "--json", "-", "--only", "other/*",
                   "--cache-dir", str(tmp_path / "c"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [p["id"] for p in report["probes"]] == ["other/cells[a]", "other/cells[b]"]
    assert "verdict: PASS" in proc.stderr


def test_only_glob_treats_brackets_literally():
    from laya_tui.core.cellid import matches_any

    assert matches_any("tilelang/gemm_kernel[c,bf16,gpu]", ["tilelang/gemm_kernel[c,bf16,gpu]"])
    assert matches_any("tilelang/gemm_kernel[c,bf16,gpu]", ["tilelang/*[c,*"])
    assert matches_any("tilelang/gemm_kernel[c,bf16,gpu]", ["tilelang"])
    assert not matches_any("tilelang/gemm_kernel[c,bf16,gpu]", ["tilelang/*[cuda,*"])
