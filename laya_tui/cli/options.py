"""The front end's views of the option table (:func:`laya_tui.core.options.option_table`):
the argparse flags and their ``--help`` lines, the check of a ``[tool.laya-tui]`` value,
and the ``laya-tui init`` template. Each view is derived here from the table, so an option
declared on a settings field (:mod:`laya_tui.core.settings`) is everywhere at once.

A ``kind`` (:data:`KINDS`) says how an option is spelled on the command line and what its
table value must be. Standard library only at import time (``--help`` stays fast).
"""

from __future__ import annotations

import argparse
import math
import os
import textwrap
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias, TypeGuard

from laya_tui.core.errors import UsageError
from laya_tui.core.options import Option, option_table
from laya_tui.core.settings import MAX_DEBOUNCE_MS, MAX_JOBS, MAX_TIMEOUT_S, check_seconds

#: the ``--help`` groups, in order (``top`` and ``run`` are the main list)
GROUP_RANK = {"top": 0, "run": 1, "ci": 2}
CI_TITLE = "CI gates (also settable in [tool.laya-tui] of pyproject.toml; flags win)"


def seconds_arg(text: str) -> float:
    """``--timeout``: a finite number of seconds in (0, a week] (argparse's type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    try:
        return check_seconds(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}, got {text!r}") from None


def whole_arg(low: int, high: int, unit: str = "") -> Callable[[str], int]:
    """A whole-number flag in ``[low, high]`` (``nan``, ``inf``, ``1.5``: a one-line error)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number{unit} from {low} to {high}, got {text!r}")
        return value

    parse.__name__ = "whole number"
    return parse


#: ``argparse.add_argument``'s keywords (a library's payload: action, type, nargs...).
ArgKwargs: TypeAlias = dict[str, Any]


def _arg_kwargs(kind: str) -> ArgKwargs:
    """``add_argument`` keywords of a kind (every flag defaults to ``None``: not given, so
    the table or the field's default holds)."""
    repeated: ArgKwargs = {"action": "append"}
    kinds: dict[str, ArgKwargs] = {
        "switch": {"action": "store_true", "default": None},
        "off-switch": {"action": "store_false", "default": None},  # --no-cache: use_cache
        "bool": {"action": argparse.BooleanOptionalAction, "default": None},
        "paths": repeated, "strings": repeated, "signal-kinds": repeated,
        "kind-counts": repeated, "envs": repeated,
        "path-or-stdout": {"nargs": "?", "const": "-"},
        "seconds": {"type": seconds_arg},
        "jobs": {"type": whole_arg(1, MAX_JOBS)},
        "ms": {"type": whole_arg(0, MAX_DEBOUNCE_MS, " of ms")},
    }
    return dict(kinds.get(kind, {}))  # string, path, device, shard: text, checked when merged


#: every kind an option may have (a table value of the table-only kinds is checked by
#: :func:`check_value`; the others are text or a repeated flag there too)
KINDS = frozenset({
    "switch", "off-switch", "bool", "paths", "strings", "signal-kinds", "kind-counts",
    "envs", "path-or-stdout", "seconds", "jobs", "ms", "string", "path", "device", "shard",
    "ratio", "family-seconds", "kernel-args"})


def help_order(table: Iterable[Option] | None = None) -> list[Option]:
    """The options in ``--help`` order: by group, then as declared."""
    opts = list(option_table() if table is None else table)
    return sorted(opts, key=lambda o: GROUP_RANK[o.group])


def off_dest(opt: Option) -> str:
    """The argparse dest of an option's ``off_flag`` (``--no-baseline``: ``no_baseline``)."""
    return f"no_{opt.name}"


def add_option(ap: argparse.ArgumentParser | argparse._ArgumentGroup, opt: Option,
               help: str | None = None) -> None:
    """``opt``'s flag (and its off flag) on ``ap``; ``help`` replaces its help line."""
    kwargs = _arg_kwargs(opt.kind)
    if opt.metavar:
        kwargs["metavar"] = opt.metavar
    text = (help or opt.help).replace("{default}", str(opt.default))
    ap.add_argument(*opt.flags, dest=opt.name, help=text, **kwargs)
    if opt.off_flag:
        ap.add_argument(opt.off_flag, dest=off_dest(opt), action="store_true",
                        help=opt.off_help)


def add_options(ap: argparse.ArgumentParser | argparse._ArgumentGroup, names: Iterable[str],
                helps: Mapping[str, str] | None = None) -> None:
    """The flags of the options named (in that order), for a subcommand's parser."""
    by_name = {o.name: o for o in option_table()}
    for name in names:
        add_option(ap, by_name[name], (helps or {}).get(name))


