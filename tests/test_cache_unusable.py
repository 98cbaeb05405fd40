"""A cache that cannot be used says once why it is skipped, and the run goes on (issue 42
item 6: it was skipped without a word)."""

from __future__ import annotations

import os

import pytest

from laya_tui.core.cache import ResultCache, cache_problem
from tests._ci_reports import ci_workspace, run_ci
from tests._signals import partial_result
from tests._util import copy_workspace, run_cli

RESULT = partial_result({"status": "ok", "signals": [], "seconds": 0.1})


def _cache_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("laya-tui: cache")]


def test_a_cache_dir_that_is_a_file_is_said_once_and_the_run_goes_on(tmp_path):
    ws = ci_workspace(tmp_path)
    blocker = tmp_path / "cachefile"
    blocker.write_text("not a folder")
    proc = run_ci(ws, "--cache-dir", str(blocker), "--json", str(tmp_path / "r.json"))
    assert proc.returncode in (0, 1), proc.stderr
    lines = _cache_lines(proc.stderr)
    assert lines == [f"laya-tui: cache {blocker} skipped (it is a file, not a folder): every "
                     "cell runs, nothing is cached"], proc.stderr
    assert (tmp_path / "r.json").is_file() and "6 probes" in proc.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any folder")
def test_a_read_only_cache_folder_is_said_once(tmp_path):
    ws = ci_workspace(tmp_path)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        proc = run_ci(ws, "--cache-dir", str(ro / "c"))
    finally:
        ro.chmod(0o755)
    assert proc.returncode in (0, 1), proc.stderr
    assert len(_cache_lines(proc.stderr)) == 1 and "skipped (Permission denied)" in proc.stderr


CELLS = ("--only", "faults/healthy", "--only", "faults/garbage_stdout")


def _run_cached(ws, cache):
    return run_cli("--workspace", str(ws), "--headless", "-q", "--cache-dir", str(cache),
                   *CELLS, cwd=ws, timeout=120)


def test_corrupt_cache_files_are_said_once_and_their_cells_run_again(tmp_path):
    ws = copy_workspace("mixed", tmp_path)
    cache = tmp_path / "cache"
    first = _run_cached(ws, cache)
    assert first.returncode == 0 and not _cache_lines(first.stderr), first.stderr
    entries = [p for p in cache.glob("*.json") if '"key"' in p.read_text()]
    assert len(entries) == 2
    for p in entries:
        p.write_bytes(b"\x00garbage{")
    proc = _run_cached(ws, cache)
    lines = _cache_lines(proc.stderr)
    assert len(lines) == 1 and "is corrupt" in lines[0] and "runs again" in lines[0], lines
    assert "(0 cached)" in proc.stderr  # both cells ran again ...
    again = _run_cached(ws, cache)  # ... and their fresh results replaced the corrupt files
    assert not _cache_lines(again.stderr) and "(2 cached)" in again.stderr, again.stderr


def test_the_cache_object_says_each_cause_once(tmp_path):
    heard: list[str] = []
    blocker = tmp_path / "f"
    blocker.write_text("x")
    assert cache_problem(blocker) == "it is a file, not a folder"
    assert cache_problem(tmp_path / "new" / "dir") is None  # made on the way
    bad = ResultCache(blocker, note=heard.append)
    for _ in range(3):
        assert bad.lookup("a/b", None, {}, {}) is None
        bad.store("a/b", None, {}, {}, [], RESULT)
    assert len(heard) == 1 and "skipped (it is a file, not a folder)" in heard[0]

    heard.clear()
    good = ResultCache(tmp_path / "c", note=heard.append)
    good.store("a/b", None, {}, {}, [], RESULT)
    assert good.lookup("a/b", None, {}, {}) == RESULT and heard == []
    good._path("a/b").write_text('{"id": "a/b", "key": 7}')  # JSON, not an entry
    good._path("a/c").write_text("[1, 2")
    assert good.lookup("a/b", None, {}, {}) is None
    assert good.lookup("a/c", None, {}, {}) is None
    assert len(heard) == 1 and "is corrupt (not a cache entry)" in heard[0]
