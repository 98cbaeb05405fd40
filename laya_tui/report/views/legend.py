"""What each cell state, status and matrix outcome looks like, and what it means: one table
read by the dashboard (tree, summary, matrix, help, header), the HTML page (badges, matrix,
legend), the terminal summary, JUnit, markdown, SARIF, the annotations and the PR comment.

A cell's *state* (:func:`cell_state`) is what a reader is told about it; it refines the
report's ``status``: an ``ok`` cell built but never run is ``built, not run`` (no GPU...) or
``built, not compared`` (nothing to compare its output with), never ``ok``; a ``failed``
cell whose probe raised is ``could not be examined`` (the tool failed, not the subject), not a
finding. Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from laya_tui.core.results import ResultLike
from laya_tui.core.signals import Status


@dataclass(frozen=True, slots=True)
class Mark:
    """How one status or outcome is drawn: a glyph, a short word, a style class (the
    dashboard's component class suffix and the page's CSS class) and its meaning."""

    glyph: str
    word: str
    css: str
    meaning: str

    @property
    def label(self) -> str:
        """Glyph and word together: ``✗ lower``."""
        return f"{self.glyph} {self.word}" if self.word else self.glyph


#: A probe cell's status, in the order a summary lists them.
STATUS_MARKS: dict[str, Mark] = {
    Status.OK: Mark("✓", "ok", "ok", "ran, nothing failed"),
    Status.FAILED: Mark("✗", "failed", "failed", "a finding: it does not lower, it drifts"),
    Status.ERROR: Mark("⚠", "not examined", "error",
                       "the probe could not examine its subject (not a finding)"),
    Status.SKIPPED: Mark("⊘", "skipped", "skipped", "something it needs is missing"),
    Status.CRASHED: Mark("✹", "crashed", "crashed", "its worker died or broke the protocol"),
    Status.TIMEOUT: Mark("◷", "timeout", "timeout", "it ran past its deadline"),
    Status.RUNNING: Mark("▶", "running", "running", "running now"),
    Status.QUEUED: Mark("○", "queued", "queued", "waiting for its worker"),
    Status.PENDING: Mark("·", "pending", "pending", "not run yet"),
}
_UNKNOWN = Mark("?", "", "pending", "unknown")


def status_mark(status: str) -> Mark:
    """The mark of ``status`` (an unknown one is drawn as ``?``)."""
    return STATUS_MARKS.get(status, Mark("?", status, "pending", "unknown status"))


def status_glyph(status: str) -> str:
    return STATUS_MARKS.get(status, _UNKNOWN).glyph


def status_word(status: str) -> str:
    """``not examined`` for ``error`` (not a finding), else the status itself."""
    return STATUS_MARKS[status].word if status in STATUS_MARKS else status


#: A cell of the lowering matrix: the stage it reached, or its probe's status.
OUTCOME_MARKS: dict[str, Mark] = {
    "ran": Mark("✓", "ran", "ran", "built, ran and matched the reference within tolerance"),
    # (matrix words fit its 7-cell columns: the glyph says which state, as everywhere)
    "built": Mark("◐", "built", "built", "built, not run here (no GPU, no libcuda, no "
                  "compiler): nothing was compared"),
    "not-compared": Mark("◑", "built", "built", "built, not compared: nothing to "
                         "compare its output with (the file has no check)"),
    "lowered": Mark("◔", "lowered", "lowered", "lowered, not built"),
    "lower-failed": Mark("✗", "lower", "lower-failed", "failed to lower"),
    "build-failed": Mark("✗", "build", "build-failed", "lowered, failed to build"),
    "run-failed": Mark("✗", "run", "run-failed", "built, failed when run or compared"),
    "skipped": Mark("⊘", "skip", "skipped", "skipped: something it needs is missing"),
    "crashed": Mark("✹", "crash", "crashed", "its worker crashed"),
    "timeout": Mark("◷", "timeout", "crashed", "ran past its deadline"),
    "failed": Mark("✗", "probe", "run-failed", "the probe failed before a stage was reached"),
    "error": Mark("⚠", "n/e", "crashed", "could not be examined (not a finding)"),
    "ok": Mark("✓", "ok", "ran", "the probe passed"),
    "running": Mark("▶", "run…", "pending", "running now"),
    "queued": Mark("○", "queue", "pending", "waiting to run"),
    "pending": Mark("·", "", "pending", "not run"),
}


def outcome_mark(outcome: str) -> Mark:
    return OUTCOME_MARKS.get(outcome, Mark("?", outcome, "pending", "unknown outcome"))


#: The legend of the matrix: the outcomes a finished run shows, in reading order.
MATRIX_LEGEND: tuple[tuple[str, str], ...] = tuple(
    (OUTCOME_MARKS[o].label, OUTCOME_MARKS[o].meaning)
    for o in ("ran", "built", "not-compared", "lowered", "lower-failed", "build-failed",
              "run-failed", "skipped", "crashed", "timeout", "error")) + (("·", "no such cell"),)

#: The legend of the status glyphs (tree, summary, page).
STATUS_LEGEND: tuple[tuple[str, str], ...] = tuple(
    (f"{m.glyph} {m.word}", m.meaning) for m in STATUS_MARKS.values())

#: The matrix legend in one or two lines (under the dashboard's matrix; the help and the
#: page give :data:`MATRIX_LEGEND` in full).
MATRIX_LEGEND_SHORT = ("✓ ran within tolerance · ◐ built, not run · ◑ built, not compared · "
                       "◔ lowered · "
                       "✗ lower / build / run: failed there · ⊘ skipped · ✹ crashed · "
                       "◷ timeout · ⚠ n/e: could not be examined · · no cell")


class State:
    """The states a reader is told (``state`` of a report/3 probe)."""

    OK = "ok"
    FINDING = "finding"
    NOT_EXAMINED = "not-examined"
    NOT_RUN = "built-not-run"
    NOT_COMPARED = "built-not-compared"
    SKIPPED = "skipped"
    CRASHED = "crashed"
    TIMEOUT = "timeout"


#: Every state, in the order a summary counts them (the worst for the user first).
STATE_MARKS: dict[str, Mark] = {
    State.FINDING: Mark("✗", "finding", "failed",
                        "a finding about the subject: it does not lower, it drifts"),
    State.NOT_EXAMINED: Mark("⚠", "could not be examined", "error",
                             "the probe never reached its subject (it raised, or something "
                             "it needs is unknown): not a finding"),
    State.CRASHED: Mark("✹", "crashed", "crashed", "its worker died or broke the protocol"),
    State.TIMEOUT: Mark("◷", "timeout", "timeout", "it ran past its deadline"),
    State.NOT_RUN: Mark("◐", "built, not run", "built",
                        "built, not run here (no GPU, no libcuda, no compiler): nothing "
                        "was compared"),
    State.NOT_COMPARED: Mark("◑", "built, not compared", "built",
                             "built, nothing to compare its output with (the file has no "
                             "check, or its check cannot run here)"),
    State.SKIPPED: Mark("⊘", "skipped", "skipped", "something it needs is missing"),
    State.OK: Mark("✓", "ok", "ok", "ran, nothing failed"),
}
#: Live states: a cell not finished yet (dashboard only, never in a report).
LIVE_MARKS: dict[str, Mark] = {s: STATUS_MARKS[s] for s in
                               (Status.RUNNING, Status.QUEUED, Status.PENDING)}

#: ``detail.outcome`` of a lowering cell that passed without running.
NOT_RUN_OUTCOMES = ("built", "lowered")
#: ``not_run`` causes that are about this machine (the cell would run on another one);
#: every other cause means there is nothing to compare the output with.
MACHINE_CAUSES = ("no GPU", "no libcuda", "no nvcc", "no C++ compiler", "lowered only",
                  "not run")


def not_run(probe: ResultLike) -> str | None:
    """Why an ``ok`` cell was lowered or built but never run (``"no GPU"``, from its
    lowering signal's ``detail.not_run``); None for a cell that ran or did not pass."""
    if probe.get("status") != "ok":
        return None
    for sig in probe.get("signals") or ():
        if sig.get("kind") != "lowering":
            continue
        detail = sig.get("detail")
        if isinstance(detail, Mapping) and detail.get("outcome") in NOT_RUN_OUTCOMES:
            if detail.get("not_run"):
                return str(detail["not_run"])
            # a report written before ``not_run``: the cell's own words said why
            skipped = str(detail.get("run_skipped") or "")
            return "no GPU" if "torch.cuda.is_available() is False" in skipped else "not run"
    return None


def not_run_state(why: str) -> str:
    """``built-not-run`` for a cause about this machine, else ``built-not-compared``."""
    return State.NOT_RUN if why.startswith(MACHINE_CAUSES) else State.NOT_COMPARED


def cell_state(probe: ResultLike) -> str:
    """The state of a finished cell (a report probe, or a live result dict); a live status
    (running, queued, pending) is returned as it is. A report/3 probe's own ``state`` wins."""
    given = probe.get("state")
    if isinstance(given, str) and given in STATE_MARKS:
        return given
    status = str(probe.get("status") or "pending")
    if status == Status.OK:
        why = not_run(probe)
        return not_run_state(why) if why else State.OK
    if status == Status.ERROR or (status == Status.FAILED and probe.get("error")):
        return State.NOT_EXAMINED  # the probe raised: the tool failed, not the subject
    if status == Status.FAILED:
        return State.FINDING
    return status


def state_mark(state: str) -> Mark:
    """The mark of a state (or a live status); unknown ones are drawn as ``?``."""
    return STATE_MARKS.get(state) or LIVE_MARKS.get(state) or Mark("?", state, "pending",
                                                                     "unknown state")


def state_word(state: str) -> str:
    return state_mark(state).word


def state_counts(probes: Iterable[ResultLike]) -> dict[str, int]:
    """``{state: cells}`` in :data:`STATE_MARKS` order, every state present (0 too)."""
    seen = Counter(cell_state(p) for p in probes)
    out = {s: seen.get(s, 0) for s in STATE_MARKS}
    out.update({s: n for s, n in seen.items() if s not in out})
    return out


def counts_text(counts: Mapping[str, int], *, zero: Iterable[str] = ()) -> str:
    """``10 ok, 1 finding, 4 built, not run`` (states with none left out, but ``zero``)."""
    keep = set(zero)
    return ", ".join(f"{n} {state_word(s)}" + ("s" if s == State.FINDING and n != 1 else "")
                     for s, n in counts.items() if n or s in keep)


#: The legend of the states (help, page).
STATE_LEGEND: tuple[tuple[str, str], ...] = tuple(
    (m.label, m.meaning) for m in STATE_MARKS.values())
