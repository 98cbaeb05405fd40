"""``[tool.laya-tui]`` in the workspace's ``pyproject.toml``, and :func:`settings_from`, the
one place where the flags, that table and the defaults become a frozen
:class:`~laya_tui.core.settings.Settings`, whose ``run`` options are the runner's only
input.

Precedence, highest first: a command-line flag, the ``[tool.laya-tui]`` table, the built-in
default. List settings (``probes``, ``kernels``, ``models``, ``fail-on``) given as flags
replace the table's list; ``--max KIND=N`` overrides that one kind of the table's ``max``.
Relative paths in the table are relative to the workspace folder; paths given as flags are
relative to the current folder. ``demo = true`` adds the built-in demo (presets and
kernels) to that workspace's runs. Standard library only (the CLI imports this); the
defaults live in :mod:`laya_tui.core.settings`.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import tomllib
from typing import TYPE_CHECKING, Any

from laya_tui.core.errors import UsageError
from laya_tui.core.settings import (
    DEFAULT_MARGIN,
    MAX_DEBOUNCE_MS,
    MAX_JOBS,
    MAX_TIMEOUT_S,
    Gates,
    Outputs,
    RunOptions,
    Settings,
    check_seconds,
    default_jobs,
    frozen_map,
)

if TYPE_CHECKING:
    from laya_tui.core.envs import Environment

TABLE = "tool.laya-tui"

#: key -> (name of the setting (the flag's argparse dest), expected type name)
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
    "sarif": ("sarif", "path"),
    "annotations": ("annotations", "bool"),
    "envs": ("envs", "envs"),
    "fail-on-env-change": ("fail_on_env_change", "bool"),
}
ALIASES = {"family-timeouts": "timeouts"}

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


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _seconds_ok(value: float) -> bool:
    try:
        check_seconds(value)
    except ValueError:
        return False
    return True


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
        if not _is_number(value) or not _seconds_ok(value):
            raise bad(f"a finite number of seconds above 0 and at most {MAX_TIMEOUT_S:g}")
        return float(value)
    if kind == "ratio":
        if not _is_number(value) or not (math.isfinite(value) and value >= 0):
            raise bad("a finite number >= 0")
        return float(value)
    if kind == "jobs":
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_JOBS:
            raise bad(f"a whole number from 1 to {MAX_JOBS}")
        return value
    if kind == "family-seconds":
        if not isinstance(value, dict):
            raise bad("a table of family = seconds")
        for fam, sec in value.items():
            if not _is_number(sec) or not _seconds_ok(sec):
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
    raise AssertionError(kind)  # pragma: no cover - KEYS and _check agree


def load_settings(workspace: str) -> dict[str, Any]:
    """The validated table as ``{setting name: value}``; a bad value is a UsageError."""
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


#: ``--device`` / ``device =`` values (availability is checked by the probes: a skip).
DEVICE_PATTERN = r"^(cpu|cuda(:\d+)?|mps|rbln(:\d+)?)$"


def _pick(flag: Any, table: dict[str, Any], key: str, default: Any = None) -> Any:
    """A flag the user gave wins, then the table's value, then the default."""
    if flag is not None:
        return flag
    return table.get(key, default)


def settings_from(args: argparse.Namespace, table: dict[str, Any] | None = None, *,
                  run: bool = True) -> Settings:
    """The one :class:`Settings` of an invocation: flags > ``[tool.laya-tui]`` > defaults.

    ``args`` is the parsed command line (a run's, or ``laya-tui merge``'s, which has only the
    workspace, output and gate flags); ``table`` the validated table (:func:`load_settings`;
    read from the workspace when ``None``). ``run`` resolves and checks what a run needs
    (probe sources, timeouts, jobs, models, shard, device); ``merge`` runs nothing. A bad
    value is a one-line UsageError, checked before anything runs.
    """
    flags = vars(args)
    given = flags.get("workspace") or "."
    workspace = os.path.abspath(given)
    if not os.path.isdir(workspace):
        raise UsageError(f"workspace folder does not exist: {given}")
    if table is None:
        table = load_settings(workspace)
    debounce = flags.get("debounce_ms")
    if debounce is not None and not (isinstance(debounce, int)
                                     and 0 <= debounce <= MAX_DEBOUNCE_MS):
        raise UsageError(f"--debounce-ms: expected a whole number of ms from 0 to "
                         f"{MAX_DEBOUNCE_MS}, got {debounce!r}")
    run_options = (_run_options(flags, table, workspace) if run
                   else RunOptions(workspace=workspace))
    return Settings(
        run=run_options, gates=_gates(flags, table),
        outputs=_outputs(flags, table),
        headless=bool(flags.get("headless")), list_only=bool(flags.get("list")),
        watch=bool(flags.get("watch")), debounce_ms=flags.get("debounce_ms"),
        quiet=bool(flags.get("quiet")),
    )


def _outputs(flags: dict[str, Any], table: dict[str, Any]) -> Outputs:
    """Where the report and the CI files go; ``--annotations`` (stdout) cannot share stdout
    with ``--json -``."""
    out = Outputs(json=flags.get("json"), junit=_pick(flags.get("junit"), table, "junit"),
                  markdown=_pick(flags.get("markdown"), table, "markdown"),
                  html=flags.get("html"), trace=flags.get("trace"),
                  sarif=_pick(flags.get("sarif"), table, "sarif"),
                  annotations=bool(_pick(flags.get("annotations"), table, "annotations",
                                         False)))
    if out.annotations and out.json == "-":
        raise UsageError("--annotations prints workflow commands on stdout, where --json - "
                         "writes the report: give --json a file path")
    return out


