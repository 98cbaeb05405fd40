"""``[tool.laya-tui]`` in the workspace's ``pyproject.toml``, and :func:`settings_from`, the
one place where the flags, that table and the defaults become a frozen
:class:`~laya_tui.core.settings.Settings`, whose ``run`` options are the runner's only
input.

Precedence, highest first: a command-line flag, the ``[tool.laya-tui]`` table, the built-in
default. List settings (``probes``, ``kernels``, ``models``, ``fail-on``) given as flags
replace the table's list; ``--max KIND=N`` overrides that one kind of the table's ``max``.
Relative paths in the table are relative to the workspace folder; paths given as flags are
relative to the current folder. ``demo = true`` adds the built-in demo (presets and
kernels) to that workspace's runs. Standard library only (the CLI imports this). The
options themselves (flag, key, kind, default) are declared once, in the option table of
:mod:`laya_tui.core.settings`; a table value's check is :func:`laya_tui.cli.options.check_value`.
"""

from __future__ import annotations

import argparse
import os
import re
import tomllib
from typing import TYPE_CHECKING, Any, TypeAlias

from laya_tui.cli.options import check_value, off_dest, seconds_ok, table_keys
from laya_tui.core.errors import UsageError
from laya_tui.core.options import Option, option_table
from laya_tui.core.settings import (
    MAX_DEBOUNCE_MS,
    MAX_JOBS,
    MAX_TIMEOUT_S,
    Gates,
    Outputs,
    RunOptions,
    Settings,
    frozen_map,
)

if TYPE_CHECKING:
    from laya_tui.core.envs import Environment

TABLE = "tool.laya-tui"
#: The ``[tool.laya-tui]`` table as TOML gave it: an open mapping until
#: :func:`load_settings` has checked each key and value.
RawTable: TypeAlias = dict[str, object]
#: Option values by option (field) name: the flags given (``vars(args)``), the checked
#: table, the merged values. The option table (``core/options.py``) declares each name
#: and its type, so the mapping is keyed at run time, not by a TypedDict.
OptionValues: TypeAlias = dict[str, Any]


def read_table(workspace: str) -> tuple[RawTable, str]:
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