def add_all_options(ap: argparse.ArgumentParser, table: Iterable[Option] | None = None) -> None:
    """Every flag of the table on a run's parser, in ``--help`` order; the ``ci`` group's
    under its title."""
    ci = ap.add_argument_group(CI_TITLE)
    for opt in help_order(table):
        if opt.flags:
            add_option(ci if opt.group == "ci" else ap, opt)


def table_keys(table: Iterable[Option] | None = None) -> dict[str, Option]:
    """``[tool.laya-tui]`` key -> option; each key may also be spelled as its field's name
    (``family-timeouts``), and with ``_`` for ``-``."""
    opts = [o for o in (option_table() if table is None else table) if o.key]
    keys = {o.key: o for o in opts if o.key}
    for o in opts:
        keys.setdefault(o.name.replace("_", "-"), o)
    return keys


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def seconds_ok(value: float) -> bool:
    """A finite number of seconds in (0, :data:`MAX_TIMEOUT_S`]."""
    try:
        check_seconds(value)
    except ValueError:
        return False
    return True


def check_value(opt: Option, value: object, workspace: str, where: str) -> object:
    """Validate one table value of ``opt`` and normalise it (paths made absolute)."""
    key, kind = opt.key, opt.kind

    def bad(expected: str) -> UsageError:
        return UsageError(f"{where} {key}: expected {expected}, got {value!r}")

    if kind in ("paths", "strings", "signal-kinds"):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
            raise bad("a string or a list of strings")
        if kind == "signal-kinds":
            items = [part.strip() for v in items for part in v.split(",") if part.strip()]
        if kind == "paths":
            items = [os.path.normpath(os.path.join(workspace, os.path.expanduser(v)))
                     for v in items]
        return items
    if kind in ("string", "device", "shard"):
        if not isinstance(value, str) or not value:
            raise bad("a non-empty string")
        return value
    if kind in ("path", "path-or-stdout"):
        if not isinstance(value, str) or not value:
            raise bad("a path string")
        return os.path.normpath(os.path.join(workspace, os.path.expanduser(value)))
    if kind in ("bool", "switch", "off-switch"):
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if kind == "seconds":
        if not _is_number(value) or not seconds_ok(value):
            raise bad(f"a finite number of seconds above 0 and at most {MAX_TIMEOUT_S:g}")
        return float(value)
    if kind == "ratio":
        if not _is_number(value) or not (math.isfinite(value) and value >= 0):
            raise bad("a finite number >= 0")
        return float(value)
    if kind in ("jobs", "ms"):
        low, high = (1, MAX_JOBS) if kind == "jobs" else (0, MAX_DEBOUNCE_MS)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise bad(f"a whole number from {low} to {high}")
        return value
    if kind == "family-seconds":
        if not isinstance(value, dict):
            raise bad("a table of family = seconds")
        for fam, sec in value.items():
            if not _is_number(sec) or not seconds_ok(sec):
                raise UsageError(f"{where} {key}.{fam}: expected a finite number of seconds "
                                 f"above 0 and at most {MAX_TIMEOUT_S:g}, got {sec!r}")
        return {str(f): float(s) for f, s in value.items()}
    if kind == "kind-counts":
        if not isinstance(value, dict):
            raise bad("a table of kind = count")
        for k, n in value.items():
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise UsageError(f"{where} {key}.{k}: expected a whole number >= 0, got {n!r}")
        return [f"{k}={n}" for k, n in value.items()]
    if kind == "envs":  # envs = { old = ".venv-014/bin/python", new = ".venv/bin/python" }
        from laya_tui.core.envs import parse_env_table

        return parse_env_table(value, workspace, where)
    if kind == "kernel-args":  # [tool.laya-tui.kernel-args."file.py::kernel"]
        from laya_tui.core.kernel_table import validate_tables

        try:
            return validate_tables(value, where)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    raise AssertionError(kind)  # pragma: no cover - KINDS and check_value agree


#: the template's heading of each part's keys
PART_TITLES = {
    "settings": "How laya-tui runs",
    "run": "What laya-tui examines in this project; `laya-tui --list` shows the probe ids",
    "gates": "CI gates: what fails a run (the flags of the same name win)",
    "outputs": "Files a run writes beside its report (paths relative to this folder)",
}


def template(table: Iterable[Option] | None = None) -> str:
    """The ``laya-tui init`` table: every key, commented out, under its note."""
    lines = ["[tool.laya-tui]"]
    part = None
    for opt in (o for o in (option_table() if table is None else table) if o.key):
        if opt.part != part:
            part = opt.part
            lines += ["", f"# {PART_TITLES[part]}."]
        note = (opt.note or opt.help).replace("{default}", str(opt.default))
        lines += textwrap.wrap(note[:1].upper() + note[1:] + ".", 88, initial_indent="# ",
                               subsequent_indent="# ")
        lines.append(f"# {opt.key} = {opt.example}")
    return "\n".join(lines) + "\n"
