"""``--env NAME=PYTHON``: the same cells under several real interpreters.

The second environment is a real venv built once into a cache folder (tests/_envs.py): a
bare one (standard library only) beside this test interpreter, whose libraries differ.
What each worker reports about itself (``sys.executable``, ``sys.prefix``, the versions
``importlib.metadata`` gives inside it) is checked against the environment it was meant
to run in; the TileLang seed case (0.1.14 vs 0.1.15) is in test_env_tilelang.py.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from laya_tui.core.envs import MIN_PYTHON, inspect_env
from laya_tui.core.errors import UsageError
from laya_tui.report.document import validate_report
from tests._envs import bare_env, workspace
from tests._util import REPO, run_cli


@pytest.fixture(scope="session")
def bare() -> str:
    return bare_env()


def _run(ws: Path, *args: str) -> tuple[int, dict, str]:
    out = ws / "report.json"
    proc = run_cli("--headless", "--workspace", str(ws), "--json", str(out),
                   "--cache-dir", str(ws.parent / "cache"), *args, cwd=ws, timeout=240)
    report = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, report, proc.stderr


def _signal(probe: dict, subject: str):
    return next((s.get("value") for s in probe["signals"] if s.get("subject") == subject), None)


def test_every_cell_runs_once_per_environment_in_its_interpreter(tmp_path, bare):
    ws = workspace(tmp_path)
    rc, report, err = _run(ws, "--env", f"bare={bare}", "--env", f"main={sys.executable}",
                           "--no-cache", "--markdown", str(ws / "r.md"), "--html",
                           str(ws / "r.html"))
    assert rc == 0, err
    validate_report(report)
    by_id = {p["id"]: p for p in report["probes"]}
    assert sorted(by_id) == ["where/where[a]@bare", "where/where[a]@main",
                             "where/where[b]@bare", "where/where[b]@main"]
    for pid, p in by_id.items():
        env = pid.rpartition("@")[2]
        assert p["env"] == env
        python = bare if env == "bare" else sys.executable
        # the worker itself says which interpreter it is, and that it runs this laya_tui
        assert _signal(p, "executable") == python
        prefix = next(s for s in p["signals"] if s["subject"] == "executable")["detail"]["prefix"]
        assert os.path.samefile(prefix, os.path.dirname(os.path.dirname(python)))
        assert os.path.samefile(_signal(p, "laya_tui"), REPO / "laya_tui")
        assert all(s["probe"] == pid for s in p["signals"])  # signals carry the full id
    # versions per environment, as importlib.metadata gives them inside each interpreter
    envs = report["envs"]
    assert envs["main"]["versions"]["torch"] == metadata.version("torch")
    assert envs["bare"]["versions"]["torch"] is None
    assert envs["bare"]["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert set(envs["bare"]["compilers"]) == {"cc", "c++", "nvcc"}
    # the comparison: the reference (first) is bare; in main, torch is there
    section = report["env_comparison"]
    assert section["base"] == "bare" and section["envs"] == ["bare", "main"]
    cand = section["candidates"][0]
    assert cand["env"] == "main" and cand["versions"]["torch"] == {
        "before": None, "after": metadata.version("torch")}
    assert sorted(i["probe"] for i in cand["statuses"]) == ["where/where[a]", "where/where[b]"]
    diag = {i["probe"]: i for i in cand["diagnostics"]}
    assert diag["where/where[a]"]["before"] == {
        "status": "failed", "reason": "lowering torch: torch is not installed in <env>"}
    assert diag["where/where[a]"]["after"] == {"status": "ok", "reason": None}
    assert sorted(i["change"] for i in cand["improvements"]) == [
        "now-passing", "now-passing", "status", "status"]
    # signals added: the fallbacks only main's cells reach (bare stops before them)
    assert [(i["change"], i["kind"], i["subject"]) for i in cand["regressions"]] == [
        ("new", "fallback", "op-1"), ("new", "fallback", "op-1")]
    # shown: stderr, markdown, HTML
    assert "environments @main vs @bare: 2 regression(s), 4 improvement(s), 2 status" in err
    md = (ws / "r.md").read_text()
    assert "### Environments: @bare vs @main" in md and "| torch | **n/a** |" in md
    page = (ws / "r.html").read_text()
    assert '<section id="envs"' in page and "where/where[a]" in page


def test_artifacts_and_options_are_per_environment(tmp_path, bare):
    ws = workspace(tmp_path)
    rc, report, err = _run(ws, "--env", f"bare={bare}", "--env", f"main={sys.executable}",
                           "--no-cache", "--only", "where/where[a]", "--out", str(ws / "out"))
    assert rc == 0, err
    assert sorted(p["id"] for p in report["probes"]) == ["where/where[a]@bare",
                                                          "where/where[a]@main"]
    for p in report["probes"]:
        opts = json.loads(_signal(p, "out"))
        assert opts["env"] == p["env"]
        from laya_tui.core.files import artifact_dir

        assert artifact_dir(opts, "tilelang") == str(ws / "out" / f"@{p['env']}" / "tilelang")


def test_worse_candidate_fails_the_env_change_gate(tmp_path, bare):
    ws = workspace(tmp_path)
    rc, report, err = _run(ws, "--env", f"main={sys.executable}", "--env", f"bare={bare}",
                           "--no-cache", "--fail-on-env-change")
    assert rc == 1, err
    gate = next(g for g in report["gates"] if g["name"] == "env-change")
    assert not gate["passed"]
    assert sorted(f["probe"] for f in gate["failures"]) == [
        "where/where[a]@bare", "where/where[a]@bare", "where/where[b]@bare",
        "where/where[b]@bare"]  # each cell: no longer ok, and its lowering check now fails
    assert any("was ok, now failed" in f["message"] for f in gate["failures"])
    # the same interpreter twice: no difference at all (timing aside), the gate holds
    rc, report, err = _run(ws, "--env", f"main={sys.executable}", "--env",
                           f"again={sys.executable}", "--fail-on-env-change")
    assert rc == 0, err
    assert next(g for g in report["gates"] if g["name"] == "env-change")["passed"]
    cand = report["env_comparison"]["candidates"][0]
    assert [cand[k] for k in ("regressions", "improvements", "notes", "statuses",
                              "diagnostics", "tolerance")] == [[]] * 6
    assert cand["versions"] == {} and cand["probes"]["compared"] == 2


def test_the_cache_keys_on_the_environment(tmp_path, bare):
    ws = workspace(tmp_path)
    rc, first, err = _run(ws, "--env", f"bare={bare}", "--env", f"main={sys.executable}")
    assert rc == 0 and first["summary"]["cached"] == 0, err
    rc, again, err = _run(ws, "--env", f"bare={bare}", "--env", f"main={sys.executable}")
    assert rc == 0 and again["summary"]["cached"] == 4, err
    # the same name on another interpreter is another environment: nothing is served
    rc, swapped, err = _run(ws, "--env", f"bare={sys.executable}", "--env", f"main={bare}")
    assert rc == 0 and swapped["summary"]["cached"] == 0, err
    assert all(p["status"] == "ok" for p in swapped["probes"] if p["env"] == "bare")
    # the table form, relative to the workspace, in the table's order
    rel = os.path.relpath(bare, ws)
    (ws / "pyproject.toml").write_text(
        f'[tool.laya-tui]\nenvs = {{ main = "{sys.executable}", b = "{rel}" }}\n')
    rc, table, err = _run(ws)
    assert rc == 0, err
    assert [p["id"] for p in table["probes"]][:2] == ["where/where[a]@main",
                                                       "where/where[b]@main"]
    assert table["env_comparison"]["base"] == "main"
    assert table["envs"]["b"]["python"] == os.path.normpath(os.path.join(ws, rel))


def test_worker_needs_only_the_standard_library(bare):
    """A venv with nothing installed runs the built-in env probes: a library that is not
    there is a skip with its install line, never a broken worker."""
    proc = run_cli("--headless", "--json", "-", "--no-cache", "--only", "env/python",
                   "--only", "env/library[torch]", "--env", f"bare={bare}", timeout=240)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    by_id = {p["id"]: p for p in report["probes"]}
    assert by_id["env/python@bare"]["status"] == "ok"
    assert by_id["env/library[torch]@bare"]["status"] == "skipped"
    assert "torch not installed: pip install" in by_id["env/library[torch]@bare"]["reason"]
    assert report["envs"]["bare"]["probed"]["python"] == report["envs"]["bare"]["versions"][
        "python"]
    # the top-level environment is still laya-tui's own interpreter
    assert report["environment"]["versions"]["torch"] == metadata.version("torch")


def _old_pythons() -> list[str]:
    """The newest Python older than a worker needs, and a Python 2 (pyenv's, when here)."""
    old: list[tuple[tuple[int, ...], str]] = []
    for p in glob.glob(os.path.expanduser("~/.pyenv/versions/[23].*/bin/python")):
        ver = os.path.basename(os.path.dirname(os.path.dirname(p)))
        parts = tuple(int(x) for x in ver.split(".")[:2] if x.isdigit())
        if len(parts) == 2 and parts < MIN_PYTHON:
            old.append((parts, p))
    old.sort()
    py3 = [p for v, p in old if v[0] == 3][-1:]
    return py3 + [p for v, p in old if v[0] == 2][-1:]


@pytest.mark.parametrize("python, expected", [
    ("/nonexistent/bin/python",
     "no such interpreter; create it with: python3.11 -m venv /nonexistent && "
     "/nonexistent/bin/pip install"),
    ("/bin/true", "is not a Python interpreter (it said: nothing)"),
    *[(p, "; a laya-tui worker needs Python >= 3.11: create it with: python3.11 -m venv")
      for p in _old_pythons()],
])
def test_an_interpreter_that_cannot_run_a_worker_is_one_clear_error(tmp_path, python,
                                                                     expected):
    ws = workspace(tmp_path)
    out = ws / "report.json"
    proc = run_cli("--headless", "--workspace", str(ws), "--json", str(out),
                   "--env", f"main={sys.executable}", "--env", f"old={python}", cwd=ws)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"laya-tui: error: environment old ({python})")
    assert expected in lines[0]
    assert not out.exists() and "Traceback" not in proc.stderr


