"""Gates decide what fails CI; signals themselves carry no severity (DESIGN §3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GateSettings:
    """Which gates apply. Defaults: crashes, timeouts, probe errors, failed tolerances."""

    fail_on_crash: bool = True
    fail_on_timeout: bool = True
    fail_on_error: bool = True
    fail_on_tolerance: bool = True
    fail_on: list[str] = field(default_factory=list)
    max_counts: dict[str, int] = field(default_factory=dict)


def _gate(name: str, description: str, failures: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "description": description, "passed": not failures,
            "failures": failures}


def evaluate_gates(probes: list[dict[str, Any]], settings: GateSettings | None = None,
                   errors: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Evaluate the gates over finished probe results; one entry per gate."""
    s = settings or GateSettings()
    gates = []
    if s.fail_on_crash:
        gates.append(_gate("no-crash", "no probe crashed its worker",
                           [{"probe": p["id"], "reason": p.get("reason")}
                            for p in probes if p["status"] == "crashed"]))
    if s.fail_on_timeout:
        gates.append(_gate("no-timeout", "no probe ran past its timeout",
                           [{"probe": p["id"], "reason": p.get("reason")}
                            for p in probes if p["status"] == "timeout"]))
    if s.fail_on_error:
        gates.append(_gate("no-probe-error", "no probe raised an unexpected exception",
                           [{"probe": p["id"], "reason": p.get("reason")}
                            for p in probes if p.get("error")]))
    if s.fail_on_tolerance:
        fails = [{"probe": p["id"], "subject": sig.get("subject"), "value": sig.get("value"),
                  "limit": sig.get("limit")}
                 for p in probes for sig in p.get("signals", [])
                 if sig.get("kind") == "tolerance" and sig.get("passed") is False]
        gates.append(_gate("tolerance", "every compared output is within its limit", fails))
    for kind in s.fail_on:
        fails = [{"probe": p["id"], "subject": sig.get("subject"), "reason": sig.get("reason")}
                 for p in probes for sig in p.get("signals", []) if sig.get("kind") == kind]
        gates.append(_gate(f"fail-on:{kind}", f"no {kind} signal", fails))
    for kind, limit in s.max_counts.items():
        total = sum(int(sig.get("count", 1)) for p in probes for sig in p.get("signals", [])
                    if sig.get("kind") == kind)
        fails = [] if total <= limit else [{"kind": kind, "count": total, "limit": limit}]
        gates.append(_gate(f"max:{kind}", f"at most {limit} {kind} occurrences", fails))
    if errors:
        gates.append(_gate("probe-files", "every probe file imports",
                           [{"file": e["file"], "reason": e["error"]} for e in errors]))
    return gates
