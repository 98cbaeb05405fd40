"""Bad inputs (issue 42 item 6): a kernels folder with no kernel file, number flags that are
not finite or out of range, flags and ``[tool.laya-tui]`` alike; each is one line on stderr
and exit 2, before anything runs."""

from __future__ import annotations

import pytest

from tests._ci_reports import ci_workspace, run_ci
from tests._util import run_cli


def _one_line(proc) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("content", [None, b"\x00\x01\x02 junk \xff", b"", b"x = 1\n"])
def test_a_kernels_folder_without_a_kernel_file_is_nothing_to_examine(tmp_path, content):
    kdir = tmp_path / "moved"
    kdir.mkdir()
    if content is not None:
        (kdir / "kernel.py").write_bytes(content)
    (kdir / "__init__.py").write_text("import tilelang\n")  # skipped: not a kernel file
    for flags in (["--headless"], ["--list"], ["--headless", "--json", "-"]):
        proc = run_cli(*flags, "--no-demo", "--kernels", str(kdir), cwd=tmp_path)
        line = _one_line(proc)
        assert f"nothing to examine in kernels folder {kdir}" in line, line
        assert proc.stdout == ""
    # the table's entry too
    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui]\nkernels = ["moved"]\n')
    line = _one_line(run_cli("--headless", cwd=tmp_path))
    assert f"nothing to examine in kernels folder {kdir}" in line


def test_a_junk_kernel_file_is_nothing_to_examine(tmp_path):
    junk = tmp_path / "kernel.py"
    junk.write_bytes(b"\x7fELF\x00\x00garbage")
    line = _one_line(run_cli("--headless", "--no-demo", "--kernels", str(junk), cwd=tmp_path))
    assert f"nothing to examine in {junk}: not a kernel file" in line


