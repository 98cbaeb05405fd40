"""``[tool.laya-tui]`` in the workspace's pyproject.toml; flags override it."""

from __future__ import annotations

import json
import os

import pytest

from laya_tui.cli.config import load_settings, settings_from
from laya_tui.cli.main import build_parser
from laya_tui.cli.project import builtin_probes_dir
from laya_tui.core.errors import UsageError
from laya_tui.core.settings import DEFAULT_MARGIN, default_jobs
from laya_tui.report.document import validate_report
from laya_tui.report.gates import prepare_gates
from tests._ci_reports import ci_workspace, real_report, run_ci, set_scenario

FULL = """
[project]
name = "someone-elses-port"

[tool.laya-tui]
probes = ["probes"]
kernels = "kernels"
models = ["mymodels:build"]
timeout = 42
timeouts = {ci_slow = 7.5}
jobs = 1
fail-on = ["lowering", "cast"]
max = {fallback = 3, recompile = 0}
baseline = "reports/base.json"
tolerance-margin = 0.5
junit = "out/junit.xml"
markdown = "out/summary.md"
"""


def _args(ws, *flags):
    """The Settings and the run options of ``laya-tui --workspace WS FLAGS``."""
    settings = settings_from(build_parser().parse_args(["--workspace", str(ws), *flags]))
    return settings, settings.run


@pytest.fixture
def ws(tmp_path):
    w = tmp_path / "ws"
    (w / "probes").mkdir(parents=True)
    (w / "kernels").mkdir()
    (w / "kernels" / "k.py").write_text("import tilelang\n")  # a kernels folder has a kernel
    (w / "reports").mkdir()
    (w / "out").mkdir()
    return w


def test_no_table_means_built_in_defaults(ws):
    st, config = _args(ws)
    assert config.jobs == default_jobs() and config.timeout is None
    assert config.family_timeouts == {}
    assert st.gates.fail_on == () and not st.gates.max_counts
    assert st.gates.baseline is None
    assert st.gates.tolerance_margin == DEFAULT_MARGIN
    settings = prepare_gates(st)
    assert settings.fail_on == () and settings.max_counts == {} and settings.baseline is None


def test_full_table(ws):
    (ws / "pyproject.toml").write_text(FULL)
    st, config = _args(ws, "--cache-dir", str(ws / "c"))
    assert list(config.probes) == [builtin_probes_dir(), str(ws / "probes")]  # built-ins + own
    assert list(config.kernels) == [str(ws / "kernels")]
    assert list(config.models) == ["mymodels:build"]
    assert config.timeout == 42.0 and config.jobs == 1
    assert config.family_timeouts == {"ci_slow": 7.5}
    assert st.gates.baseline == str(ws / "reports" / "base.json")
    assert st.outputs.junit == str(ws / "out" / "junit.xml")
    assert st.outputs.markdown == str(ws / "out" / "summary.md")
    assert st.gates.tolerance_margin == 0.5
    assert st.gates.fail_on == ("lowering", "cast")


def test_flags_override_the_table(ws, tmp_path):
    (ws / "pyproject.toml").write_text(FULL)
    other = tmp_path / "other_probes"
    other.mkdir()
    st, config = _args(ws, "--jobs", "2", "--timeout", "5", "--probes", str(other),
                         "--fail-on", "recompile", "--max", "fallback=10", "--no-baseline",
                         "--junit", str(tmp_path / "j.xml"))
    assert config.jobs == 2 and config.timeout == 5.0
    assert list(config.probes) == [builtin_probes_dir(), str(other)]  # replaces the table's list
    assert st.gates.baseline is None  # --no-baseline
    assert st.outputs.junit == str(tmp_path / "j.xml")
    settings = prepare_gates(st)
    assert settings.fail_on == ("recompile",)
    assert settings.max_counts == {"fallback": 10, "recompile": 0}  # per kind
    assert settings.tolerance_margin == 0.5


def test_paths_are_relative_to_the_workspace_not_the_cwd(ws, tmp_path, monkeypatch):
    (ws / "pyproject.toml").write_text('[tool.laya-tui]\nprobes = "probes"\n'
                                       'baseline = "../b.json"\n')
    monkeypatch.chdir(tmp_path)
    st, config = _args(ws)
    assert list(config.probes) == [builtin_probes_dir(), str(ws / "probes")]  # ws has kernels/
    assert st.gates.baseline == str(tmp_path / "b.json")


def test_underscore_spelling_and_comma_lists(ws):
    (ws / "pyproject.toml").write_text('[tool.laya-tui]\nfail_on = "fallback, cast"\n'
                                       'family_timeouts = {env = 3}\n')
    settings = load_settings(str(ws))
    assert settings["fail_on"] == ["fallback", "cast"]
    assert settings["family_timeouts"] == {"env": 3.0}
    _, config = _args(ws)
    assert config.timeout_for({"family": "env"}) == 3.0
    assert config.timeout_for({"family": "env", "timeout": 9}) == 9.0  # the probe's own wins