def load_settings(workspace: str) -> OptionValues:
    """The validated table as ``{option (field) name: value}``; a bad value is a
    UsageError."""
    table, path = read_table(workspace)
    where = f"{path} [{TABLE}]"
    keys = table_keys()
    known = ", ".join(dict.fromkeys(o.key for o in keys.values() if o.key))
    out: OptionValues = {}
    for raw_key, value in table.items():
        opt = keys.get(raw_key.replace("_", "-"))
        if opt is None:
            import difflib

            near = difflib.get_close_matches(raw_key.replace("_", "-"),
                                             [o.key for o in keys.values() if o.key], n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise UsageError(f"{where}: unknown key {raw_key!r} (known: {known}){hint}")
        out[opt.name] = check_value(opt, value, workspace, where)
    for opt in option_table():  # signal kinds: known ones only (fail-on, then max)
        if opt.name in out and opt.kind in ("signal-kinds", "kind-counts"):
            from laya_tui.report.gates import parse_fail_on, parse_max

            parse = parse_fail_on if opt.kind == "signal-kinds" else parse_max
            parse(out[opt.name], f"{where} {opt.key}")
    return out


#: ``--device`` / ``device =`` values (availability is checked by the probes: a skip).
DEVICE_PATTERN = r"^(cpu|cuda(:\d+)?|mps|rbln(:\d+)?)$"


def _pick(flag: object, table: OptionValues, key: str, default: object = None) -> Any:
    """A flag the user gave wins, then the table's value, then the default (of the type
    the option table declares for ``key``: read by key, hence open)."""
    if flag is not None:
        return flag
    return table.get(key, default)


def merged(flags: OptionValues, table: OptionValues,
           options: tuple[Option, ...] | None = None) -> OptionValues:
    """Each option's value by its name: the flag given, else the table's, else the field's
    default; an option's ``off_flag`` (``--no-baseline``) sets the default whatever else
    says."""
    values: OptionValues = {}
    for opt in option_table() if options is None else options:
        if opt.off_flag and flags.get(off_dest(opt)):
            values[opt.name] = opt.default
        else:
            values[opt.name] = _pick(flags.get(opt.name), table, opt.name, opt.default)
    return values


def _part(values: OptionValues, part: str) -> OptionValues:
    """The merged values of one dataclass's options (``run``, ``gates``...)."""
    return {o.name: values[o.name] for o in option_table() if o.part == part}


def settings_from(args: argparse.Namespace, table: OptionValues | None = None, *,
                  run: bool = True) -> Settings:
    """The one :class:`Settings` of an invocation: flags > ``[tool.laya-tui]`` > defaults.

    ``args`` is the parsed command line (a run's, or ``laya-tui merge``'s, which has only the
    workspace, output and gate flags); ``table`` the validated table (:func:`load_settings`;
    read from the workspace when ``None``). Every option is merged the same way
    (:func:`merged`); the options a run resolves or checks further (probe sources,
    timeouts, jobs, models, shard, device, gates) are finished below. ``run`` resolves
    what a run needs; ``merge`` runs nothing. A bad value is a one-line UsageError,
    checked before anything runs.
    """
    flags = vars(args)
    given = flags.get("workspace") or "."
    workspace = os.path.abspath(given)
    if not os.path.isdir(workspace):
        raise UsageError(f"workspace folder does not exist: {given}")
    if table is None:
        table = load_settings(workspace)
    values = merged(flags, table)
    debounce = values["debounce_ms"]
    if debounce is not None and not (isinstance(debounce, int)
                                     and 0 <= debounce <= MAX_DEBOUNCE_MS):
        raise UsageError(f"--debounce-ms: expected a whole number of ms from 0 to "
                         f"{MAX_DEBOUNCE_MS}, got {debounce!r}")
    run_options = (_run_options(values, flags, table, workspace) if run
                   else RunOptions(workspace=workspace))
    return Settings(run=run_options, gates=_gates(values, flags, table),
                    outputs=_outputs(values), **_part(values, "settings"))


def _outputs(values: OptionValues) -> Outputs:
    """Where the report and the CI files go; ``--annotations`` (stdout) cannot share stdout
    with ``--json -``."""
    out = Outputs(**_part(values, "outputs"))
    if out.annotations and out.json == "-":
        raise UsageError("--annotations prints workflow commands on stdout, where --json - "
                         "writes the report: give --json a file path")
    return out


def _gates(values: OptionValues, flags: OptionValues, table: OptionValues) -> Gates:
    """``--fail-on`` replaces the table's list; ``--max KIND=N`` overrides that kind only."""
    fail_on: list[str] = []
    max_counts: dict[str, int] = {}
    if any((flags.get("fail_on"), flags.get("max_counts"), table.get("fail_on"),
            table.get("max_counts"))):
        from laya_tui.report.gates import parse_fail_on, parse_max

        fail_on = (parse_fail_on(flags["fail_on"]) if flags.get("fail_on")
                   else parse_fail_on(table.get("fail_on", [])))
        max_counts = parse_max(table.get("max_counts", []))  # the table's, checked when read
        max_counts.update(parse_max(flags.get("max_counts") or []))
    return Gates(**{**_part(values, "gates"), "fail_on": tuple(fail_on),
                    "max_counts": frozen_map(max_counts)})


def _run_options(values: OptionValues, flags: OptionValues, table: OptionValues,
                 workspace: str) -> RunOptions:
    """What a run needs, checked in the order the user is told about it."""
    from laya_tui.cli.project import resolve_sources

    models = list(values["models"])
    demo = bool(values["demo"])
    probes, kernels = resolve_sources(  # built-ins, own probes, demo kernels
        workspace, own=_pick(flags.get("probes"), table, "probes"),
        kernels=_pick(flags.get("kernels"), table, "kernels"), models=models, demo=demo,
        flags=frozenset(k for k in ("kernels", "demo") if flags.get(k) is not None))
    rbln_log = values["rbln_log"]
    if rbln_log and not os.path.isfile(rbln_log):
        raise UsageError(f"RBLN log file does not exist: {rbln_log}")
    timeout = values["timeout"]
    if timeout is not None and not seconds_ok(timeout):
        raise UsageError(f"--timeout: expected a finite number of seconds above 0 and at most "
                         f"{MAX_TIMEOUT_S:g}, got {timeout!r}")
    jobs = values["jobs"]
    if not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs: expected a whole number from 1 to {MAX_JOBS}, got {jobs}")
    for m in models:
        if ":" not in m:
            raise UsageError(f"--model must look like module:callable, got {m!r}")
    shard, durations_path = _shard(values)
    durations = None
    if durations_path:
        from laya_tui.report.saved import durations_from_report

        durations = durations_from_report(durations_path)
    device = values["device"]
    if device and not re.match(DEVICE_PATTERN, device):
        raise UsageError(f"--device / device = must be cpu, cuda, cuda:N, mps or rbln, "
                         f"got {device!r}")
    out = values["out"]
    envs = _envs(flags, table)
    cluster = values.get("cluster")
    if cluster:  # issue 47: checked before anything runs (laya_tui.cluster)
        from laya_tui.cluster.session import check_address

        cluster = check_address(cluster)
    return RunOptions(**{
        **_part(values, "run"),  # every option as merged; then those resolved here
        "workspace": workspace, "probes": tuple(os.path.abspath(p) for p in probes),
        "kernels": tuple(os.path.abspath(k) for k in kernels), "models": tuple(models),
        "only": tuple(values["only"] or ()), "demo": demo, "device": device or None,
        "jobs": jobs, "out": os.path.abspath(out) if out else None,
        "rbln_log": os.path.abspath(rbln_log) if rbln_log else None, "shard": shard,
        "durations_path": os.path.abspath(durations_path)
        if durations_path and durations is not None else None,
        "envs": envs, "precision_plan": _numerics_searches(flags), "cluster": cluster or None,
    }, durations=frozen_map(durations) if durations is not None else None)


def _numerics_searches(flags: OptionValues) -> bool:
    """``--[no-]precision-plan``: on by default, off by default under ``--watch`` (a failing
    save reports as fast as a passing one; ``--precision-plan`` asks for them there)."""
    asked = flags.get("precision_plan")
    return bool(asked) if asked is not None else not flags.get("watch")


def _envs(flags: OptionValues, table: OptionValues) -> tuple[Environment, ...]:
    """``--env NAME=PYTHON`` (replacing the table's ``envs``), each interpreter checked now:
    one that cannot run a worker is a UsageError before any probe runs."""
    from laya_tui.core.envs import inspect_envs, parse_env_flags

    if flags.get("envs"):
        pairs = parse_env_flags(flags["envs"], os.getcwd())
    else:
        pairs = table.get("envs") or []
    return inspect_envs(pairs)


def _shard(values: OptionValues) -> tuple[tuple[int, int] | None, str | None]:
    """``--shard K/N`` and the ``--durations REPORT`` path, checked before anything runs."""
    shard_text, durations_path = values["shard"], values["durations_path"]
    if shard_text is None:
        if durations_path:
            raise UsageError("--durations only applies with --shard K/N")
        return None, None
    from laya_tui.core.shard import parse_shard

    shard = parse_shard(shard_text)
    if values["watch"]:
        raise UsageError("--shard splits one run; it does not combine with --watch")
    return shard, durations_path or None