def test_a_kernels_folder_with_a_kernel_file_lists_it(tmp_path):
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "mine.py").write_text("import tilelang\n")
    proc = run_cli("--list", "--no-demo", "--kernels", str(tmp_path / "k"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert any("mine" in i for i in proc.stdout.split()), proc.stdout


BAD_FLAGS = [
    (["--timeout", "nan"], "argument --timeout: expected a finite number of seconds"),
    (["--timeout", "inf"], "argument --timeout: expected a finite number of seconds"),
    (["--timeout", "-1"], "argument --timeout: expected a finite number of seconds"),
    (["--timeout", "0"], "argument --timeout: expected a finite number of seconds"),
    (["--timeout", "1e9"], "at most 604800, got '1e9'"),
    (["--timeout", "soon"], "argument --timeout: expected a number of seconds, got 'soon'"),
    (["--jobs", "0"], "argument --jobs: expected a whole number from 1 to 256, got '0'"),
    (["--jobs", "nan"], "argument --jobs: expected a whole number from 1 to 256, got 'nan'"),
    (["--jobs", "1.5"], "argument --jobs: expected a whole number"),
    (["--debounce-ms", "inf"], "argument --debounce-ms: expected a whole number of ms"),
    (["--debounce-ms", "-5"], "argument --debounce-ms: expected a whole number of ms"),
    (["--debounce-ms", "nan"], "argument --debounce-ms: expected a whole number of ms"),
    (["--max", "fallback=nan"], "--max: expected KIND=N with N a whole number >= 0"),
    (["--max", "fallback=-1"], "--max: expected KIND=N with N a whole number >= 0"),
]
#: every mode a number flag reaches: headless, the dashboard (no TTY here: a pty is not
#: needed, the flags are checked before the mode is chosen), watch and --list
MODES = [["--headless"], [], ["--headless", "--watch"], ["--list"]]


@pytest.mark.parametrize("flags,needle", BAD_FLAGS)
def test_number_flags_finite_and_in_range_in_every_mode(tmp_path, flags, needle):
    ws = ci_workspace(tmp_path)
    marker = tmp_path / "ran"
    for mode in MODES:
        proc = run_ci(ws, *mode, *flags, env={"LAYA_CI_RAN": str(marker)})
        line = _one_line(proc)
        assert needle in line, (mode, line)
        assert line.startswith("laya-tui: error:")
    assert not marker.exists()  # nothing ran


@pytest.mark.parametrize("body,needle", [
    ("timeout = nan", "timeout: expected a finite number of seconds above 0"),
    ("timeout = inf", "timeout: expected a finite number of seconds above 0"),
    ("timeout = -inf", "timeout: expected a finite number of seconds above 0"),
    ("timeouts = {env = nan}", "timeouts.env: expected a finite number of seconds"),
    ("timeouts = {env = inf}", "timeouts.env: expected a finite number of seconds"),
    ("jobs = 0", "jobs: expected a whole number from 1 to 256, got 0"),
    ("jobs = 100000", "jobs: expected a whole number from 1 to 256, got 100000"),
    ("tolerance-margin = nan", "tolerance-margin: expected a finite number >= 0"),
    ("tolerance-margin = inf", "tolerance-margin: expected a finite number >= 0"),
])
def test_table_numbers_finite_and_in_range(tmp_path, body, needle):
    ws = ci_workspace(tmp_path, pyproject=f"[tool.laya-tui]\n{body}\n")
    marker = tmp_path / "ran"
    for mode in (["--headless"], ["--list"]):
        line = _one_line(run_ci(ws, *mode, env={"LAYA_CI_RAN": str(marker)}))
        assert needle in line, line
    assert not marker.exists()


def test_good_numbers_still_run(tmp_path):
    ws = ci_workspace(tmp_path)
    proc = run_ci(ws, "--timeout", "30", "--jobs", "1", "--debounce-ms", "0", "--list")
    assert proc.returncode == 0, proc.stderr


def test_each_only_pattern_must_match_a_discovered_cell(tmp_path):
    ws = ci_workspace(tmp_path)
    marker = tmp_path / "ran"
    for mode in (["--list"], ["--headless"], ["--headless", "--json", "-"],
                 ["--headless", "--watch"]):  # a watch would wait on the typo forever
        proc = run_ci(ws, *mode, "--only", "ci/numerics", "--only", "nomatch/*",
                      env={"LAYA_CI_RAN": str(marker)})
        line = _one_line(proc)
        assert "--only 'nomatch/*' matches no probe id (6 discovered" in line, line
        assert "ci/numerics" not in line
    two = _one_line(run_ci(ws, "--list", "--only", "x", "--only", "ci/numerics",
                           "--only", "y*"))
    assert "--only 'x', 'y*' each match no probe id" in two
    assert not marker.exists()


def test_only_is_checked_before_the_shard_split(tmp_path):
    ws = ci_workspace(tmp_path)
    ids: list[str] = []
    for k in (1, 2):  # one pattern per cell: each shard holds only some of them
        proc = run_ci(ws, "--list", "--shard", f"{k}/2", "--only", "ci/numerics",
                      "--only", "ci/llama_forward")
        assert proc.returncode == 0, proc.stderr
        ids += proc.stdout.split()
    assert sorted(ids) == ["ci/llama_forward", "ci/numerics"]
    # a pattern matching nothing anywhere is still an error under --shard
    proc = run_ci(ws, "--list", "--shard", "1/2", "--only", "ci/numerics", "--only", "ci/nope")
    assert "--only 'ci/nope' matches no probe id" in _one_line(proc)


def test_the_readmes_only_examples_select_cells():
    """The README's and docs' CI jobs (cpu shards and the gpu job) run on this repository:
    each of their --only patterns matches a cell here, so none of them is now an error."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme = "".join(p.read_text() for p in [root / "README.md", *sorted(root.glob("docs/*.md"))])
    pats = re.findall(r"--only '([^']+)'", readme)
    assert len(pats) >= 10
    proc = run_cli("--list", *[a for p in pats for a in ("--only", p)], cwd=root)
    assert proc.returncode == 0, proc.stderr


def test_table_max_counts_must_be_whole_numbers(tmp_path):
    ws = ci_workspace(tmp_path, pyproject="[tool.laya-tui]\nmax = {fallback = nan}\n")
    assert "max.fallback: expected a whole number >= 0, got nan" in _one_line(
        run_ci(ws, "--list"))


def test_a_durations_report_with_nan_seconds_is_not_a_split_of_nan(tmp_path):
    """An older report may hold NaN/Infinity seconds (it was not strict JSON): those cells
    have no duration, and the shards still split every cell between them."""
    import json

    ws = ci_workspace(tmp_path)
    report = tmp_path / "old.json"
    assert run_ci(ws, "--json", str(report)).returncode in (0, 1)
    doc = json.loads(report.read_text())
    for i, p in enumerate(doc["probes"]):
        p["seconds"] = [float("nan"), float("inf")][i % 2]
    report.write_text(json.dumps(doc))  # NaN / Infinity as Python writes them
    assert "NaN" in report.read_text()
    ids: list[str] = []
    for k in (1, 2):
        proc = run_ci(ws, "--list", "--shard", f"{k}/2", "--durations", str(report))
        assert proc.returncode == 0, proc.stderr
        ids += proc.stdout.split()
    assert sorted(ids) == sorted(p["id"] for p in doc["probes"])


def test_a_default_kernels_folder_of_helpers_is_no_subject(tmp_path):
    """./kernels holding only helpers (no kernel file) examines nothing: with nothing else
    configured the run is 'nothing to examine', not a green run of the env probes."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "sizes.py").write_text("HIDDEN = 32\n")
    proc = run_cli("--headless", cwd=tmp_path)
    assert proc.returncode == 2 and f"nothing to examine in {tmp_path}" in proc.stderr


def test_two_probe_files_defining_the_same_cells_are_one_clear_error(tmp_path):
    """A copy of a probe file passed beside the original (the demo's tilelang_matrix.py
    handed again with --probes) would give every cell twice under one id: a report's ids
    name one cell each, so discovery says which files clash and runs nothing."""
    probes = tmp_path / "probes"
    probes.mkdir()
    body = ("from laya_tui import probe\n\n\n@probe(family='dup')\n"
            "def twice(ctx):\n    pass\n")
    (probes / "a.py").write_text(body)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "a.py").write_text(body)
    for mode in (["--list"], ["--headless"]):
        line = _one_line(run_cli(*mode, "--no-demo", "--probes", str(probes), "--probes",
                                 str(copy), cwd=tmp_path))
        assert f"{copy / 'a.py'}: defines 1 cell id(s) that {probes / 'a.py'} defines too" \
            in line, line
    proc = run_cli("--list", "--no-demo", "--probes", str(probes), cwd=tmp_path)
    assert proc.returncode == 0 and "dup/twice" in proc.stdout, proc.stderr
