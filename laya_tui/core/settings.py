"""The settings of one ``laya-tui`` invocation: one frozen :class:`Settings`, built once by
the CLI (:func:`laya_tui.cli.config.settings_from`) from the flags, the ``[tool.laya-tui]``
table and the defaults (:mod:`laya_tui.core.defaults`), in that order of precedence
(docs/architecture.md, 'Gates and exit codes').

**The option table.** Each field declared with :func:`~laya_tui.core.options.option` is an
option, declared here once: its type and default are the field's; its flag, table key,
help line, template example and check (its ``kind``) are the ``option(...)`` arguments.
The flags, ``--help``, the table's validation and merge and the ``laya-tui init`` template
are derived from them (``laya_tui.cli.options``); ``tests/test_options.py`` checks they
agree. The ``--help`` order is the fields' order here, by ``group``.

Standard library only.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Never, TypeVar

# the settings' defaults, re-exported ("as": explicitly, for mypy's no_implicit_reexport)
from laya_tui.core.defaults import DEFAULT_DEBOUNCE_MS as DEFAULT_DEBOUNCE_MS
from laya_tui.core.defaults import DEFAULT_MARGIN as DEFAULT_MARGIN
from laya_tui.core.defaults import default_jobs as default_jobs
from laya_tui.core.envs import Environment
from laya_tui.core.open_types import ProbeOptions as ProbeOptions  # its home before
from laya_tui.core.options import option, options_of
from laya_tui.core.protocol import DEFAULT_TIMEOUTS, FALLBACK_TIMEOUT

#: the longest per-probe timeout a flag or the table may ask for (a week: beyond that a
#: number is a typo, and event-loop timers overflow long before ``inf``)
MAX_TIMEOUT_S = 7 * 24 * 3600.0
#: the longest watch debounce, in milliseconds (ten minutes)
MAX_DEBOUNCE_MS = 600_000
#: the most families run at once (``--jobs``)
MAX_JOBS = 256


def check_seconds(value: float) -> float:
    """``value`` when it is a finite number of seconds in (0, :data:`MAX_TIMEOUT_S`], else a
    ValueError saying what is expected (``nan``, ``inf``, 0 and negatives are refused)."""
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
        raise ValueError(f"expected a finite number of seconds above 0 and at most "
                         f"{MAX_TIMEOUT_S:g}")
    return float(value)




_V = TypeVar("_V")


def frozen_map(mapping: Mapping[str, _V] | None = None) -> Mapping[str, _V]:
    """A read-only copy of ``mapping`` (the collections inside Settings cannot change)."""
    return MappingProxyType(dict(mapping or {}))


def _empty() -> Mapping[str, Never]:  # empty: fits a mapping of any value type
    return frozen_map()


def _freeze(obj: object) -> None:
    """Store a frozen dataclass's lists as tuples and its dicts as read-only mappings."""
    for f in fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if isinstance(value, list):
            object.__setattr__(obj, f.name, tuple(value))
        elif isinstance(value, dict):
            object.__setattr__(obj, f.name, frozen_map(value))


@dataclass(frozen=True)
class Outputs:
    """Where the run's report and CI files go (``None``: not written; json ``-``: stdout)."""

    json: str | None = option(
        flags=("--json",), kind="path-or-stdout", metavar="PATH", group="top",
        help="write the JSON report to PATH (or '-' for stdout)")
    junit: str | None = option(
        flags=("--junit",), key="junit", kind="path", metavar="PATH", group="ci",
        example='"out/junit.xml"', help="also write JUnit XML (one case per cell)")
    markdown: str | None = option(
        flags=("--markdown",), key="markdown", kind="path", metavar="PATH", group="ci",
        example='"out/summary.md"',
        help="also write a markdown summary (appended to $GITHUB_STEP_SUMMARY when set)")
    html: str | None = option(
        flags=("--html",), kind="path", metavar="PATH", group="ci",
        help="also write a self-contained HTML page of the report")
    trace: str | None = option(
        flags=("--trace",), kind="path", metavar="PATH", group="ci",
        help="also write the run's timeline as Chrome trace JSON (Perfetto)")
    sarif: str | None = option(
        flags=("--sarif",), key="sarif", kind="path", metavar="PATH", group="ci",
        example='"out/findings.sarif"',
        help="also write the findings as SARIF 2.1.0 (GitHub code scanning)")
    annotations: bool = option(  # GitHub workflow commands on stdout
        False, flags=("--annotations",), key="annotations", kind="bool", group="ci",
        example="true", help="print the most important findings as GitHub workflow commands "
        "(annotations on the pull request's lines)")

    def __post_init__(self) -> None:
        _freeze(self)

    def by_flag(self) -> dict[str, str | None]:
        """``{"--json": path, "--junit": path, ...}`` in flag order (for messages)."""
        return {"--json": self.json, "--junit": self.junit, "--markdown": self.markdown,
                "--html": self.html, "--trace": self.trace, "--sarif": self.sarif}

    def ci_files(self) -> bool:
        """True when a CI file (or annotation) beside the JSON report is asked for."""
        return any((self.junit, self.markdown, self.html, self.trace, self.sarif,
                    self.annotations))


