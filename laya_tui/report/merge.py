"""``laya-tui merge A.json B.json ... --json OUT``: one report from shard and host reports.

Every probe appears once, tagged with the host it ran on; each input's environment is kept
under ``hosts`` (inputs from one machine with the same libraries share a host); the gates
(defaults, ``--fail-on``, ``--max``, ``--baseline``, and ``[tool.laya-tui]`` of the
workspace) are evaluated over the whole. A probe present in two inputs merges silently
when the results agree (status, reason, and every signal apart from timing and
machine-specific facts: seconds, timing/artifact/log values, call-site folders, details);
otherwise it is an input error (exit 2) unless ``--prefer newest``. When inputs are shards
(``--shard K/N``), the ``shards`` gate checks that every part of each split is present.
Inputs must carry this laya-tui's report schema. A merged report can be merged again.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict, cast

from laya_tui.core.errors import UsageError
from laya_tui.core.jsonfast import dumps_strict
from laya_tui.core.open_types import HostFacts
from laya_tui.core.report_types import (
    EnvInfoDict,
    FileErrorDict,
    GateDict,
    MergedInputDict,
    ReportDict,
    ResultDict,
    SignalDict,
)
from laya_tui.core.shapes import as_dict
from laya_tui.core.signals import SCHEMA_ID

if TYPE_CHECKING:
    from laya_tui.report.gates import GateSettings

#: Signal kinds whose values are measurements or paths of one run (never a conflict).
VOLATILE_KINDS = frozenset(("timing", "artifact", "log"))


@dataclass
class Input:
    """One report given to merge."""

    label: str  # the path as given ('-' is stdin)
    doc: ReportDict


def _read_text(path: str, what: str) -> str:
    if path == "-":
        return sys.stdin.read()
    if os.path.isdir(path):
        raise UsageError(f"{what} {path} is a folder, not a laya-tui report")
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        raise UsageError(f"{what} {path} does not exist") from None
    except UnicodeDecodeError:
        raise UsageError(f"{what} {path} is not a laya-tui report (not UTF-8 JSON)") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def load_report(path: str, what: str = "report", any_readable: bool = False) -> ReportDict:
    """Read and check a laya-tui report; every problem is a one-line UsageError.

    The checks are the baseline loader's (one validation for every reader of a report),
    worded for ``what``. ``any_readable`` accepts every schema in ``READABLE_SCHEMAS``;
    otherwise only this laya-tui's own (merge never mixes report versions).
    """
    from laya_tui.report.baseline import parse_baseline

    text = _read_text(path, what)
    try:
        doc = parse_baseline(text, path).report
    except UsageError as exc:
        message = str(exc).replace(f"baseline {path}", f"{what} {path}")
        raise UsageError(message.replace("regenerate the baseline", "regenerate it")
                         .replace("regenerate it with laya-tui --headless --json",
                                  "regenerate it")) from None
    if not any_readable and doc["schema"] != SCHEMA_ID:
        raise UsageError(f"{what} {path} has schema {doc['schema']}; this laya-tui merges only "
                         f"{SCHEMA_ID}: re-run it with this laya-tui")
    return doc


# -- identity of a result -------------------------------------------------------------------

def _signal_fingerprint(sig: SignalDict) -> tuple[object, ...]:
    kind = sig.get("kind")
    if kind in VOLATILE_KINDS:
        return (kind, sig.get("subject"))
    site = as_dict(sig.get("site"))
    return (kind, sig.get("subject"), sig.get("reason"), sig.get("count"), sig.get("bytes"),
            sig.get("passed"), sig.get("limit"), sig.get("fix"),
            json.dumps(sig.get("value"), sort_keys=True, default=repr),
            os.path.basename(str(site.get("file") or "")), site.get("line"), site.get("func"))


def result_fingerprint(probe: ResultDict) -> tuple[object, ...]:
    """What must agree for two copies of a probe to be the same result (see module doc)."""
    err = as_dict(probe.get("error"))
    sigs = Counter(_signal_fingerprint(s) for s in probe.get("signals", []))
    return (probe.get("family"), probe.get("status"), probe.get("reason"), err.get("type"),
            err.get("message"), frozenset(sigs.items()))


def _describe(probe: ResultDict) -> str:
    reason = " ".join(str(probe.get("reason") or "").split())
    return str(probe["status"]) + (f": {reason[:100]}" if reason else "")


# -- hosts ------------------------------------------------------------------------------------

def _host_identity(env: HostFacts) -> str:
    """Environments that differ only in env-probe facts come from the same host."""
    return json.dumps({k: v for k, v in env.items() if k != "probed"}, sort_keys=True,
                      default=repr)


def _env_identity(info: Mapping[str, object]) -> str:
    return json.dumps(info.get("versions"), sort_keys=True, default=repr)


def _env_text(info: Mapping[str, object]) -> str:
    raw = info.get("versions")
    v = raw if isinstance(raw, dict) else {}
    return ", ".join(f"{k} {v[k]}" for k in ("python", "torch", "tilelang") if v.get(k))


def _hostname(env: HostFacts, label: str) -> str:
    host = as_dict(env.get("host"))
    name = host.get("hostname")
    if isinstance(name, str) and name:
        return name
    base = os.path.basename(label)
    return base.rsplit(".", 1)[0] if base and base != "-" else "stdin"


@dataclass
class Merger:
    """Accumulates inputs into one set of probes, hosts and input records."""

    prefer: str | None = None
    hosts: dict[str, HostFacts] = field(default_factory=dict)
    chosen: dict[str, tuple[ResultDict, int]] = field(default_factory=dict)
    inputs: list[Input] = field(default_factory=list)
    records: list[MergedInputDict] = field(default_factory=list)
    errors: list[FileErrorDict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    envs: dict[str, EnvInfoDict] = field(default_factory=dict)  # --env: name -> info
    _env_from: dict[str, int] = field(default_factory=dict)  # name -> input index

    def _add_host(self, name: str, env: HostFacts) -> str:
        ident = _host_identity(env)
        candidate, n = name, 1
        while candidate in self.hosts:
            known = self.hosts[candidate]
            if _host_identity(known) == ident:
                probed = env.get("probed")
                if isinstance(probed, dict):  # union of the env-probe facts, first wins
                    known["probed"] = {**probed, **(known.get("probed") or {})}
                return candidate
            n += 1
            candidate = f"{name}#{n}"
        self.hosts[candidate] = json.loads(json.dumps(env, default=repr))
        return candidate

    def add(self, inp: Input) -> None:
        """Merge one input; a conflicting probe is a UsageError (unless prefer=newest)."""
        doc, idx = inp.doc, len(self.inputs)
        self.inputs.append(inp)
        default = _hostname(doc["environment"], inp.label)
        in_hosts = doc.get("hosts")
        if not (isinstance(in_hosts, dict) and in_hosts):
            in_hosts = {default: doc["environment"]}
        rename = {old: self._add_host(old, env) for old, env in in_hosts.items()
                  if isinstance(env, dict)}
        fallback = rename.get(default) or next(iter(rename.values()), default)
        self._record(inp, rename, fallback)
        summary = as_dict(doc.get("summary"))
        sec = summary.get("seconds")
        if isinstance(sec, int | float) and not isinstance(sec, bool):
            self.seconds += float(sec)
        for e in doc.get("errors") or []:
            if isinstance(e, dict) and e not in self.errors:
                self.errors.append(e)
        self._add_envs(doc.get("envs"), idx)
        for p in doc["probes"]:
            # a probe entry of a report whose schema id this laya-tui reads (checked on reading)
            probe = cast(ResultDict, dict(p, host=rename.get(p.get("host") or "", fallback)))
            self._add_probe(probe, idx)

    def _add_envs(self, envs: object, idx: int) -> None:
        """Environments of one input (``--env``): one name must be one interpreter with the
        same versions in every input, else its cells would be compared across two."""
        for name, info in (envs.items() if isinstance(envs, dict) else ()):
            if not isinstance(info, dict):
                continue
            held = self.envs.get(name)
            if held is None:
                self.envs[name], self._env_from[name] = json.loads(json.dumps(info)), idx
                continue
            if _env_identity(held) == _env_identity(info):
                held["probed"] = {**(info.get("probed") or {}), **(held.get("probed") or {})}
                continue
            a, b = self.inputs[self._env_from[name]].label, self.inputs[idx].label
            raise UsageError(f"environment {name} differs between {a} ({_env_text(held)}) and "
                             f"{b} ({_env_text(info)}): give the two environments different "
                             "--env names")

    def _record(self, inp: Input, rename: dict[str, str], fallback: str) -> None:
        merged = inp.doc.get("merged")
        if isinstance(merged, dict) and isinstance(merged.get("inputs"), list):
            for sub in merged["inputs"]:  # a merged report: keep its own inputs
                if isinstance(sub, dict):  # a record of a report read (checked on reading)
                    self.records.append(cast(MergedInputDict, dict(
                        sub, host=rename.get(str(sub.get("host")), fallback), via=inp.label)))
            return
        summary = as_dict(inp.doc.get("summary"))
        rec: MergedInputDict = {"file": inp.label, "host": fallback}
        if (created := inp.doc.get("created")) is not None:
            rec["created"] = created
        rec["probes"] = len(inp.doc["probes"])
        if (seconds := summary.get("seconds")) is not None:
            rec["seconds"] = seconds
        if isinstance(shard := inp.doc.get("shard"), dict):
            rec["shard"] = shard
        self.records.append(rec)

    def _add_probe(self, probe: ResultDict, idx: int) -> None:
        pid = probe["id"]
        held = self.chosen.get(pid)
        if held is None:
            self.chosen[pid] = (probe, idx)
            return
        old, old_idx = held
        if result_fingerprint(old) == result_fingerprint(probe):
            return
        a, b = self.inputs[old_idx].label, self.inputs[idx].label
        if self.prefer != "newest":
            raise UsageError(f"probe {pid} differs between {a} ({_describe(old)}) and {b} "
                             f"({_describe(probe)}); pass --prefer newest to keep the newer")
        old_t = str(self.inputs[old_idx].doc.get("created") or "")
        new_t = str(self.inputs[idx].doc.get("created") or "")
        if new_t >= old_t:
            self.chosen[pid] = (probe, idx)
            self.notes.append(f"probe {pid} differs between {a} and {b}: kept {b} (newer)")
        else:
            self.notes.append(f"probe {pid} differs between {a} and {b}: kept {a} (newer)")

    def probes(self) -> list[ResultDict]:
        """Every probe once, in id order (the same whatever the order of the inputs)."""
        return [self.chosen[pid][0] for pid in sorted(self.chosen)]


class _Split(TypedDict):
    """One split of a run into shards: its shard count, the files of each index given."""

    count: int
    have: dict[int, list[str]]  # shard index -> files


def shards_gate(records: list[MergedInputDict]) -> GateDict | None:
    """The ``shards`` gate: every part of each split is present (None without shards)."""
    groups: dict[str, _Split] = {}
    for rec in records:
        sh = rec.get("shard")
        if not isinstance(sh, dict) or not isinstance(sh.get("count"), int):
            continue
        g = groups.setdefault(str(sh.get("plan")), {"count": sh["count"], "have": {}})
        g["have"].setdefault(sh.get("index"), []).append(rec.get("file", "?"))
    if not groups:
        return None
    counts = Counter(g["count"] for g in groups.values())
    failures = []
    for plan, g in sorted(groups.items()):
        n = g["count"]
        missing = [k for k in range(1, n + 1) if k not in g["have"]]
        if not missing:
            continue
        have = ", ".join(f"{k}/{n} ({', '.join(f)})" for k, f in sorted(g["have"].items()))
        msg = (f"split {plan} into {n}: shard {', '.join(f'{k}/{n}' for k in missing)} "
               f"missing; given {have}")
        if counts[n] > 1:
            msg += ("; the shards planned different splits: give every shard the same "
                    "--durations REPORT")
        failures.append({"message": msg})
    return {"name": "shards", "description": "every shard of each split is present",
            "passed": not failures, "failures": failures}


def merge_reports(inputs: list[Input], settings: GateSettings | None = None,
                  prefer: str | None = None) -> tuple[ReportDict, list[str]]:
    """The merged report of ``inputs`` and the notes to print (kept duplicates)."""
    from laya_tui.report.document import build_report
    from laya_tui.report.gates import evaluate_all

    m = Merger(prefer=prefer)
    for inp in inputs:
        m.add(inp)
    probes = m.probes()
    if m.envs:  # the environments' comparison over the merged cells
        from dataclasses import replace

        from laya_tui.report.gates import GateSettings

        settings = replace(settings or GateSettings(), envs=m.envs)
    gates, extra = evaluate_all(probes, settings, m.errors)
    gate = shards_gate(m.records)
    if gate is not None:
        gates.append(gate)
    extra = {**extra, "hosts": m.hosts, "merged": {"inputs": m.records, "prefer": prefer}}
    report = build_report(probes, seconds=m.seconds, gates=gates, errors=m.errors, extra=extra)
    # the merging machine ran nothing: the top-level environment is the first input's host
    first = report["probes"][0]["host"] if report["probes"] else next(iter(m.hosts), None)
    if first is not None:
        report["environment"] = m.hosts[first]
    return report, m.notes


_HOLE = "\x00laya-tui probes\x00"


def dumps_report(report: ReportDict) -> str:
    """The report as JSON text: indented, one probe a line (json's C encoder does the probes;
    indenting 100,000 signals would take the pure-Python encoder seconds)."""
    shell = dumps_strict(dict(report, probes=_HOLE), indent=1, default=repr)
    rows = ",\n  ".join(dumps_strict(p, default=repr) for p in report["probes"])
    body = "[\n  " + rows + "\n ]" if rows else "[]"
    return shell.replace(json.dumps(_HOLE), body, 1) + "\n"
