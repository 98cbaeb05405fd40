"""One frozen Settings, built once: flags > [tool.laya-tui] > defaults, each default once."""

from __future__ import annotations

import dataclasses
import inspect
import os
from pathlib import Path

import pytest

from laya_tui.cli import diff as diff_cli
from laya_tui.cli import merge as merge_cli
from laya_tui.cli.config import settings_from
from laya_tui.cli.main import build_parser
from laya_tui.core import settings as settings_mod
from laya_tui.core.runner import Runner
from laya_tui.core.settings import DEFAULT_MARGIN, RunOptions, Settings, default_jobs
from laya_tui.report import baseline, diff, gates

PACKAGE = Path(settings_mod.__file__).resolve().parents[1]


def _settings(ws: Path, *flags: str) -> Settings:
    return settings_from(build_parser().parse_args(["--workspace", str(ws), *flags]))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "probes").mkdir()
    (tmp_path / "probes" / "p.py").write_text("")
    return tmp_path


def test_each_setting_takes_the_flag_then_the_table_then_the_default(ws: Path) -> None:
    assert _settings(ws).run.jobs == default_jobs()  # nothing said
    assert _settings(ws).gates.tolerance_margin == DEFAULT_MARGIN
    assert _settings(ws).run.device is None and _settings(ws).outputs.junit is None
    (ws / "pyproject.toml").write_text(
        '[tool.laya-tui]\njobs = 3\ntimeout = 9\ndevice = "cpu"\njunit = "t.xml"\n'
        'fail-on = ["cast"]\nmax = {fallback = 1, recompile = 0}\nbaseline = "b.json"\n'
        "tolerance-margin = 0.5\n")
    table = _settings(ws)
    assert (table.run.jobs, table.run.timeout, table.run.device) == (3, 9.0, "cpu")
    assert table.outputs.junit == str(ws / "t.xml")
    assert table.gates.fail_on == ("cast",)
    assert dict(table.gates.max_counts) == {"fallback": 1, "recompile": 0}
    assert table.gates.baseline == str(ws / "b.json") and table.gates.tolerance_margin == 0.5
    flags = _settings(ws, "--jobs", "1", "--timeout", "2", "--device", "mps", "--junit",
                      "f.xml", "--fail-on", "host_bounce", "--max", "fallback=4",
                      "--baseline", "c.json")
    assert (flags.run.jobs, flags.run.timeout, flags.run.device) == (1, 2.0, "mps")
    assert flags.outputs.junit == "f.xml" and flags.gates.baseline == "c.json"
    assert flags.gates.fail_on == ("host_bounce",)  # the flag's list replaces the table's
    assert dict(flags.gates.max_counts) == {"fallback": 4, "recompile": 0}  # per kind
    assert flags.gates.tolerance_margin == 0.5  # no flag: the table still holds
    assert _settings(ws, "--baseline", "c.json", "--no-baseline").gates.baseline is None


def test_settings_and_their_parts_are_frozen(ws: Path) -> None:
    s = _settings(ws, "--max", "fallback=1")
    for part in (s, s.run, s.gates, s.outputs):
        params = getattr(part, "__dataclass_params__", None)  # set on a dataclass
        assert dataclasses.is_dataclass(part) and params is not None and params.frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.run.jobs = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.gates.max_counts["fallback"] = 9  # type: ignore[index]
    assert isinstance(s.run.probes, tuple) and isinstance(s.gates.fail_on, tuple)


def test_the_run_options_are_the_runner_s_only_input(ws: Path) -> None:
    s = _settings(ws, "--jobs", "1", "--only", "p/*", "--no-cache")
    config = s.run
    assert isinstance(config, RunOptions) and Runner(config).config is config
    assert config.jobs == 1 and config.only == ("p/*",) and config.use_cache is False
    assert config.workspace == s.workspace == str(ws)
    # lists given to the constructor are kept as tuples: nothing can change them later
    built = RunOptions(workspace=".", probes=("a",), only=("x",), family_timeouts={"env": 9})
    assert built.probes == ("a",) and built.only == ("x",)
    with pytest.raises(TypeError):
        built.family_timeouts["env"] = 1  # type: ignore[index]
    assert built.timeout_for({"family": "env"}) == 9


def test_one_margin_default_for_gates_baseline_diff_and_the_diff_command() -> None:
    assert gates.GateSettings().tolerance_margin is DEFAULT_MARGIN
    for func in (baseline.compare, diff.diff_reports):
        assert inspect.signature(func).parameters["margin"].default is DEFAULT_MARGIN
    margin = next(a for a in diff_cli._parser()._actions if a.dest == "margin")
    assert margin.default is DEFAULT_MARGIN
    assert settings_from(merge_cli.build_parser().parse_args(["r.json"]), {},
                         run=False).gates.tolerance_margin is DEFAULT_MARGIN


def test_one_jobs_default_for_the_cli_and_the_runner(ws: Path, monkeypatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert default_jobs() == 1  # so the values below come from this one function
    assert RunOptions(workspace=".", probes=()).jobs == 1
    assert _settings(ws).run.jobs == 1
    assert "(default: 1)" in " ".join(build_parser().format_help().split())
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert RunOptions(workspace=".", probes=()).jobs == 2 == _settings(ws).run.jobs


def test_one_debounce_default_for_the_flag_and_the_watcher() -> None:
    from laya_tui.core.settings import DEFAULT_DEBOUNCE_MS
    from laya_tui.watch.engine import Watcher

    assert inspect.signature(Watcher).parameters["debounce_ms"].default is DEFAULT_DEBOUNCE_MS
    flag = next(a for a in build_parser()._actions if a.dest == "debounce_ms")
    assert flag.default is None  # None: the watcher's default, named once
    assert f"(default: {DEFAULT_DEBOUNCE_MS})" in " ".join(build_parser().format_help().split())


def test_no_copy_of_a_default_and_no_namespace_on_the_settings_path() -> None:
    """The default literals live in core/defaults.py only; front ends get Settings."""
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        rel = path.relative_to(PACKAGE).as_posix()
        if rel != "core/defaults.py":
            assert "= 0.25" not in text and "default=0.25" not in text, rel
            assert "os.cpu_count() or 1" not in text, rel
        if rel.startswith(("cli/", "report/")):
            assert "setattr(args" not in text and "getattr(args" not in text, rel
    assert os.path.basename(settings_mod.__file__) == "settings.py"


def test_the_numerics_searches_are_on_except_under_watch_unless_asked(ws: Path) -> None:
    """A failing save in watch mode reports as fast as a passing one: the precision plan,
    the TileLang pass bisection and the compiler bisector wait for --precision-plan there."""
    assert _settings(ws).run.precision_plan is True
    assert _settings(ws, "--no-precision-plan").run.precision_plan is False
    assert _settings(ws, "--watch").run.precision_plan is False
    assert _settings(ws, "--watch", "--precision-plan").run.precision_plan is True
    assert "precision_plan" in _settings(ws, "--watch").run.options()