@dataclass(frozen=True)
class Gates:
    """Which optional gates apply (the default gates always do); kinds already checked."""

    baseline: str | None = option(  # a report path; loaded by report.gates.prepare_gates
        flags=("--baseline",), key="baseline", kind="path", metavar="PATH", group="ci",
        example='"ci/baseline.json"',
        help="compare with an earlier --json report; any regression fails",
        off_flag="--no-baseline",
        off_help="ignore the baseline set in pyproject.toml (to write a fresh one)")
    fail_on: tuple[str, ...] = option(
        (), flags=("--fail-on",), key="fail-on", kind="signal-kinds",
        metavar="KIND[,KIND...]", group="ci", example='["host_bounce"]',
        help="fail on any occurrence of KIND (a signal kind, or failed/skipped)",
        note="fail on any occurrence of these kinds (signal kinds, or failed/skipped)")
    max_counts: Mapping[str, int] = option(
        default_factory=_empty, flags=("--max",), key="max", kind="kind-counts",
        metavar="KIND=N", group="ci", example="{ recompile = 4 }",
        help="fail on more than N occurrences of KIND (repeatable)",
        note="fail on more than N occurrences of a kind")
    fail_on_env_change: bool = option(  # laya_tui.report.envcompare
        False, flags=("--fail-on-env-change",), key="fail-on-env-change", kind="switch",
        group="ci", example="true",
        help="with several --env: fail when a later environment is worse than the first (a "
        "cell no longer ok, new fallbacks/recompiles, a lowering or tolerance check that now "
        "fails)")
    tolerance_margin: float = option(
        DEFAULT_MARGIN, key="tolerance-margin", kind="ratio", example="0.5",
        note="a tolerance value moved (a baseline regression, laya-tui diff) when it got worse "
        "or better by more than this fraction")

    def __post_init__(self) -> None:
        _freeze(self)


