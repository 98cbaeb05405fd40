"""``--annotations``: the findings that matter most as GitHub workflow commands on stdout
(``::error file=F,line=L,title=T::message``), so they show on the changed lines of a pull
request.

Order (``Finding.priority``): what a gate fails first, then the rest; within each, most
severe first (:mod:`laya_tui.report.severity`, the signal table's order), then what is new
or worse than the baseline; findings gone since the baseline are not annotated. GitHub shows
at most 10 annotations per level per step (and drops the rest silently), so each level is
capped at :data:`PER_LEVEL`, and when anything is left out one last ``::notice`` says how
many and where they all are. Paths are relative to the repository root
(``$GITHUB_WORKSPACE``, see :class:`laya_tui.report.sources.Sources`). Escaping follows
GitHub's workflow-command rules: ``%``, CR and LF in the message; also ``:`` and ``,`` in
properties. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from laya_tui.report.findings import Finding, prioritised

#: GitHub's limit of annotations per level per step.
PER_LEVEL = 10
COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}
TITLE_CHARS = 120
MESSAGE_CHARS = 2000


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF percent-encoded."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as a message, plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, *, file: str | None = None, line: int | None = None,
            title: str | None = None) -> str:
    """One workflow command line (``level``: error, warning or notice)."""
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
        if line:
            props.append(f"line={line}")
    if title:
        props.append(f"title={escape_property(title[:TITLE_CHARS])}")
    head = f"::{level}" + (" " + ",".join(props) if props else "")
    return f"{head}::{escape_data(message[:MESSAGE_CHARS])}"


def finding_command(f: Finding, state: str | None = None) -> str:
    """The annotation of one finding: at its site, titled by its rule, with its stack;
    ``state``: its cell's state word (sarif.state_words), leading the message unless ok."""
    text = f.message
    if state and state != "ok" and state not in text:  # (not twice: "could not be examined")
        text = f"{_label(state)}: {text}"
    for r in f.related:
        where = f"{r.path}:{r.line}" if r.line else r.path
        text += f"\n{r.note or 'related'}: {where}" + (f" ({r.func})" if r.func else "")
    loc = f.location
    return command(COMMANDS[f.level], text, file=loc.path if loc else None,
                   line=loc.line if loc else None, title=f"laya-tui: {f.rule.short}")


def _label(word: str) -> str:
    """``◐ built, not run`` for ``built, not run`` (report.views.legend's mark)."""
    from laya_tui.report.views.legend import STATE_MARKS

    return next((m.label for m in STATE_MARKS.values() if m.word == word), word)


def annotation_lines(findings: Iterable[Finding], *, files: list[str] | None = None,
                     step_summary: bool = False, per_level: int = PER_LEVEL,
                     states: Mapping[str, str] | None = None) -> list[str]:
    """The workflow commands for ``findings``: at most ``per_level`` per level, the most
    important first, and one closing ``::notice`` counting what was left out and naming
    where everything is (``files``: the SARIF file and JSON report written, if any;
    ``step_summary``: the markdown summary went to ``$GITHUB_STEP_SUMMARY``)."""
    shown: dict[str, list[str]] = {c: [] for c in COMMANDS.values()}
    left: dict[str, int] = {c: 0 for c in COMMANDS.values()}
    for f in prioritised([f for f in findings if f.state != "absent"]):
        cmd = COMMANDS[f.level]
        if len(shown[cmd]) < per_level:
            shown[cmd].append(finding_command(f, (states or {}).get(f.probe)))
        else:
            left[cmd] += 1
    if any(left.values()) and len(shown["notice"]) >= per_level:
        shown["notice"].pop()  # the closing notice needs the last slot of its level
        left["notice"] += 1
    lines = shown["error"] + shown["warning"] + shown["notice"]
    total = sum(left.values())
    if total:
        parts = [f"{n} {name}{'s' if n != 1 else ''}" for name, n in
                 (("error", left["error"]), ("warning", left["warning"]),
                  ("notice", left["notice"])) if n]
        text = f"{total} more laya-tui finding(s) than GitHub shows per step " \
            f"({', '.join(parts)}): "
        if files:
            text += f"every finding is in {' and '.join(files)}"
        else:
            text += "write them all with --sarif PATH or --json PATH"
        if step_summary:
            text += "; the step summary has the verdict, every gate and the regressions"
        lines.append(command("notice", text, title=f"laya-tui: {total} more finding(s)"))
    return lines
