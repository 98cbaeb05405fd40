"""Each option is declared once (issue 44 item 2): the ``option(...)`` fields of
``core/settings.py`` are the table; the argparse flags and ``--help``, the
``[tool.laya-tui]`` validation and merge, the ``init`` template and the settings
dataclasses' fields must all agree with it, and nothing may exist outside it."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from laya_tui.cli import config, init_cmd
from laya_tui.cli.main import build_parser
from laya_tui.cli.options import (
    KINDS,
    add_all_options,
    check_value,
    off_dest,
    table_keys,
    template,
)
from laya_tui.core.errors import UsageError
from laya_tui.core.options import Option, option, option_table, options_of
from laya_tui.core.settings import Gates, Outputs, RunOptions, Settings

CLI = Path(config.__file__).resolve().parent
PARTS = {"settings": Settings, "run": RunOptions, "gates": Gates, "outputs": Outputs}
#: the settings fields that are not options: the parts themselves, and what a run derives
#: (``durations`` read from ``--durations``) or its front end sets (``python``, ``order``)
NOT_OPTIONS = {"settings": {"run", "gates", "outputs"},
               "run": {"durations", "python", "order"}, "gates": set(), "outputs": set()}
TABLE = option_table()


def _template_lines(text: str) -> dict[str, str]:
    """``key -> example`` of the template's commented ``# key = value`` lines."""
    found = {}
    for line in text.splitlines():
        m = re.match(r"^# ([a-z][a-z-]*) = (.+)$", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def test_the_table_is_well_formed() -> None:
    names = [o.name for o in TABLE]
    flags = [f for o in TABLE for f in (*o.flags, *([o.off_flag] if o.off_flag else []))]
    keys = [o.key for o in TABLE if o.key]
    assert len(set(names)) == len(names) and len(set(flags)) == len(flags)
    assert len(set(keys)) == len(keys)
    for o in TABLE:
        assert o.kind in KINDS, o
        assert o.flags or o.key, f"{o.name}: neither a flag nor a key"
        assert not o.flags or o.help, f"{o.name}: a flag without a help line"
        assert not o.key or o.example, f"{o.name}: a key without a template example"
        assert o.group in ("top", "run", "ci"), o


def test_every_option_is_a_field_of_its_part_and_every_field_an_option() -> None:
    for part, cls in PARTS.items():
        declared = {o.name for o in TABLE if o.part == part}
        fields = {f.name for f in dataclasses.fields(cls)}
        assert declared <= fields
        assert fields - declared == NOT_OPTIONS[part], f"{cls.__name__}: a field outside " \
            "the table (declare it with option(...) or name it in NOT_OPTIONS)"
        defaults = cls()
        for o in options_of(part, cls):  # the table's default is the field's
            assert getattr(defaults, o.name) == o.default, o.name


def test_every_flag_of_the_run_parser_comes_from_the_table() -> None:
    actions = {a.dest: a for a in build_parser()._actions if a.dest not in ("help", "version")}
    for o in TABLE:
        if o.flags:
            assert actions.pop(o.name).option_strings[:len(o.flags)] == list(o.flags), o.name
        if o.off_flag:
            assert actions.pop(off_dest(o)).option_strings == [o.off_flag]
    assert not actions, f"flags outside the option table: {sorted(actions)}"
    text = "".join(build_parser().format_help().split())  # (wrapped at spaces and hyphens)
    for o in TABLE:
        if o.flags:
            assert "".join(o.help.replace("{default}", str(o.default)).split()) in text


def test_no_flag_of_the_table_is_written_by_hand_in_cli() -> None:
    """A command whose flags become Settings (it calls ``settings_from``) takes them
    through ``add_options``; only ``import``'s own ``--trace`` (the compiles' timeline,
    stored as the run's) is spelled out. (``show``, ``diff`` and ``init`` have flags of
    their own, never merged with the table.)"""
    table_flags = {f for o in TABLE for f in (*o.flags, o.off_flag) if f}
    found = set()
    for path in CLI.glob("*.py"):
        if "settings_from(" not in path.read_text():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                found |= {(path.name, a.value) for a in node.args
                          if isinstance(a, ast.Constant) and a.value in table_flags}
    assert found == {("import_cmd.py", "--trace")}


def test_the_settings_code_names_only_table_options() -> None:
    """``flags.get("x")`` / ``values["x"]`` / ``table.get("x")`` in cli/config.py: a renamed
    option is a failing test, not a silent ``None``."""
    names = {o.name for o in TABLE} | {off_dest(o) for o in TABLE if o.off_flag}
    used = set()
    for node in ast.walk(ast.parse((CLI / "config.py").read_text())):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id in ("flags", "values", "table") \
                and isinstance(node.slice, ast.Constant):
            used.add(node.slice.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in ("flags", "values", "table") and node.args \
                and isinstance(node.args[0], ast.Constant):
            used.add(node.args[0].value)
    assert used and used <= names | {"workspace"}, used - names


def test_every_key_is_validated_and_no_other(tmp_path: Path) -> None:
    for o in TABLE:
        if not o.key:
            continue
        (tmp_path / "pyproject.toml").write_text(f"[tool.laya-tui]\n{o.key} = {o.example}\n")
        assert set(config.load_settings(str(tmp_path))) == {o.name}, o.key
        (tmp_path / "pyproject.toml").write_text(f"[tool.laya-tui]\n{o.key} = 1.5e400\n")
        with pytest.raises(UsageError, match=f"{o.key}: expected"):
            config.load_settings(str(tmp_path))
    (tmp_path / "pyproject.toml").write_text("[tool.laya-tui]\nnot-a-key = 1\n")
    with pytest.raises(UsageError) as exc:
        config.load_settings(str(tmp_path))
    known = str(exc.value).split("(known: ")[1].rstrip(")").split(", ")
    assert known == [o.key for o in TABLE if o.key]
    assert {o.name for o in table_keys().values()} == {o.name for o in TABLE if o.key}


def test_the_init_template_has_every_key_and_each_example_is_valid(tmp_path: Path) -> None:
    assert init_cmd.TEMPLATE == template()
    lines = _template_lines(init_cmd.TEMPLATE)
    assert lines == {o.key: o.example for o in TABLE if o.key}
    assert tomllib.loads(init_cmd.TEMPLATE) == {"tool": {"laya-tui": {}}}  # all comments
    body = "\n".join(f"{k} = {v}" for k, v in lines.items())
    (tmp_path / "pyproject.toml").write_text(f"[tool.laya-tui]\n{body}\n")
    assert set(config.load_settings(str(tmp_path))) == {o.name for o in TABLE if o.key}
    assert max(len(line) for line in init_cmd.TEMPLATE.splitlines()) <= 88


def test_flag_over_table_over_default_for_every_option(tmp_path: Path) -> None:
    """The one merge: what the table says holds unless the flag says otherwise."""
    table = {o.name: f"table-{o.name}" for o in TABLE if o.key}
    flags = {o.name: f"flag-{o.name}" for o in TABLE if o.flags}
    values = config.merged(flags, table)
    for o in TABLE:
        expected = (f"flag-{o.name}" if o.flags else f"table-{o.name}" if o.key
                    else o.default)
        assert values[o.name] == expected, o.name
    assert config.merged({}, {}) == {o.name: o.default for o in TABLE}
    off = {off_dest(o): True for o in TABLE if o.off_flag}
    assert all(config.merged({**flags, **off}, table)[o.name] == o.default
               for o in TABLE if o.off_flag)


@dataclasses.dataclass(frozen=True)
class _WithANewOption:
    """An option added the one way: a field with option(...)."""

    test_only_colour: str | None = option(
        flags=("--test-only-colour",), key="test-only-colour", kind="string", metavar="NAME",
        example='"blue"', help="a new option")


def test_a_new_option_is_one_declaration() -> None:
    """Declared on a field, it is a flag with its help, a validated key, a template line and
    a merged value, with nothing written anywhere else."""
    new = options_of("run", _WithANewOption)
    table = (*TABLE, *new)
    ap = argparse.ArgumentParser()
    add_all_options(ap, table)
    assert ap.parse_args(["--test-only-colour", "red"]).test_only_colour == "red"
    assert re.search(r"--test-only-colour NAME\s+a new option", ap.format_help())
    assert table_keys(table)["test-only-colour"].name == "test_only_colour"
    assert check_value(new[0], "blue", ".", "here") == "blue"
    with pytest.raises(UsageError, match="here test-only-colour: expected a non-empty string"):
        check_value(new[0], 3, ".", "here")
    assert '# test-only-colour = "blue"' in template(table)
    assert config.merged({}, {"test_only_colour": "blue"}, table)["test_only_colour"] == "blue"
    assert config.merged({"test_only_colour": "red"}, {"test_only_colour": "blue"},
                         table)["test_only_colour"] == "red"
    assert isinstance(new[0], Option)
    assert new[0].spelled() == "--test-only-colour / test-only-colour ="
