"""The dashboard's state: probes, their live status and signals, kept by key.

Pure Python (no Textual): the event pump feeds runner events in, and gets back a
:class:`Changes` record that tells the widgets which probes and rows to touch. Signal
rows have stable keys across re-runs (probe, kind, subject, reason, occurrence), so a
re-run updates rows in place and removes only the ones that are gone.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from laya_tui.core.events import Event, ProbeFinished, ProbeQueued, ProbeStarted, SignalEmitted
from laya_tui.core.gc_sight import freeze_if_large
from laya_tui.core.results import ProbeResult, Signal, failing, signal_key
from laya_tui.core.signals import DEFAULT_GATE_KINDS, KINDS

if TYPE_CHECKING:
    from laya_tui.core.report_types import (
        CellSpec,
        ErrorDict,
        FileErrorDict,
        GateDict,
        ResultDict,
        SignalDict,
    )
    from laya_tui.report.gates import GateSettings

Scope = tuple[str, str | None]
"""``("all", None)``, ``("family", name)`` or ``("probe", id)``."""

ALL: Scope = ("all", None)

#: Gates reading more signals than this are evaluated off the event loop (gates_ready).
GATES_IN_THREAD_ABOVE = 20_000


@dataclass(eq=False, slots=True)
class SignalRow:
    """One signal as the table shows it; ``key`` is stable across re-runs.

    Slotted and holding only strings, numbers and the frozen signal: one object per signal
    for the garbage collector to walk, which keeps its pauses short with 100,000 rows.
    ``sig`` is an immutable snapshot (:class:`~laya_tui.core.results.Signal`, read like the
    signal dict), never the runner's own dict.
    """

    key: str
    probe: str
    family: str
    sig: Signal
    seq: int
    failing: bool
    cells: tuple[str, ...] | None = None  # the table's formatted text (set by the table)
    tkey: tuple[object, ...] | None = None  # the table's sort key for it (set by the table)
    tgen: int = -1  # the table's list generation ``tkey`` belongs to
    hay: str | None = None  # what the text filter searches (set by the table)
    run: int = -1  # the probe run (RunModel's run number) it was last seen in
    occ: int = 0  # on an ident's first row: how often the ident came in that run so far


@dataclass
class RunPoint:
    """One finished run of a probe, for the runs-over-time view."""

    run: int
    status: str
    seconds: float | None
    cached: bool
    tolerances: dict[str, tuple[float | None, float | None, bool | None]]
    timings: dict[str, float]


@dataclass(eq=False)
class ProbeState:
    """One probe cell: discovery facts, live status and its current signal keys.

    ``result`` is the last finished run as a frozen snapshot (what widgets read);
    ``report_entry`` is the same result as the report holds it (what exports and gates
    read): the runner's dict, never changed here.
    """

    id: str
    family: str
    file: str | None = None
    spec: dict[str, object] = field(default_factory=dict)  # the discovered cell (CellSpec)
    status: str = "pending"
    reason: str | None = None
    seconds: float | None = None
    started_at: float | None = None
    cached: bool = False
    log_tail: str = ""
    error: ErrorDict | None = None
    result: ProbeResult | None = None
    report_entry: ResultDict | None = None
    #: its signal rows in arrival order (``seq``): the table shows these lists as they are
    rows: list[SignalRow] = field(default_factory=list)
    #: discovery order among the probes (the table's order across probes)
    rank: int = 0
    #: its rows per signal kind
    kinds: Counter[str] = field(default_factory=Counter)
    runs: list[RunPoint] = field(default_factory=list)
    _run: int = 0  # this run's number (RunModel's, unique): rows seen in it carry it
    _streamed: int = 0
    _in_run: bool = False
    _checks: list[Signal] = field(default_factory=list)  # this run's tolerance/timing
    _signals: list[Signal] = field(default_factory=list)  # this run's, frozen as they came
    _gate_view: ResultDict | None = None  # the result as the gates read it (gate_view)
    _gate_sigs: list[SignalDict] = field(default_factory=list)  # this run's, for gates
    _gate_seen: int = 0  # signals ingested in this run (all of them, not only _gate_sigs)

    @property
    def finished(self) -> bool:
        return self.result is not None and not self._in_run

    def first_failing(self) -> SignalRow | None:
        """Its first failing signal row (what Enter on a failing probe opens)."""
        return next((r for r in self.rows if r.failing), None)


@dataclass
class Changes:
    """What one batch of events changed."""

    probes: set[str] = field(default_factory=set)
    added: list[SignalRow] = field(default_factory=list)
    updated: list[SignalRow] = field(default_factory=list)
    removed: list[SignalRow] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    structure: bool = False
    events: int = 0

    def __bool__(self) -> bool:
        return bool(self.probes or self.added or self.updated or self.removed or self.finished
                    or self.structure)


class RunModel:
    """Every probe and signal the dashboard knows, updated from runner events."""

    def __init__(self, gate_settings: GateSettings | None = None) -> None:
        self.gate_settings = gate_settings
        self.probes: dict[str, ProbeState] = {}
        self.families: dict[str, list[str]] = {}
        self.rows: dict[str, SignalRow] = {}
        self.kind_counts: Counter[str] = Counter({k: 0 for k in KINDS})
        self.errors: list[FileErrorDict] = []
        self.discovered = False
        self.run_started: float | None = None
        self.run_seconds: float = 0.0
        self._seq = 0
        self._runs = 0  # probe runs begun (a row's ``run`` names one)
        self._gates: list[GateDict] | None = None
        self._gates_gen = 0  # bumped whenever the results the gates read change
        #: the signal kinds the gates read (None: all of them): GateSettings.kinds_read
        self.gate_kinds = (gate_settings.kinds_read() if gate_settings is not None
                           else DEFAULT_GATE_KINDS)
        #: the probes of the current (or last) run, for the progress bar
        self.run_ids: set[str] = set()
        #: a saved report's one-line source (``show``/``diff``), None for a live run
        self.source: str | None = None
        #: a saved report's gates as recorded (its own settings), instead of re-evaluating
        self.fixed_gates: list[GateDict] | None = None
        #: a saved report replayed (``show``/``diff``): nothing runs, probes are loading
        self.replay = False

    # -- discovery ----------------------------------------------------------------------
    def discover(self, probes: list[CellSpec], errors: list[FileErrorDict]) -> Changes:
        """Register discovered probe cells (kept in discovery order)."""
        changes = Changes(structure=True)
        for spec in probes:
            st = self._probe(spec["id"], spec.get("family", "?"), changes)
            st.spec = dict(spec)
            st.file = spec.get("file")
        self.errors = list(errors)
        self.discovered = True
        self._gates = None
        self._gates_gen += 1
        return changes

    def _probe(self, pid: str, family: str, changes: Changes) -> ProbeState:
        st = self.probes.get(pid)
        if st is None:
            st = ProbeState(id=pid, family=family, rank=len(self.probes))
            self.probes[pid] = st
            self.families.setdefault(family, []).append(pid)
            changes.structure = True
        return st

    # -- events -------------------------------------------------------------------------
    def apply(self, event: Event, changes: Changes) -> None:
        """Fold one runner event into the model, recording what changed."""
        changes.events += 1
        if isinstance(event, SignalEmitted):
            fam = self.probes[event.probe_id].family if event.probe_id in self.probes else \
                event.probe_id.split("/", 1)[0]
            st = self._probe(event.probe_id, fam, changes)
            if not st._in_run:
                self._begin(st, None)
            st._streamed += 1
            self._ingest(st, event.signal, changes)
        elif isinstance(event, ProbeStarted):
            st = self._probe(event.probe_id, event.family, changes)
            self._begin(st, event.started_at)
            changes.probes.add(st.id)
        elif isinstance(event, ProbeQueued):
            st = self._probe(event.probe_id, event.family, changes)
            if not any(self.probes[p].status in ("queued", "running") for p in self.run_ids):
                self.run_ids = set()  # nothing in flight: this queues a new run
            self.run_ids.add(st.id)
            st.status, st.reason, st._in_run = "queued", None, False
            if self.run_started is None:
                self.run_started = time.monotonic()
            changes.probes.add(st.id)
        elif isinstance(event, ProbeFinished):
            self._finish(event.result, changes)

    def _begin(self, st: ProbeState, started_at: float | None) -> None:
        st.status = "running"
        st.started_at = started_at if started_at is not None else time.time()
        st.reason = None
        st._in_run = True
        self._runs += 1
        st._run = self._runs
        st._streamed = 0
        st._checks = []
        st._signals = []
        st._gate_sigs = []
        st._gate_seen = 0

    def _ingest(self, st: ProbeState, raw: SignalDict, changes: Changes) -> None:
        """One signal of ``st``'s run into its row: the row of the same key (kind, subject,
        reason, occurrence) is updated in place, a new key adds a row.

        A probe's rows are its only per-signal store: which rows this run saw and how often
        an ident came are marks on the rows (``run``, ``occ``), not sets and counters of
        their own, whose resizes at 200,000 rows held the loop for tens of milliseconds in
        one event (docs/architecture.md, 'The dashboard')."""
        ident = signal_key(raw, st.id)  # identity and "failing" read off the dict: cheaper
        kind = ident[1]
        sig = Signal.from_dict(raw)  # the UI keeps a frozen snapshot, not the runner's dict
        st._signals.append(sig)
        if kind == "tolerance" or kind == "timing":
            st._checks.append(sig)
        st._gate_seen += 1
        kinds = self.gate_kinds
        if kinds is not None and kind in kinds:
            st._gate_sigs.append(raw)  # the gates read the report's dicts
        base = "\x1f".join(ident)
        key = base + "\x1f1"
        rows = self.rows
        first = rows.get(key)
        if first is not None and first.run == st._run:  # the ident came before in this run
            first.occ += 1
            key = f"{base}\x1f{first.occ}"
            row = rows.get(key)
        else:
            row = first
        if row is None:
            self._seq += 1
            row = SignalRow(key, st.id, st.family, sig, self._seq, failing(raw))
            rows[key] = row
            st.rows.append(row)
            st.kinds[kind] += 1
            self.kind_counts[kind] += 1
            changes.added.append(row)
        elif row.sig != sig:
            row.sig = sig
            row.failing = failing(raw)
            row.cells = row.hay = None  # its sort key (tkey) stays: the table finds it by that
            changes.updated.append(row)
        if row.run != st._run:
            row.run = st._run
            if first is None or row is first:  # the ident's first row
                row.occ = 1

    def _finish(self, result: ResultDict, changes: Changes) -> None:
        pid = result["id"]
        if pid in self.probes and self.probes[pid].report_entry is result:
            return  # applied already (the app passes watch results on; some came as events)
        st = self._probe(pid, result.get("family", pid.split("/", 1)[0]), changes)
        if not st._in_run:
            self._begin(st, None)
        if st._streamed == 0:
            for sig in result.get("signals", []):
                self._ingest(st, sig, changes)
        # each signal ingested in this run marked a row of its own (_gate_seen counts them)
        gone = [] if st._gate_seen == len(st.rows) else [r for r in st.rows if r.run != st._run]
        for row in gone:
            del self.rows[row.key]
            st.kinds[row.sig.kind] -= 1
            self.kind_counts[row.sig.kind] -= 1
            changes.removed.append(row)
        if gone:
            st.rows = [r for r in st.rows if r.run == st._run]
        st._in_run = False
        st.report_entry = result
        st.result = ProbeResult.from_dict(result, tuple(st._signals))
        freeze_if_large(len(st.result.signals))  # a new tuple of every signal: keep it old
        st._signals = []
        st.status = result.get("status", "failed")
        st.reason = result.get("reason")
        st.seconds = result.get("seconds")
        st.cached = bool(result.get("cached"))
        st.log_tail = result.get("log_tail") or ""
        st.error = result.get("error")
        st.file = st.file or result.get("file")
        st.runs.append(_run_point(len(st.runs) + 1, result, st._checks))
        st._checks = []
        st._gate_view = self._gate_view(st, result)
        st._gate_sigs = []
        self._gates = None
        self._gates_gen += 1
        if self.run_started is not None:
            self.run_seconds = time.monotonic() - self.run_started
        changes.probes.add(pid)
        changes.finished.append(pid)

    def _gate_view(self, st: ProbeState, result: ResultDict) -> ResultDict | None:
        """The result as the gates read it: the signals of the gates' kinds, picked as they
        streamed in (the runner's result lists the same signal objects in the same order),
        or picked now when the result's list is not the one streamed."""
        sigs = result.get("signals")
        if self.gate_kinds is None or not isinstance(sigs, list):
            return None
        if st._gate_seen != len(sigs):
            return gate_view(result, self.gate_kinds)
        if len(st._gate_sigs) == len(sigs):
            return None
        return {**result, "signals": st._gate_sigs}

    def abandon(self) -> Changes:
        """A run was cancelled: queued/running probes fall back to their last result."""
        changes = Changes()
        for st in self.probes.values():
            if st.status not in ("queued", "running"):
                continue
            st._in_run = False
            if st.result is not None:
                st.status = st.result.status
                st.reason = st.result.reason
            else:
                st.status, st.reason = "pending", "cancelled"
            changes.probes.add(st.id)
        return changes

    # -- queries ------------------------------------------------------------------------
    def probes_in(self, scope: Scope) -> list[ProbeState]:
        """The probes of ``scope``, in discovery order."""
        what, name = scope
        if what == "probe":
            return [self.probes[name]] if name in self.probes else []
        if what == "family":
            return [self.probes[p] for p in self.families.get(name or "", [])]
        return list(self.probes.values())

    def segments(self, scope: Scope) -> list[tuple[str, list[SignalRow]]]:
        """``(probe id, its row list)`` for the probes in ``scope`` (the model's own lists,
        kept up to date)."""
        return [(st.id, st.rows) for st in self.probes_in(scope)]

    def rows_for(self, scope: Scope) -> list[SignalRow]:
        """Rows of every probe in ``scope``: probe by probe, each in arrival order."""
        return [row for st in self.probes_in(scope) for row in st.rows]

    def in_scope(self, row: SignalRow, scope: Scope) -> bool:
        """Whether ``row`` belongs to ``scope``."""
        what, name = scope
        if what == "probe":
            return row.probe == name
        if what == "family":
            return row.family == name
        return True

    def results(self) -> list[ResultDict]:
        """Finished results (report entries), in discovery order."""
        return [st.report_entry for st in self.probes.values() if st.report_entry is not None]

    def gates(self) -> list[GateDict]:
        """The gates over the finished results (cached until the next result).

        Evaluated over each result's :func:`gate_view` (only the signals a gate reads,
        picked once when the result came in), so a summary refresh after a probe with
        100,000 signals is not a pass over all of them on the event loop; the verdict is
        the one :func:`~laya_tui.report.gates.evaluate_all` gives over the full results.
        """
        if self.fixed_gates is not None:
            return self.fixed_gates
        if self._gates is None:
            self._gates = self.gate_job()[1]()
        return self._gates

    def gates_ready(self) -> list[GateDict] | None:
        """:meth:`gates` when they are known or cheap to evaluate; None when the gates read
        more than ``GATES_IN_THREAD_ABOVE`` signals (a baseline compares every signal:
        ~0.16 s for 100,000), which the app evaluates off the loop (:meth:`gate_job`)."""
        if self.fixed_gates is not None or self._gates is not None:
            return self.gates()
        read = sum(len(v.get("signals") or ()) for v in self._gate_views())
        return self.gates() if read <= GATES_IN_THREAD_ABOVE else None

    @property
    def gates_wanted(self) -> bool:
        """Finished results whose gates are not evaluated yet (nor fixed by a report)."""
        return self.fixed_gates is None and self._gates is None and any(
            st.result is not None for st in self.probes.values())

    def gate_job(self) -> tuple[int, Callable[[], list[GateDict]]]:
        """``(generation, evaluate)``: the gates over the results as they are now, as a
        function that may run in another thread; hand its answer to :meth:`set_gates`."""
        from laya_tui.report.gates import evaluate_all

        views, settings, errors = self._gate_views(), self.gate_settings, list(self.errors)
        return self._gates_gen, lambda: evaluate_all(views, settings, errors)[0]

    def set_gates(self, generation: int, gates: list[GateDict]) -> bool:
        """Keep gates evaluated by :meth:`gate_job` unless a result came in since."""
        if generation != self._gates_gen:
            return False
        self._gates = gates
        return True

    def _gate_views(self) -> list[ResultDict]:
        return [st._gate_view if st._gate_view is not None else st.report_entry
                for st in self.probes.values() if st.report_entry is not None]

    def status_counts(self) -> Counter[str]:
        """Probes per status (live states included)."""
        return Counter(st.status for st in self.probes.values())

    def progress(self) -> tuple[int, int]:
        """(finished, total) over the probes queued in the current (or last) run."""
        states = [self.probes[p] for p in self.run_ids]
        done = sum(1 for st in states if st.status not in ("queued", "running", "pending"))
        return done, len(states)

    def running(self) -> list[ProbeState]:
        """Probes running now."""
        return [st for st in self.probes.values() if st.status == "running"]


def gate_view(result: ResultDict, kinds: frozenset[str] | None) -> ResultDict | None:
    """``result`` with only the signals of ``kinds`` (the same dicts), for the gates; None
    when every signal counts or none is left out (the result itself is read then)."""
    sigs = result.get("signals")
    if kinds is None or not isinstance(sigs, list):
        return None
    kept = [s for s in sigs if not isinstance(s, dict) or s.get("kind") in kinds]
    return None if len(kept) == len(sigs) else {**result, "signals": kept}


def _run_point(n: int, result: ResultDict, checks: list[Signal]) -> RunPoint:
    tol: dict[str, tuple[float | None, float | None, bool | None]] = {}
    timings: dict[str, float] = {}
    for sig in checks:  # the run's tolerance and timing signals, collected as they came
        subject = sig.subject or ""
        if sig.kind == "tolerance":
            value = sig.value
            tol[subject] = (value if isinstance(value, (int, float)) else None,
                            sig.limit, sig.passed)
        elif sig.kind == "timing" and isinstance(sig.seconds, (int, float)):
            timings[subject] = float(sig.seconds)
    return RunPoint(n, result.get("status", "failed"), result.get("seconds"),
                    bool(result.get("cached")), tol, timings)
