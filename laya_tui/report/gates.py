"""Gates decide what fails CI; signals themselves carry no severity (docs/architecture.md,
'Gates and exit codes').

Default gates: no probe crashed, timed out or raised, every compared output is within its
limit, and every probe file imports. ``--fail-on KIND`` fails on any occurrence of KIND,
``--max KIND=N`` on more than N occurrences, ``--baseline`` on any regression against an
earlier report (see :mod:`laya_tui.report.baseline`).

Occurrences: a fallback/recompile/compile/host_bounce/cast signal counts ``count`` times (1
when absent; ``compile`` is a frame's first compile, never counted as a ``recompile``); a
tolerance or lowering signal counts only when it failed (``passed: false``); the statuses
``failed`` and ``skipped`` count probes; every other kind counts its signals.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from laya_tui.core.errors import UsageError
from laya_tui.core.report_types import (
    EnvInfoDict,
    FileErrorDict,
    GateDict,
    GateFailure,
    ReportSections,
    ResultDict,
)
from laya_tui.core.results import (
    CHECK_KINDS,
    COUNTED_KINDS,
    occurrences,
    upgrade_compile_signals,
)
from laya_tui.core.settings import DEFAULT_MARGIN, Settings, frozen_map
from laya_tui.core.signals import DEFAULT_GATE_KINDS, KINDS
from laya_tui.report.verdict import STATUS_KINDS, describe_failure

if TYPE_CHECKING:
    from laya_tui.report.baseline import Baseline

GATE_KINDS: tuple[str, ...] = KINDS + STATUS_KINDS


@dataclass(frozen=True)
class GateSettings:
    """The gates a report is evaluated with (made from :class:`Settings` by
    :func:`prepare_gates`), frozen. Defaults: crashes, timeouts, probe errors, failed
    tolerances. Lists given are kept as tuples, dicts as read-only maps."""

    fail_on_crash: bool = True
    fail_on_timeout: bool = True
    fail_on_error: bool = True
    fail_on_tolerance: bool = True
    fail_on: tuple[str, ...] = ()
    max_counts: Mapping[str, int] = field(default_factory=lambda: frozen_map())
    baseline: Baseline | None = None  # loaded before any probe runs
    tolerance_margin: float = DEFAULT_MARGIN
    fail_on_env_change: bool = False  # the env-change gate (laya_tui.report.envcompare)
    #: --env: the report's "envs" object
    envs: Mapping[str, EnvInfoDict] = field(default_factory=lambda: frozen_map())

    def __post_init__(self) -> None:
        if not isinstance(self.fail_on, tuple):
            object.__setattr__(self, "fail_on", tuple(self.fail_on))
        for name in ("max_counts", "envs"):
            if isinstance(getattr(self, name), dict):
                object.__setattr__(self, name, frozen_map(getattr(self, name)))

    def kinds_read(self) -> frozenset[str] | None:
        """The signal kinds these gates read, or None when they read every signal (a
        baseline or the env-change gate compares them all). A consumer that keeps only
        these kinds gets the same verdict (the dashboard's summary does)."""
        if self.baseline is not None or self.fail_on_env_change:
            return None
        return DEFAULT_GATE_KINDS | frozenset(self.fail_on) | frozenset(self.max_counts)


def parse_fail_on(values: Iterable[str], source: str = "--fail-on") -> list[str]:
    """``["fallback,recompile", "lowering"]`` -> ``["fallback", "recompile", "lowering"]``."""
    out: list[str] = []
    for value in values:
        for kind in (k.strip() for k in str(value).split(",")):
            if not kind:
                continue
            if kind not in GATE_KINDS:
                raise UsageError(f"{source}: unknown kind {kind!r} (one of "
                                 f"{', '.join(GATE_KINDS)})")
            if kind not in out:
                out.append(kind)
    return out


def parse_max(values: Iterable[str], source: str = "--max") -> dict[str, int]:
    """``["fallback=3,recompile=0"]`` -> ``{"fallback": 3, "recompile": 0}``; later wins."""
    out: dict[str, int] = {}
    for value in values:
        for item in (i.strip() for i in str(value).split(",")):
            if not item:
                continue
            kind, sep, num = item.partition("=")
            kind = kind.strip()
            if not sep or not num.strip().isdigit():
                raise UsageError(f"{source}: expected KIND=N with N a whole number >= 0, "
                                 f"got {item!r}")
            if kind not in GATE_KINDS:
                raise UsageError(f"{source}: unknown kind {kind!r} (one of "
                                 f"{', '.join(GATE_KINDS)})")
            out[kind] = int(num)
    return out


def prepare_gates(settings: Settings) -> GateSettings:
    """The gates of a run or a merge, with every CI input and output checked before any probe
    runs (bad input loses nothing): outputs writable and distinct, the baseline loaded."""
    from laya_tui.core.files import check_output_dir, check_output_path

    seen: dict[str, str] = {}
    for flag, path in settings.outputs.by_flag().items():
        if not path or path == "-":
            continue
        check_output_path(path, flag)
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{seen[real]} and {flag} name the same file: {path}")
        seen[real] = flag
    check_output_dir(settings.run.out, "--out")
    g = settings.gates
    baseline = None
    if g.baseline:
        from laya_tui.report.baseline import load_baseline

        baseline = load_baseline(g.baseline)
    return GateSettings(fail_on=g.fail_on, max_counts=g.max_counts, baseline=baseline,
                        tolerance_margin=g.tolerance_margin,
                        fail_on_env_change=g.fail_on_env_change,
                        envs={e.name: e.info() for e in settings.run.envs})


def _gate(name: str, description: str, failures: list[GateFailure]) -> GateDict:
    return {"name": name, "description": description, "passed": not failures,
            "failures": failures}


def _kind_failures(probes: list[ResultDict], kind: str) -> list[GateFailure]:
    if kind in STATUS_KINDS:
        return [{"probe": p["id"], "status": p["status"], "reason": p.get("reason")}
                for p in probes if p["status"] == kind]
    out = []
    for p in probes:
        for sig in p.get("signals", []):
            if sig.get("kind") == kind and occurrences(sig):
                entry: GateFailure = {"probe": p["id"], "kind": kind,
                                         "subject": sig.get("subject"),
                         "reason": sig.get("reason")}
                if kind in COUNTED_KINDS:
                    entry["count"] = occurrences(sig)
                out.append({k: v for k, v in entry.items() if v is not None})
    return out


def _max_failure(probes: list[ResultDict], kind: str, limit: int) -> list[GateFailure]:
    by_probe: dict[str, int] = {}
    if kind in STATUS_KINDS:
        for p in probes:
            if p["status"] == kind:
                by_probe[p["id"]] = 1
    else:
        for p in probes:
            n = sum(occurrences(s) for s in p.get("signals", []) if s.get("kind") == kind)
            if n:
                by_probe[p["id"]] = n
    total = sum(by_probe.values())
    if total <= limit:
        return []
    top = dict(sorted(by_probe.items(), key=lambda kv: (-kv[1], kv[0]))[:10])
    return [{"kind": kind, "count": total, "limit": limit, "by_probe": top}]


def evaluate_gates(probes: list[ResultDict], settings: GateSettings | None = None,
                   errors: Sequence[FileErrorDict] | None = None) -> list[GateDict]:
    """Evaluate the threshold gates over finished probe results; one entry per gate.

    The baseline gate is added by :func:`evaluate_all` (it also yields a report section).
    """
    s = settings or GateSettings()
    gates: list[GateDict] = []
    if s.fail_on_crash:
        gates.append(_gate("no-crash", "no probe crashed its worker",
                           [{"probe": p["id"], "reason": p.get("reason")}
                            for p in probes if p["status"] == "crashed"]))
    if s.fail_on_timeout:
        gates.append(_gate("no-timeout", "no probe ran past its timeout",
                           [{"probe": p["id"], "reason": p.get("reason")}
                            for p in probes if p["status"] == "timeout"]))
    if s.fail_on_error:
        gates.append(_gate("no-probe-error", "every probe examined its subject (none raised "
                           "or could not examine it)",
                           [{"probe": p["id"], "reason": p.get("reason")}
                            for p in probes if p.get("error") or p["status"] == "error"]))
    if s.fail_on_tolerance:
        fails, n = [], 0
        for p in probes:
            for sig in p.get("signals", []):
                if sig.get("kind") == "tolerance":
                    n += 1
                    if sig.get("passed") is False:
                        fails.append({"probe": p["id"], "subject": sig.get("subject"),
                                      "value": sig.get("value"), "limit": sig.get("limit")})
        gate = _gate("tolerance", "every compared output is within its limit"
                     + ("" if n else ": nothing was compared"), fails)
        gate["compared"] = n  # a pass with nothing compared says so (report.verdict)
        gates.append(gate)
    for kind in s.fail_on:
        what = f"probe {kind}" if kind in STATUS_KINDS else (
            f"failing {kind} signal" if kind in CHECK_KINDS else f"{kind} signal")
        gates.append(_gate(f"fail-on:{kind}", f"no {what}", _kind_failures(probes, kind)))
    for kind, limit in s.max_counts.items():
        gates.append(_gate(f"max:{kind}", f"at most {limit} {kind} occurrences",
                           _max_failure(probes, kind, limit)))
    if errors:
        gates.append(_gate("probe-files", "every probe file imports",
                           [{"file": e["file"], "reason": e["error"]} for e in errors]))
    return gates


def evaluate_all(probes: list[ResultDict], settings: GateSettings | None = None,
                 errors: Sequence[FileErrorDict] | None = None
                 ) -> tuple[list[GateDict], ReportSections]:
    """Every gate, baseline included; returns ``(gates, extra report sections)``."""
    s = settings or GateSettings()
    upgrade_compile_signals(probes)  # results cached by an older laya-tui
    gates = evaluate_gates(probes, s, errors)
    extra: ReportSections = {}
    if s.baseline is not None:
        from laya_tui.report.baseline import baseline_gate, compare

        section = compare(s.baseline, probes, margin=s.tolerance_margin)
        gates.append(baseline_gate(section))
        extra["baseline"] = section
    if s.envs or s.fail_on_env_change or any(p.get("env") for p in probes):
        from laya_tui.report.envcompare import compare_envs, env_change_gate, envs_report

        env_section = compare_envs(probes, s.envs, margin=s.tolerance_margin)
        if s.fail_on_env_change:
            gates.append(env_change_gate(env_section))
        if s.envs:
            extra["envs"] = envs_report(s.envs, probes)
        if env_section is not None:
            extra["env_comparison"] = env_section
    return gates, extra


def failures_by_probe(gates: Sequence[GateDict]) -> dict[str, list[tuple[str, str]]]:
    """``{probe id: [(gate name, one-line description), ...]}`` over every failed gate."""
    out: dict[str, list[tuple[str, str]]] = {}
    for g in gates:
        for entry in g.get("failures", []):
            pid = entry.get("probe") if isinstance(entry, dict) else None
            if pid:
                out.setdefault(pid, []).append((g["name"], describe_failure(g["name"], entry)))
    return out