def test_an_old_python_says_its_version():
    old = _old_pythons()
    if not old:
        pytest.skip("no Python older than 3.11 here (pyenv) to check the version message")
    for python in old:
        with pytest.raises(UsageError, match=r"is Python [23]\.\d+\.\d+; a laya-tui worker "
                           r"needs Python >= 3\.11"):
            inspect_env("old", python)


@pytest.mark.parametrize("args, expected", [
    (["--env", "old"], "--env expects NAME=PYTHON"),
    (["--env", "=x"], "--env expects NAME=PYTHON"),
    (["--env", "a/b=python3"], "environment name 'a/b' must be letters"),
    (["--env", f"a={sys.executable}", "--env", f"a={sys.executable}"],
     "environment 'a' is given twice"),
])
def test_bad_env_flags_are_usage_errors(tmp_path, args, expected):
    ws = workspace(tmp_path)
    proc = run_cli("--headless", "--workspace", str(ws), *args, cwd=ws)
    assert proc.returncode == 2 and expected in proc.stderr, proc.stderr


def test_a_bad_envs_table_is_a_usage_error(tmp_path):
    ws = workspace(tmp_path)
    (ws / "pyproject.toml").write_text('[tool.laya-tui]\nenvs = ["python3"]\n')
    proc = run_cli("--headless", "--workspace", str(ws), cwd=ws)
    assert proc.returncode == 2
    assert "envs: expected a table of name = \"path/to/python\"" in proc.stderr


