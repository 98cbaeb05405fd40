"""Outputs are checked before the first probe runs, and written all or none (issue 28):
``/proc/x.json`` and friends exit 2 at once, nothing runs, nothing already there changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from laya_tui.core.errors import UsageError
from laya_tui.core.files import check_output_dir, check_output_path
from tests._ci_reports import ci_workspace, real_report, run_ci, set_scenario
from tests._util import run_cli

NO_FILE_HERE = "/proc/laya-x"  # /proc takes no new file, even for root


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return ci_workspace(tmp_path_factory.mktemp("outputs"))


def test_proc_and_missing_folders_fail_the_check(tmp_path):
    for path in (f"{NO_FILE_HERE}.json", "/no/such/dir/x.json"):
        with pytest.raises(UsageError, match=f"cannot write --html {path}: "):
            check_output_path(path, "--html")
    with pytest.raises(UsageError, match="it is a folder"):
        check_output_path(str(tmp_path), "--json")
    check_output_path(str(tmp_path / "ok.json"), "--json")  # fine, and leaves nothing
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UsageError, match="cannot write --out /proc/laya-x/artifacts"):
        check_output_dir(f"{NO_FILE_HERE}/artifacts", "--out")
    check_output_dir(str(tmp_path / "a" / "b"), "--out")  # made on demand: its parent counts
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag", ["--json", "--junit", "--markdown", "--html", "--trace"])
def test_an_unwritable_output_exits_2_before_any_probe(ws, tmp_path, flag):
    set_scenario(ws, {})
    marker = tmp_path / "ran"
    path = f"{NO_FILE_HERE}{flag.replace('--', '.')}"
    proc = run_ci(ws, flag, path, env={"LAYA_CI_RAN": str(marker)})
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"cannot write {flag} {path}: " in lines[0], proc.stderr
    assert not marker.exists()  # no probe ran


def test_out_folder_is_checked_too(ws, tmp_path):
    marker = tmp_path / "ran"
    proc = run_ci(ws, "--out", f"{NO_FILE_HERE}/art", env={"LAYA_CI_RAN": str(marker)})
    assert proc.returncode == 2 and "cannot write --out" in proc.stderr
    assert not marker.exists()


def test_a_good_json_is_not_overwritten_when_another_output_cannot_be_written(ws, tmp_path):
    good = tmp_path / "good.json"
    good.write_text('{"old": true}\n')
    proc = run_ci(ws, "--json", str(good), "--html", f"{NO_FILE_HERE}.html")
    assert proc.returncode == 2, proc.stderr
    assert good.read_text() == '{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.json"]  # no temporary left


def test_write_all_is_all_or_nothing(tmp_path):
    from laya_tui.report.outputs import OutputError, write_all

    a, b = tmp_path / "a.json", tmp_path / "gone" / "b.xml"
    a.write_text("before")
    with pytest.raises(OutputError, match=r"cannot write --junit .*b.xml: .*no output was "
                                          "written"):
        write_all([("--json", str(a), lambda: "after"), ("--junit", str(b), lambda: "x")])
    assert a.read_text() == "before" and os.listdir(tmp_path) == ["a.json"]
    write_all([("--json", str(a), lambda: iter(["af", "ter"]))])
    assert a.read_text() == "after"


def test_merge_diff_and_show_check_their_outputs_first(ws, tmp_path):
    report = tmp_path / "r.json"
    set_scenario(ws, {})
    real_report(ws, report)
    before = report.read_text()
    for argv, flag in ((["merge", str(report), "--json", f"{NO_FILE_HERE}.json"], "--json"),
                       (["merge", str(report), "--json", str(report),
                         "--html", f"{NO_FILE_HERE}.html"], "--html"),
                       (["diff", str(report), str(report), "--json", f"{NO_FILE_HERE}.json"],
                        "--json"),
                       (["show", str(report), "--trace", f"{NO_FILE_HERE}.trace"], "--trace")):
        proc = run_cli(*argv, cwd=tmp_path)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert f"cannot write {flag} " in proc.stderr and "Traceback" not in proc.stderr
    assert report.read_text() == before  # the merge's good --json was not written either


def test_the_run_says_where_its_files_went(ws, tmp_path):
    set_scenario(ws, {})
    out, junit = tmp_path / "r.json", tmp_path / "j.xml"
    proc = run_ci(ws, "--json", str(out), "--junit", str(junit))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1] == f"  wrote --json {out}, --junit {junit}"
    assert json.loads(out.read_text())["summary"]["passed"] is True
    assert Path(junit).read_text().startswith("<?xml")
