"""The settings of one ``laya-tui`` invocation: one frozen :class:`Settings`, built once by
the CLI (:func:`laya_tui.cli.config.settings_from`) from the flags, the ``[tool.laya-tui]``
table and the defaults (:mod:`laya_tui.core.defaults`), in that order of precedence
(docs/architecture.md, 'Gates and exit codes').

Standard library only.
"""

from __future__ import annotations

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
    """What to run and how; :func:`laya_tui.cli.config.run_config` maps it onto a RunConfig.

    ``probes`` and ``kernels`` are resolved: built-in families and demo kernels included.
    """

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


@dataclass(frozen=True)
class Settings:
    """Everything one invocation was told, merged: flags > ``[tool.laya-tui]`` > defaults."""

    workspace: str  # absolute
    run: RunOptions = field(default_factory=RunOptions)
    gates: Gates = field(default_factory=Gates)
    outputs: Outputs = field(default_factory=Outputs)
    headless: bool = False  # --headless as given (see laya_tui.cli.main.wants_headless)
    list_only: bool = False  # --list
    watch: bool = False
    debounce_ms: int | None = None  # --debounce-ms (None: the watcher's default)
    quiet: bool = False