def test_list_shows_the_cells_of_every_environment(tmp_path, bare):
    ws = workspace(tmp_path)
    proc = run_cli("--list", "--workspace", str(ws), "--env", f"x={bare}", "--env",
                   f"y={sys.executable}", "--only", "*@y", "--only", "where/where[a]", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["where/where[a]@x", "where/where[a]@y", "where/where[b]@y"]


@pytest.mark.asyncio
@pytest.mark.timeout(180)
async def test_watch_reruns_a_changed_cell_in_every_environment(tmp_path, bare):
    from tests._watch_util import WatchHarness, save

    ws = workspace(tmp_path)
    envs = (inspect_env("bare", bare), inspect_env("main", sys.executable))
    async with WatchHarness(ws, envs=envs) as h:
        first = [r for r in h.seen if r["type"] == "result"]
        assert len(first) == 4
        save(ws / "helpers" / "__init__.py", "MARK = 2\n")
        got = [await h.until(lambda r: r["type"] == "result") for _ in range(4)]
        got += [r for r in await h.quiet(1.5) if r["type"] == "result"]
        # the cells of both environments import the helper: all four re-ran, each once
        assert sorted(str(r["probe"]) for r in got) == [
            "where/where[a]@bare", "where/where[a]@main", "where/where[b]@bare",
            "where/where[b]@main"]
        new = {r["probe"]: [s["subject"] for s in r["new"]] for r in got}
        assert new["where/where[a]@main"] == ["op-2"] and new["where/where[a]@bare"] == []
        report = h.watcher.report()
        validate_report(report)
        assert set(report["envs"]) == {"bare", "main"} and report["env_comparison"]


def test_shards_split_env_cells_and_merge_compares_them(tmp_path, bare):
    ws = workspace(tmp_path)
    parts = []
    for k in (1, 2):
        rc, report, err = _run(ws, "--env", f"bare={bare}", "--env", f"main={sys.executable}",
                               "--shard", f"{k}/2", "--no-cache")
        assert rc == 0, err
        (ws / f"s{k}.json").write_text(json.dumps(report))
        parts.append(report)
    ids = [p["id"] for r in parts for p in r["probes"]]
    assert sorted(ids) == ["where/where[a]@bare", "where/where[a]@main",
                           "where/where[b]@bare", "where/where[b]@main"]
    out = ws / "merged.json"
    proc = run_cli("merge", str(ws / "s1.json"), str(ws / "s2.json"), "--json", str(out),
                   "--fail-on-env-change", cwd=ws)
    assert proc.returncode == 1, proc.stderr  # main's cells reach fallbacks bare's do not
    merged = json.loads(out.read_text())
    validate_report(merged)
    assert len(merged["probes"]) == 4 and set(merged["envs"]) == {"bare", "main"}
    assert len(merged["env_comparison"]["candidates"][0]["statuses"]) == 2
    gate = next(g for g in merged["gates"] if g["name"] == "env-change")
    assert [f["probe"] for f in gate["failures"]] == ["where/where[a]@main",
                                                      "where/where[b]@main"]
    assert next(g for g in merged["gates"] if g["name"] == "shards")["passed"]
    # one name, two interpreters: merging them would compare cells across both
    other = json.loads((ws / "s2.json").read_text())
    other["envs"]["main"]["versions"]["torch"] = "0.0.1"
    (ws / "s3.json").write_text(json.dumps(other))
    proc = run_cli("merge", str(ws / "s1.json"), str(ws / "s3.json"), "--json",
                   str(ws / "m2.json"), cwd=ws)
    assert proc.returncode == 2
    assert "environment main differs between" in proc.stderr
    assert "give the two environments different --env names" in proc.stderr


def test_worker_side_imports_only_the_standard_library(bare):
    """What an environment needs of laya-tui: nothing beyond the standard library (the
    worker, the probe API and discovery-time family code, in a venv with nothing else)."""
    import subprocess
    import tempfile

    from laya_tui.core.envs import link_package, worker_environ

    code = textwrap.dedent("""
        import sys
        import laya_tui.worker.main, laya_tui.worker.loader, laya_tui.worker.deps
        import laya_tui.api, laya_tui.families.tilelang.discover, laya_tui.families.presets
        import laya_tui.families.rbln_status
        std = set(sys.stdlib_module_names) | {"__main__", "laya_tui"}
        print(sorted({m.split(".")[0] for m in sys.modules} - std))
    """)
    with tempfile.TemporaryDirectory() as tmp:
        env = worker_environ(os.environ, bare, link_package(tmp))
        proc = subprocess.run([bare, "-c", code], capture_output=True, text=True, env=env,
                              timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
