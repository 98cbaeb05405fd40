"""``[tool.laya-tui]`` in the workspace's ``pyproject.toml``: defaults that flags override.

Precedence, highest first: a command-line flag, the ``[tool.laya-tui]`` table, the built-in
default. List settings (``probes``, ``kernels``, ``models``, ``fail-on``) given as flags
replace the table's list; ``--max KIND=N`` overrides that one kind of the table's ``max``.
Relative paths in the table are relative to the workspace folder; paths given as flags are
relative to the current folder. ``demo = true`` adds the built-in demo (presets and
kernels) to that workspace's runs. Standard library only (the CLI imports this).
"""

from __future__ import annotations

import argparse
import os
import tomllib
from typing import Any

from laya_tui.core.errors import UsageError

TABLE = "tool.laya-tui"

#: key -> (attribute on the argparse namespace, expected type name)
KEYS: dict[str, tuple[str, str]] = {
    "probes": ("probes", "paths"),
    "kernels": ("kernels", "paths"),
    "models": ("models", "strings"),
    "timeout": ("timeout", "seconds"),
    "timeouts": ("family_timeouts", "family-seconds"),
    "jobs": ("jobs", "jobs"),
    "fail-on": ("fail_on", "strings"),
    "max": ("max", "kind-counts"),
    "baseline": ("baseline", "path"),
    "tolerance-margin": ("tolerance_margin", "ratio"),
    "junit": ("junit", "path"),
    "device": ("device", "string"),
    "markdown": ("markdown", "path"),
    "demo": ("demo", "bool"),
    "kernel-args": ("kernel_args", "kernel-args"),
}
ALIASES = {"family-timeouts": "timeouts"}

#: Defaults applied when neither a flag nor the table sets a value.
DEFAULT_TOLERANCE_MARGIN = 0.25


def default_jobs() -> int:
    """Families run at once when neither ``--jobs`` nor ``jobs =`` says."""
    return min(2, os.cpu_count() or 1)


def read_table(workspace: str) -> tuple[dict[str, Any], str]:
    """The raw ``[tool.laya-tui]`` table of ``<workspace>/pyproject.toml`` (``{}`` if none)."""
    path = os.path.join(workspace, "pyproject.toml")
    if not os.path.isfile(path):
        return {}, path
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    table = data.get("tool", {}).get("laya-tui", {}) if isinstance(data.get("tool"), dict) \
        else {}
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [{TABLE}] must be a table")
    return table, path


def table_present(workspace: str) -> bool:
    """True when the workspace's pyproject.toml has a ``[tool.laya-tui]`` table (even empty)."""
    path = os.path.join(workspace, "pyproject.toml")
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as fh:
            tool = tomllib.load(fh).get("tool")
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(tool, dict) and "laya-tui" in tool


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check(key: str, kind: str, value: Any, workspace: str, where: str) -> Any:
    """Validate one table value and normalise it (paths made absolute)."""

    def bad(expected: str) -> UsageError:
        return UsageError(f"{where} {key}: expected {expected}, got {value!r}")

    if kind in ("paths", "strings"):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
            raise bad("a string or a list of strings")
        if key == "fail-on":
            items = [part.strip() for v in items for part in v.split(",") if part.strip()]
        if kind == "paths":
            items = [os.path.normpath(os.path.join(workspace, os.path.expanduser(v)))
                     for v in items]
        return items
    if kind == "string":
        if not isinstance(value, str) or not value:
            raise bad("a non-empty string")
        return value
    if kind == "path":
        if not isinstance(value, str) or not value:
            raise bad("a path string")
        return os.path.normpath(os.path.join(workspace, os.path.expanduser(value)))
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if kind == "seconds":
        if not _is_number(value) or not value > 0:
            raise bad("a positive number of seconds")
        return float(value)
    if kind == "ratio":
        if not _is_number(value) or not value >= 0:
            raise bad("a number >= 0")
        return float(value)
    if kind == "jobs":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise bad("a whole number >= 1")
        return value
    if kind == "family-seconds":
        if not isinstance(value, dict):
            raise bad("a table of family = seconds")
        for fam, sec in value.items():
            if not _is_number(sec) or not sec > 0:
                raise UsageError(f"{where} {key}.{fam}: expected a positive number of seconds, "
                                 f"got {sec!r}")
        return {str(f): float(s) for f, s in value.items()}
    if kind == "kind-counts":
        if not isinstance(value, dict):
            raise bad("a table of kind = count")
        for k, n in value.items():
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise UsageError(f"{where} {key}.{k}: expected a whole number >= 0, got {n!r}")
        return [f"{k}={n}" for k, n in value.items()]
    if kind == "kernel-args":  # [tool.laya-tui.kernel-args."file.py::kernel"]
        from laya_tui.core.kernel_table import validate_tables

        try:
            return validate_tables(value, where)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    raise AssertionError(kind)  # pragma: no cover - KEYS and _check agree


def load_settings(workspace: str) -> dict[str, Any]:
    """The validated table as ``{namespace attribute: value}``; a bad value is a UsageError."""
    table, path = read_table(workspace)
    where = f"{path} [{TABLE}]"
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = ALIASES.get(raw_key.replace("_", "-"), raw_key.replace("_", "-"))
        if key not in KEYS:
            raise UsageError(f"{where}: unknown key {raw_key!r} (known: {', '.join(KEYS)})")
        attr, kind = KEYS[key]
        out[attr] = _check(key, kind, value, workspace, where)
    if "fail_on" in out or "max" in out:
        from laya_tui.report.gates import parse_fail_on, parse_max

        parse_fail_on(out.get("fail_on", []), f"{where} fail-on")
        parse_max(out.get("max", []), f"{where} max")
    return out


def apply_pyproject(args: argparse.Namespace) -> dict[str, Any]:
    """Fill the flags the user did not give from ``[tool.laya-tui]``, then built-in defaults.

    Returns the table's validated settings (for display and tests).
    """
    workspace = os.path.abspath(getattr(args, "workspace", ".") or ".")
    settings = load_settings(workspace) if os.path.isdir(workspace) else {}
    for attr, value in settings.items():
        if attr == "max":
            # table first, flags after: a later KIND=N wins, so the flag overrides that kind
            args.max = list(value) + list(getattr(args, "max", None) or [])
        elif attr == "family_timeouts":
            args.family_timeouts = value
        elif getattr(args, attr, None) is None:
            setattr(args, attr, value)
    if getattr(args, "jobs", None) is None:
        args.jobs = default_jobs()
    if getattr(args, "no_baseline", False):
        args.baseline = None
    if getattr(args, "tolerance_margin", None) is None:
        args.tolerance_margin = DEFAULT_TOLERANCE_MARGIN
    return settings