@pytest.mark.parametrize("body,needle", [
    ("timeout = -1", "timeout: expected a finite number of seconds above 0 and at most "
     "604800, got -1"),
    ("timeout = true", "timeout: expected a finite number of seconds above 0 and at most "
     "604800, got True"),
    ("timeout = '10'", "timeout: expected a finite number of seconds above 0 and at most "
     "604800, got '10'"),
    ("jobs = 0", "jobs: expected a whole number from 1 to 256, got 0"),
    ("jobs = 1.5", "jobs: expected a whole number from 1 to 256, got 1.5"),
    ("probes = 3", "probes: expected a string or a list of strings, got 3"),
    ("probes = ['a', 1]", "probes: expected a string or a list of strings"),
    ("kernels = ['']", "kernels: expected a string or a list of strings"),
    ("fail-on = ['bogus']", "fail-on: unknown kind 'bogus'"),
    ("fail-on = 7", "fail-on: expected a string or a list of strings, got 7"),
    ("max = 3", "max: expected a table of kind = count, got 3"),
    ("max = {fallback = -2}", "max.fallback: expected a whole number >= 0, got -2"),
    ("max = {fallback = 'x'}", "max.fallback: expected a whole number >= 0, got 'x'"),
    ("max = {vibes = 1}", "max: unknown kind 'vibes'"),
    ("timeouts = {tilelang = 0}", "timeouts.tilelang: expected a finite number of seconds"),
    ("timeouts = 5", "timeouts: expected a table of family = seconds"),
    ("baseline = 5", "baseline: expected a path string, got 5"),
    ("tolerance-margin = -0.1", "tolerance-margin: expected a finite number >= 0"),
    ("fail-onn = ['fallback']", "unknown key 'fail-onn' (known: probes, kernels"),
])
def test_bad_values_are_one_line_usage_errors(ws, body, needle):
    (ws / "pyproject.toml").write_text(f"[tool.laya-tui]\n{body}\n")
    with pytest.raises(UsageError) as exc:
        _args(ws)
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    assert str(exc.value).startswith(str(ws / "pyproject.toml"))


def test_invalid_toml_and_bad_table(ws):
    (ws / "pyproject.toml").write_text("[tool.laya-tui\nprobes = \n")
    with pytest.raises(UsageError, match="invalid TOML"):
        _args(ws)
    (ws / "pyproject.toml").write_text("[tool]\nlaya-tui = 3\n")
    with pytest.raises(UsageError, match=r"\[tool.laya-tui\] must be a table"):
        _args(ws)


def test_cli_bad_config_exit_2_runs_nothing(tmp_path):
    ws = ci_workspace(tmp_path, pyproject="[tool.laya-tui]\njobs = 'many'\n")
    marker = tmp_path / "ran"
    for extra in ([], ["--list"]):
        proc = run_ci(ws, *extra, env={"LAYA_CI_RAN": str(marker)})
        assert proc.returncode == 2
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1
        assert "jobs: expected a whole number from 1 to 256, got 'many'" in lines[0]
    assert not marker.exists()


def test_cli_uses_the_table_and_flags_override(tmp_path):
    ws = ci_workspace(tmp_path, pyproject='[tool.laya-tui]\nfail-on = ["lowering"]\n'
                                          'max = {fallback = 1}\n')
    assert run_ci(ws).returncode == 1
    # --fail-on replaces the table's list; --max overrides that kind only
    assert run_ci(ws, "--fail-on", "timing", "--max", "fallback=2").returncode == 1
    assert run_ci(ws, "--fail-on", "artifact", "--max", "fallback=2").returncode == 0


def test_cli_table_baseline_timeouts_and_outputs(tmp_path):
    ws = ci_workspace(tmp_path)
    real_report(ws, ws / "base.json")
    (ws / "pyproject.toml").write_text('[tool.laya-tui]\nbaseline = "base.json"\n'
                                       'timeout = 1\njunit = "j.xml"\n'
                                       'markdown = "s.md"\n')
    set_scenario(ws, {"fallback": {"aten::mul.out": 5}, "hang": True})
    out = tmp_path / "r.json"
    proc = run_ci(ws, "--json", str(out))
    assert proc.returncode == 1
    report = json.loads(out.read_text())
    validate_report(report)
    assert report["baseline"]["path"] == str(ws / "base.json")
    slow = next(p for p in report["probes"] if p["id"] == "ci_slow/compile_step")
    assert slow["status"] == "timeout"
    assert slow["reason"].startswith("timed out after 1 s: no progress")
    assert (ws / "j.xml").read_text().startswith("<?xml")
    assert (ws / "s.md").read_text().startswith("## laya-tui: ❌ FAIL")
    # a missing baseline named in the table is an input error; --no-baseline skips it
    os.unlink(ws / "base.json")
    set_scenario(ws, {})
    proc = run_ci(ws)
    assert proc.returncode == 2 and "baseline" in proc.stderr and "does not exist" in proc.stderr
    assert run_ci(ws, "--no-baseline").returncode == 0