@dataclass(frozen=True)
class RunOptions:
    """What to run and how: the runner's only input (``Runner(options)``), frozen.

    ``probes`` and ``kernels`` are resolved: built-in families and demo kernels included.
    Sequences given as lists and dicts are stored as tuples and read-only mappings.
    """

    probes: tuple[str, ...] = option(
        (), flags=("--probes",), key="probes", kind="paths", metavar="PATH",
        example='["probes"]',
        help="probe file or folder beside the built-in ones (repeatable; default: ./probes)",
        note="folders of your own @probe files, run beside the built-in families "
        "(default: probes/)")
    kernels: tuple[str, ...] = option(
        (), flags=("--kernels",), key="kernels", kind="paths", metavar="DIR",
        example='["kernels"]',
        help="TileLang kernel folder or one kernel file (repeatable; default: ./kernels)",
        note="folders of TileLang kernel files (@tilelang.jit functions or kernel factories)")
    models: tuple[str, ...] = option(
        (), flags=("--model",), key="models", kind="strings", metavar="MODULE:CALLABLE",
        example='["mypkg.models:build"]',
        help="model for the explain/aoti probes, imported from the workspace: a callable "
        "returning (model, inputs)",
        note='models for the explain and aoti families: "module:callable" returning (model, '
        "inputs), imported from this folder")
    demo: bool = option(
        False, flags=("--demo",), key="demo", kind="bool", example="false",
        help="also run the built-in demo (tiny Llama/ModernBERT, decision model, MLX encoder, "
        "five TileLang kernels); default: [tool.laya-tui] demo",
        note="the built-in demo: tiny Llama/ModernBERT, a decision model, an MLX encoder, "
        "five kernels")
    device: str | None = option(
        flags=("--device",), key="device", kind="device", metavar="DEV", example='"cpu"',
        probes_see=True,
        help="where explain models run: cpu, cuda, cuda:N, mps, rbln (default: the "
        "accelerator when present)")
    #: --env / envs =, each checked (core.envs.inspect_env)
    envs: tuple[Environment, ...] = option(
        (), flags=("--env",), key="envs", kind="envs", metavar="NAME=PYTHON",
        example='{ old = ".venv-old/bin/python", new = ".venv/bin/python" }',
        help="run every cell once per environment, in workers started with that Python "
        "(repeatable; ids get @NAME; the first is the reference; also envs = {...} in "
        "[tool.laya-tui])",
        note="run every cell once per environment, in workers started with that Python (ids "
        "get @NAME; the first is the reference)")
    only: tuple[str, ...] = option(
        (), flags=("--only",), kind="strings", metavar="GLOB",
        help="run only probe ids matching GLOB (repeatable; '[' is literal)")
    timeout: float | None = option(
        flags=("--timeout",), key="timeout", kind="seconds", metavar="SECONDS", example="600",
        help="per-probe timeout for every family (default: per family)")
    family_timeouts: Mapping[str, float] = option(
        default_factory=_empty, key="timeouts", kind="family-seconds",
        example="{ tilelang = 240 }", note="per-probe timeout of one family, in seconds")
    jobs: int = option(
        default_factory=default_jobs, flags=("--jobs",), key="jobs", kind="jobs",
        metavar="N", example="2",
        help="families run at once, one warm worker each, with the cores // N intra-op "
             "threads unless OMP_NUM_THREADS is set (default: {default})",
        note="families run at once, one warm worker each, with the cores // N intra-op "
             "threads (default: 2, 1 on one core)")
    use_cache: bool = option(
        True, flags=("--no-cache",), kind="off-switch", help="run every probe, ignore the cache")
    cache_dir: str | None = option(
        flags=("--cache-dir",), kind="path", metavar="DIR", help="result cache folder")
    out: str | None = option(
        flags=("--out",), kind="path", metavar="DIR",
        help="folder for artifacts (packages, generated source); default: cache")
    workspace: str = option(  # absolute once built by cli.config.settings_from
        ".", flags=("--workspace",), kind="path", metavar="DIR",
        help="workspace root (default: the current folder)")
    #: search a verified fp32 plan after a failing bf16/fp16 eager tolerance (issue 43)
    precision_plan: bool = option(
        True, flags=("--precision-plan",), kind="bool", probes_see=True,
        help="after a failing bf16/fp16 eager tolerance, search the modules to keep in fp32 "
        "and verify the plan; after a TileLang kernel fails its file's check, the pass option "
        "that restores it; after a compile cell fails, torch's compiler bisector (bounded; "
        "default: on, off under --watch)")
    #: the gap table for passing explain cells too (issue 43; a failing one always gets it)
    numerics: bool = option(
        False, flags=("--numerics",), kind="switch", probes_see=True,
        help="the gap table (each module's error and its own error against fp32) for every "
        "explain or AOTI cell compared with fp32, passing ones too (a failing one gets it unless "
        "--no-precision-plan; compile cells compiled module by module); fp32 records kept in "
        "LAYA_TUI_NUMERICS_MB (256) of memory, spilled to disk beyond")
    rbln_log: str | None = option(
        flags=("--rbln-log",), kind="path", metavar="PATH", probes_see=True,
        help="an RBLN runtime log (TORCH_RBLN_LOG_LEVEL=INFO) to merge as fallbacks")
    # [tool.laya-tui.kernel-args."file.py::kernel"]: argument = value, per kernel
    kernel_args: Mapping[str, Mapping[str, object]] = option(
        default_factory=_empty, key="kernel-args", kind="kernel-args", probes_see=True,
        example='{ "kernels/gemm.py::matmul" = { M = 1024, N = 1024, K = 1024 } }',
        note="arguments to build a kernel factory with, per kernel file and function")
    shard: tuple[int, int] | None = option(
        flags=("--shard",), kind="shard", metavar="K/N",
        help="run only the K-th of N balanced, disjoint parts of the selected cells (merge the "
        "parts' reports with 'laya-tui merge')")
    durations_path: str | None = option(
        flags=("--durations",), kind="path", metavar="REPORT",
        help="--shard: balance by the probe seconds of this earlier report (give every machine "
        "the same file and they agree on the split)")
    #: issue 47: run the cells on a Ray cluster (laya_tui.cluster, docs/cluster.md)
    cluster: str | None = option(
        flags=("--cluster",), key="cluster", kind="string", metavar="ADDRESS",
        example='"auto"',
        help="run the cells on a Ray cluster, each on a node offering what it needs: "
        "host:port of a head, ray://host:10001, auto, or local (docs/cluster.md)")
    #: the probe seconds read from ``durations_path``
    durations: Mapping[str, float] | None = None
    #: the interpreter of the workers when no ``envs`` are given
    python: str = sys.executable
    #: cells inside a family: "longest-first" (headless: the family ends soonest) or
    #: "shortest-first" (a user watching: first results at once), by recorded durations
    order: str = "longest-first"

    def __post_init__(self) -> None:
        _freeze(self)

    def options(self) -> ProbeOptions:
        """The options probes see through ``laya_tui.api.options()`` (JSON-able)."""
        opts: ProbeOptions = {
            "workspace": os.path.realpath(self.workspace),
            "probes": [os.path.realpath(p) for p in self.probes],
            "kernels": [os.path.realpath(p) for p in self.kernels],
            "models": list(self.models),
            "out": self.out,
            "demo": self.demo,
        }
        for opt in options_of("run", RunOptions):  # the rest only when not the default
            value = getattr(self, opt.name)  # (so cache keys stay as they were)
            if opt.probes_see and value != opt.default:
                opts[opt.name] = (dict(value) if isinstance(value, Mapping)
                                  else list(value) if isinstance(value, tuple) else value)
        return opts

    def timeout_for(self, probe: Mapping[str, object]) -> float:
        """``--timeout`` wins, then the probe's own, then the table's per-family value,
        then the family default."""
        if self.timeout is not None:
            return self.timeout
        own = probe.get("timeout")
        if own and isinstance(own, int | float):
            return float(own)
        fam = str(probe.get("family", ""))
        return float(self.family_timeouts.get(fam, DEFAULT_TIMEOUTS.get(fam, FALLBACK_TIMEOUT)))


@dataclass(frozen=True)
class Settings:
    """Everything one invocation was told, merged: flags > ``[tool.laya-tui]`` > defaults."""

    run: RunOptions = field(default_factory=RunOptions)
    gates: Gates = field(default_factory=Gates)
    outputs: Outputs = field(default_factory=Outputs)
    headless: bool = option(  # as given (see laya_tui.cli.main.wants_headless)
        False, flags=("--headless",), kind="switch", group="top",
        help="no dashboard: run, print a summary to stderr (implied without a TTY)")
    list_only: bool = option(
        False, flags=("--list",), kind="switch", group="top",
        help="print probe ids and exit (runs nothing)")
    watch: bool = option(
        False, flags=("--watch",), kind="switch",
        help="re-run the probes whose files change (headless: a JSON line per re-run)")
    debounce_ms: int | None = option(  # None: the watcher's default
        flags=("--debounce-ms",), kind="ms", metavar="MS",
        help=f"watch: let a burst of saves settle this long (default: {DEFAULT_DEBOUNCE_MS})")
    quiet: bool = option(
        False, flags=("--quiet", "-q"), kind="switch", help="headless: no progress lines")

    @property
    def workspace(self) -> str:
        """The workspace folder (absolute): the run options'."""
        return self.run.workspace