def _gates(flags: dict[str, Any], table: dict[str, Any]) -> Gates:
    """``--fail-on`` replaces the table's list; ``--max KIND=N`` overrides that kind only."""
    fail_on: list[str] = []
    max_counts: dict[str, int] = {}
    if any((flags.get("fail_on"), flags.get("max"), table.get("fail_on"), table.get("max"))):
        from laya_tui.report.gates import parse_fail_on, parse_max

        fail_on = (parse_fail_on(flags["fail_on"]) if flags.get("fail_on")
                   else parse_fail_on(table.get("fail_on", [])))
        max_counts = parse_max(table.get("max", []))  # the table's, checked when read
        max_counts.update(parse_max(flags.get("max") or []))
    baseline = None if flags.get("no_baseline") else _pick(flags.get("baseline"), table,
                                                            "baseline")
    return Gates(fail_on=tuple(fail_on), max_counts=frozen_map(max_counts), baseline=baseline,
                 tolerance_margin=table.get("tolerance_margin", DEFAULT_MARGIN),
                 fail_on_env_change=bool(_pick(flags.get("fail_on_env_change"), table,
                                               "fail_on_env_change", False)))


def _run_options(flags: dict[str, Any], table: dict[str, Any], workspace: str) -> RunOptions:
    """What a run needs, checked in the order the user is told about it."""
    from laya_tui.cli.project import resolve_sources

    models = list(_pick(flags.get("models"), table, "models", []))
    demo = bool(_pick(flags.get("demo"), table, "demo", False))
    probes, kernels = resolve_sources(  # built-ins, own probes, demo kernels
        workspace, own=_pick(flags.get("probes"), table, "probes"),
        kernels=_pick(flags.get("kernels"), table, "kernels"), models=models, demo=demo,
        flags=frozenset(k for k in ("kernels", "demo") if flags.get(k) is not None))
    rbln_log = flags.get("rbln_log")
    if rbln_log and not os.path.isfile(rbln_log):
        raise UsageError(f"RBLN log file does not exist: {rbln_log}")
    timeout = _pick(flags.get("timeout"), table, "timeout")
    if timeout is not None and not _seconds_ok(timeout):
        raise UsageError(f"--timeout: expected a finite number of seconds above 0 and at most "
                         f"{MAX_TIMEOUT_S:g}, got {timeout!r}")
    jobs = _pick(flags.get("jobs"), table, "jobs", default_jobs())
    if not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs: expected a whole number from 1 to {MAX_JOBS}, got {jobs}")
    for m in models:
        if ":" not in m:
            raise UsageError(f"--model must look like module:callable, got {m!r}")
    shard, durations_path = _shard(flags)
    durations = None
    if durations_path:
        from laya_tui.report.saved import durations_from_report

        durations = durations_from_report(durations_path)
    device = _pick(flags.get("device"), table, "device")
    if device and not re.match(DEVICE_PATTERN, device):
        raise UsageError(f"--device / device = must be cpu, cuda, cuda:N, mps or rbln, "
                         f"got {device!r}")
    out = flags.get("out")
    envs = _envs(flags, table)
    return RunOptions(
        workspace=workspace, probes=tuple(os.path.abspath(p) for p in probes),
        kernels=tuple(os.path.abspath(k) for k in kernels), models=tuple(models),
        only=tuple(flags.get("only") or ()), demo=demo, device=device or None,
        timeout=timeout, family_timeouts=frozen_map(table.get("family_timeouts")), jobs=jobs,
        use_cache=not flags.get("no_cache"), cache_dir=flags.get("cache_dir"),
        out=os.path.abspath(out) if out else None,
        rbln_log=os.path.abspath(rbln_log) if rbln_log else None,
        kernel_args=frozen_map(table.get("kernel_args")), shard=shard,
        durations=frozen_map(durations) if durations is not None else None,
        durations_path=os.path.abspath(durations_path) if durations_path and durations is not None
        else None,
        envs=envs, precision_plan=_numerics_searches(flags),
    )


def _numerics_searches(flags: dict[str, Any]) -> bool:
    """``--[no-]precision-plan``: on by default, off by default under ``--watch`` (a failing
    save reports as fast as a passing one; ``--precision-plan`` asks for them there)."""
    asked = flags.get("precision_plan")
    return bool(asked) if asked is not None else not flags.get("watch")


def _envs(flags: dict[str, Any], table: dict[str, Any]) -> tuple[Environment, ...]:
    """``--env NAME=PYTHON`` (replacing the table's ``envs``), each interpreter checked now:
    one that cannot run a worker is a UsageError before any probe runs."""
    from laya_tui.core.envs import inspect_envs, parse_env_flags

    if flags.get("envs"):
        pairs = parse_env_flags(flags["envs"], os.getcwd())
    else:
        pairs = table.get("envs") or []
    return inspect_envs(pairs)


def _shard(flags: dict[str, Any]) -> tuple[tuple[int, int] | None, str | None]:
    """``--shard K/N`` and the ``--durations REPORT`` path, checked before anything runs."""
    shard_text, durations_path = flags.get("shard"), flags.get("durations")
    if shard_text is None:
        if durations_path:
            raise UsageError("--durations only applies with --shard K/N")
        return None, None
    from laya_tui.core.shard import parse_shard

    shard = parse_shard(shard_text)
    if flags.get("watch"):
        raise UsageError("--shard splits one run; it does not combine with --watch")
    return shard, durations_path or None
