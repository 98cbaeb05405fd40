"""The workspace is the user's project: built-in families, own probes, the demo, ``init``."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from laya_tui.cli.init_cmd import TEMPLATE
from laya_tui.cli.main import build_parser, config_from_args
from laya_tui.cli.project import NothingConfigured, builtin_probes_dir, demo_kernels_dir
from laya_tui.core.errors import UsageError
from tests._util import REPO, WORKSPACES, run_cli

#: Cells that exist only because of the demo (presets, decision model, MLX encoder, kernels).
DEMO_MARKERS = ("explain/tiny_llama", "explain/tiny_modernbert", "aoti/decision", "mlx/",
                "tilelang/gemm_kernel", "tilelang/rope_kernel", "tilelang/attn_kernel",
                "tilelang/add_ln_kernel", "tilelang/gemm_geglu_kernel")


def _config(ws, *flags):
    return config_from_args(build_parser().parse_args(["--workspace", str(ws), *flags]))


def _demo_ids(ids):
    return [i for i in ids if i.startswith(DEMO_MARKERS)]


def test_source_checkout_finds_the_built_in_folders():
    assert builtin_probes_dir() == str(REPO / "probes")
    assert demo_kernels_dir() == str(REPO / "kernels")


def test_a_workspace_of_own_probes_runs_just_those():
    config = _config(WORKSPACES / "mixed")
    assert list(config.probes) == [str(WORKSPACES / "mixed" / "probes")]
    assert list(config.kernels) == [] and config.options()["demo"] is False


def test_a_model_brings_the_built_in_families_beside_own_probes(tmp_path):
    (tmp_path / "probes").mkdir()
    config = _config(tmp_path, "--model", "mypkg.mod:build")
    assert list(config.probes) == [builtin_probes_dir(), str(tmp_path / "probes")]
    extra = tmp_path / "more.py"
    extra.write_text("")
    config = _config(tmp_path, "--model", "m:f", "--probes", str(extra))
    assert list(config.probes) == [builtin_probes_dir(), str(extra)]


def test_demo_from_the_table_or_the_flag_adds_the_demo_kernels(tmp_path):
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "mine.py").write_text("import tilelang\n")  # a folder with a kernel
    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui]\nkernels = ["k"]\n')
    config = _config(tmp_path)
    assert list(config.kernels) == [str(tmp_path / "k")] and not config.options()["demo"]
    config = _config(tmp_path, "--demo")
    assert list(config.kernels) == [str(tmp_path / "k"), demo_kernels_dir()]
    assert config.options()["demo"] is True
    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui]\ndemo = true\n')
    assert list(_config(tmp_path).kernels) == [demo_kernels_dir()]
    # --kernels replaces the table's kernels, the table's demo kernels included ...
    config = _config(tmp_path, "--kernels", str(tmp_path / "k"))
    assert list(config.kernels) == [str(tmp_path / "k")] and config.options()["demo"] is True
    # ... and --demo always brings them
    config = _config(tmp_path, "--demo", "--kernels", str(tmp_path / "k"))
    assert list(config.kernels) == [str(tmp_path / "k"), demo_kernels_dir()]
    assert _config(tmp_path, "--no-demo", "--model", "m:f").options()["demo"] is False
    with pytest.raises(NothingConfigured):  # the demo turned off leaves nothing to examine
        _config(tmp_path, "--no-demo")
    (tmp_path / "pyproject.toml").write_text('[tool.laya-tui]\ndemo = "yes"\n')
    with pytest.raises(UsageError, match="demo: expected true or false, got 'yes'"):
        _config(tmp_path)


def test_nothing_configured_is_a_usage_error_with_the_table_to_write(tmp_path):
    with pytest.raises(NothingConfigured) as exc:
        _config(tmp_path)
    assert '[tool.laya-tui]\n    models = ["mypkg.models:build"]' in str(exc.value)
    assert "laya-tui init" in str(exc.value) and "--demo" in str(exc.value)
    # a table that names nothing to examine is no configuration either, with its own words
    (tmp_path / "pyproject.toml").write_text("[tool.laya-tui]\nfail-on = [\"fallback\"]\n")
    with pytest.raises(NothingConfigured) as exc:
        _config(tmp_path)
    assert "its [tool.laya-tui] table names no model" in str(exc.value)
    (tmp_path / "probes").mkdir()
    assert list(_config(tmp_path).probes) == [str(tmp_path / "probes")]  # own probes: just those
    (tmp_path / "probes").rmdir()
    (tmp_path / "pyproject.toml").write_text("[tool.laya-tui]\nmodels = [\"m:build\"]\n")
    assert list(_config(tmp_path).probes) == [builtin_probes_dir()]


def test_the_repository_itself_runs_the_demo(tmp_path):
    ids = run_cli("--list", cwd=REPO).stdout.split()
    for marker in DEMO_MARKERS:
        assert any(i.startswith(marker) for i in ids), marker
    # its table names kernels/ too: point that at another folder to see the demo gone
    (tmp_path / "mine.py").write_text("import tilelang\n")
    no_demo = run_cli("--list", "--no-demo", "--kernels", str(tmp_path), cwd=REPO)
    assert no_demo.returncode == 0, no_demo.stderr
    assert _demo_ids(no_demo.stdout.split()) == []
    assert any(i.startswith("env/") for i in no_demo.stdout.split())


def test_empty_project_exit_2_with_the_hint_then_init_then_list(tmp_path):
    for flags in (["--list"], ["--headless"], ["--headless", "--json", "-"]):
        proc = run_cli(*flags, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == ""
        assert f"nothing to examine in {tmp_path}" in proc.stderr
        assert 'kernels = ["kernels"]' in proc.stderr
    proc = run_cli("init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "pyproject.toml").read_text() == TEMPLATE
    # init's table is all comments: still nothing to examine, never a green run of env only
    for flags in (["--list"], ["--headless"], ["--headless", "--json", "-"]):
        proc = run_cli(*flags, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert f"nothing to examine in {tmp_path}" in proc.stderr
        assert "its [tool.laya-tui] table names no model" in proc.stderr
    assert not (tmp_path / "laya-report.json").exists()
    with open(tmp_path / "pyproject.toml", "a") as fh:
        fh.write("demo = true\n")
    ids = run_cli("--list", cwd=tmp_path).stdout.split()
    assert "env/python" in ids and any(i.startswith("tilelang/") for i in ids)


def test_init_appends_to_a_pyproject_and_never_overwrites_a_table(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "mine"\nversion = "1"')
    assert run_cli("init", "--workspace", str(tmp_path)).returncode == 0
    data = tomllib.loads(pyproject.read_text())
    assert data["project"]["name"] == "mine" and data["tool"]["laya-tui"] == {}
    before = pyproject.read_text()
    proc = run_cli("init", cwd=tmp_path)
    assert proc.returncode == 2 and "already has a [tool.laya-tui] table" in proc.stderr
    assert pyproject.read_text() == before
    pyproject.write_text("[project\n")
    proc = run_cli("init", cwd=tmp_path)
    assert proc.returncode == 2 and "invalid TOML" in proc.stderr
    assert pyproject.read_text() == "[project\n"


def test_python_dash_m_laya_tui():
    proc = subprocess.run([sys.executable, "-m", "laya_tui", "--version"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == "laya-tui 0.1.0"


@pytest.mark.asyncio
async def test_the_dashboard_shows_the_hint_on_one_screen(tmp_path):
    from laya_tui.cli.project import nothing_configured_hint
    from laya_tui.tui.screens.hint import hint_app

    text = nothing_configured_hint(str(tmp_path))
    app = hint_app(text)
    async with app.run_test(size=(80, 24)) as pilot:
        shown = str(app.query_one("#hint").render())
        assert 'models = ["mypkg.models:build"]' in shown and "--demo" in shown
        await pilot.press("q")
    assert app.return_code in (0, None)
