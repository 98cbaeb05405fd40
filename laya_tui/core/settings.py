"""The settings of one ``laya-tui`` invocation: one frozen :class:`Settings`, built once by
the CLI (:func:`laya_tui.cli.config.settings_from`) from the flags, the ``[tool.laya-tui]``
table and the defaults (:mod:`laya_tui.core.defaults`), in that order of precedence
(docs/architecture.md, 'Gates and exit codes').

Standard library only.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from laya_tui.core.defaults import (  # noqa: F401 - re-exported: the settings' defaults
    DEFAULT_DEBOUNCE_MS,
    DEFAULT_MARGIN,
    default_jobs,
)
from laya_tui.core.envs import Environment
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


def frozen_map(mapping: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """A read-only copy of ``mapping`` (the collections inside Settings cannot change)."""
    return MappingProxyType(dict(mapping or {}))


def _empty() -> Mapping[str, Any]:
    return frozen_map()


@dataclass(frozen=True)
class Outputs:
    """Where the run's report and CI files go (``None``: not written; json ``-``: stdout)."""

    json: str | None = None
    junit: str | None = None
    markdown: str | None = None
    html: str | None = None
    trace: str | None = None
    sarif: str | None = None
    annotations: bool = False  # GitHub workflow commands on stdout

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

    fail_on: tuple[str, ...] = ()
    max_counts: Mapping[str, int] = field(default_factory=_empty)
    baseline: str | None = None  # a report path; loaded by report.gates.prepare_gates
    tolerance_margin: float = DEFAULT_MARGIN
    fail_on_env_change: bool = False  # --fail-on-env-change (laya_tui.report.envcompare)


@dataclass(frozen=True)
class RunOptions:
    """What to run and how: the runner's only input (``Runner(options)``), frozen.

    ``probes`` and ``kernels`` are resolved: built-in families and demo kernels included.
    Sequences given as lists and dicts are stored as tuples and read-only mappings.
    """

    workspace: str = "."  # absolute once built by cli.config.settings_from
    probes: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    only: tuple[str, ...] = ()
    demo: bool = False
    device: str | None = None
    timeout: float | None = None
    family_timeouts: Mapping[str, float] = field(default_factory=_empty)
    jobs: int = field(default_factory=default_jobs)
    use_cache: bool = True
    cache_dir: str | None = None
    out: str | None = None
    rbln_log: str | None = None
    kernel_args: Mapping[str, Any] = field(default_factory=_empty)
    shard: tuple[int, int] | None = None
    durations: Mapping[str, float] | None = None
    durations_path: str | None = None
    envs: tuple[Environment, ...] = ()  # --env / envs =, each checked (core.envs.inspect_env)
    #: the interpreter of the workers when no ``envs`` are given
    python: str = sys.executable
    #: cells inside a family: "longest-first" (headless: the family ends soonest) or
    #: "shortest-first" (a user watching: first results at once), by recorded durations
    order: str = "longest-first"
    #: search a verified fp32 plan after a failing bf16/fp16 eager tolerance (issue 43)
    precision_plan: bool = True

    def __post_init__(self) -> None:
        for name in ("probes", "kernels", "models", "only", "envs"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        for name in ("family_timeouts", "kernel_args", "durations"):
            value = getattr(self, name)
            if isinstance(value, dict):
                object.__setattr__(self, name, frozen_map(value))

    def options(self) -> dict[str, Any]:
        """The options probes see through ``laya_tui.api.options()`` (JSON-able)."""
        opts: dict[str, Any] = {
            "workspace": os.path.realpath(self.workspace),
            "probes": [os.path.realpath(p) for p in self.probes],
            "kernels": [os.path.realpath(p) for p in self.kernels],
            "models": list(self.models),
            "out": self.out,
            "demo": self.demo,
        }
        if self.device:
            opts["device"] = self.device
        if self.rbln_log:
            opts["rbln_log"] = self.rbln_log
        if self.kernel_args:
            opts["kernel_args"] = dict(self.kernel_args)  # [tool.laya-tui.kernel-args]
        if not self.precision_plan:  # only when off: the default keeps cache keys as they were
            opts["precision_plan"] = False
        return opts

    def timeout_for(self, probe: Mapping[str, Any]) -> float:
        """``--timeout`` wins, then the probe's own, then the table's per-family value,
        then the family default."""
        if self.timeout is not None:
            return self.timeout
        if probe.get("timeout"):
            return float(probe["timeout"])
        fam = probe.get("family", "")
        return float(self.family_timeouts.get(fam, DEFAULT_TIMEOUTS.get(fam, FALLBACK_TIMEOUT)))


@dataclass(frozen=True)
class Settings:
    """Everything one invocation was told, merged: flags > ``[tool.laya-tui]`` > defaults."""

    run: RunOptions = field(default_factory=RunOptions)
    gates: Gates = field(default_factory=Gates)
    outputs: Outputs = field(default_factory=Outputs)
    headless: bool = False  # --headless as given (see laya_tui.cli.main.wants_headless)
    list_only: bool = False  # --list
    watch: bool = False
    debounce_ms: int | None = None  # --debounce-ms (None: the watcher's default)
    quiet: bool = False

    @property
    def workspace(self) -> str:
        """The workspace folder (absolute): the run options'."""
        return self.run.workspace
