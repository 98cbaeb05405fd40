"""What each status and each matrix outcome looks like, and what it means: one table read
by the dashboard (tree, summary, matrix, help) and the HTML page (badges, matrix, legend).
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    "built": Mark("◐", "built", "built", "built, not run here (no device for its target)"),
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
    for o in ("ran", "built", "lowered", "lower-failed", "build-failed", "run-failed",
              "skipped", "crashed", "timeout", "error")) + (("·", "no such cell"),)

#: The legend of the status glyphs (tree, summary, page).
STATUS_LEGEND: tuple[tuple[str, str], ...] = tuple(
    (f"{m.glyph} {m.word}", m.meaning) for m in STATUS_MARKS.values())

#: The matrix legend in one or two lines (under the dashboard's matrix; the help and the
#: page give :data:`MATRIX_LEGEND` in full).
MATRIX_LEGEND_SHORT = ("✓ ran within tolerance · ◐ built, not run · ◔ lowered · "
                       "✗ lower / build / run: failed there · ⊘ skipped · ✹ crashed · "
                       "◷ timeout · ⚠ n/e: not examined · · no cell")
