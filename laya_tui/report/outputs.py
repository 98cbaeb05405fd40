"""From a run's results to what it leaves behind: the report document with its gates, the
CI files, the summary on stderr and the exit code. Headless runs, the dashboard, watch mode
and ``laya-tui merge`` all end here, so they write the same things the same way.

Every output path was checked before the first probe ran
(:func:`laya_tui.report.gates.prepare_gates`). Writing is all or nothing: each file goes to
a temporary beside its target first, and only when all of them are written are they renamed
into place (docs/architecture.md, 'Gates and exit codes').
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence

from laya_tui.core.errors import EXIT_GATE, EXIT_OK, UsageError
from laya_tui.core.report_types import ReportDict, ResultDict
from laya_tui.core.runner import Discovery
from laya_tui.core.settings import Settings
from laya_tui.report.document import (
    build_report,
    commit_temp,
    discard_temp,
    human_summary,
    report_chunks,
    write_report,
    write_temp,
)
from laya_tui.report.gates import GateSettings, evaluate_all

Content = Callable[[], str | Iterable[str]]


class OutputError(UsageError):
    """An output could not be written at the end of a run; none of them was (exit 2)."""


def make_report(results: list[ResultDict], disc: Discovery, seconds: float,
                settings: GateSettings | None = None) -> ReportDict:
    """Evaluate gates (and the baseline comparison) and build the report document."""
    if disc.envs and not (settings and settings.envs):  # --env: compare the environments
        from dataclasses import replace

        settings = replace(settings or GateSettings(), envs=dict(disc.envs))
    gates, extra = evaluate_all(results, settings, disc.errors)
    if disc.shard:
        extra = {**extra, "shard": disc.shard}
    return build_report(results, seconds=seconds, gates=gates, errors=disc.errors,
                        extra=extra or None)


def output_files(report: ReportDict, settings: Settings, json_path: str | None, *,
                 json_text: str | None = None, markdown: Callable[[], str] | None = None,
                 sarif: Callable[[], Iterable[str]] | None = None
                 ) -> list[tuple[str, str, Content]]:
    """``(flag, path, content)`` of every file the run writes (stdout is no file):
    ``--json`` (``json_text`` when the caller encoded it), ``--junit``, ``--markdown``
    (``markdown``: the text, built once for the file and the step summary), ``--html``,
    ``--trace`` and ``--sarif`` (``sarif``: its content, from
    :func:`laya_tui.report.sarif.finding_outputs`)."""
    out = settings.outputs
    md = markdown or markdown_of(report)
    files: list[tuple[str, str, Content]] = []
    if json_path and json_path != "-":
        files.append(("--json", json_path,
                      (lambda: json_text) if json_text is not None
                      else (lambda: report_chunks(report))))
    if out.junit:
        def junit() -> str:
            from laya_tui.report.junit import build_junit

            return build_junit(report)

        files.append(("--junit", out.junit, junit))
    if out.markdown:
        files.append(("--markdown", out.markdown, md))
    if out.html:
        def html() -> str:
            from laya_tui.report.html import build_html

            return build_html(report, workspace=settings.workspace)

        files.append(("--html", out.html, html))
    if out.trace:
        def trace() -> str:
            from laya_tui.core.trace import trace_json

            return trace_json(report)

        files.append(("--trace", out.trace, trace))
    if out.sarif:
        if sarif is None:
            sarif = _findings(report, settings)[0]
        if sarif is not None:
            files.append(("--sarif", out.sarif, sarif))
    return files


def _findings(report: ReportDict, settings: Settings
              ) -> tuple[Callable[[], Iterable[str]] | None, Callable[[], None]]:
    """``--sarif``'s content and the ``--annotations`` printer (no-ops without them)."""
    out = settings.outputs
    if not (out.sarif or out.annotations):
        return None, lambda: None
    from laya_tui.report.sarif import finding_outputs

    return finding_outputs(report, settings)


def write_all(files: Sequence[tuple[str, str, Content]]) -> None:
    """Write every file or none: all to temporaries beside their targets, then renamed.
    A file that cannot be written raises :class:`OutputError` and leaves every target as it
    was."""
    temps: list[tuple[str, str]] = []
    try:
        for flag, path, content in files:
            try:
                temps.append((write_temp(path, content()), path))
            except OSError as exc:
                raise OutputError(f"cannot write {flag} {path}: {exc.strerror or exc}; no "
                                  "output was written") from None
    except BaseException:
        for tmp, _ in temps:
            discard_temp(tmp)
        raise
    for i, (tmp, path) in enumerate(temps):
        try:
            commit_temp(tmp, path)
        except OSError as exc:
            for rest, _ in temps[i + 1:]:
                discard_temp(rest)
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_ci_files(report: ReportDict, settings: Settings) -> None:
    """``--junit``, ``--markdown``, ``--html``, ``--trace``, ``--sarif`` (all or none), then
    ``$GITHUB_STEP_SUMMARY`` and ``--annotations``."""
    md = markdown_of(report)
    sarif, annotate = _findings(report, settings)
    write_all(output_files(report, settings, None, markdown=md, sarif=sarif))
    _step_summary(md)
    annotate()


def finish(report: ReportDict, settings: Settings, json_path: str | None, *,
           json_text: str | None = None) -> int:
    """Write the JSON report (``-`` is stdout) and the CI files (all files or none), print
    the summary, the baseline comparison and where the files went on stderr; the exit code
    of the gates."""
    md = markdown_of(report)
    sarif, annotate = _findings(report, settings)
    files = output_files(report, settings, json_path, json_text=json_text, markdown=md,
                         sarif=sarif)
    write_all(files)
    if json_path == "-":
        if json_text is not None:
            sys.stdout.write(json_text)
            sys.stdout.flush()
        else:
            write_report("-", report)  # streamed in chunks
    _step_summary(md)
    annotate()  # --annotations: stdout, after the report
    print(human_summary(report), file=sys.stderr)
    if report.get("baseline"):
        from laya_tui.report.baseline import summary_lines

        print("\n".join(summary_lines(report["baseline"])), file=sys.stderr)
    if report.get("env_comparison"):
        from laya_tui.report.envview import env_summary_lines

        print("\n".join(env_summary_lines(report["env_comparison"])), file=sys.stderr)
    if files:  # last: where the report went
        print("  wrote " + ", ".join(f"{flag} {_shown(path)}" for flag, path, _ in files),
              file=sys.stderr)
    return EXIT_OK if report["summary"]["passed"] else EXIT_GATE


def _shown(path: str) -> str:
    """``path`` as the user can find it: relative when under the current folder."""
    rel = os.path.relpath(os.path.abspath(path))
    return rel if not rel.startswith("..") else os.path.abspath(path)


def markdown_of(report: ReportDict) -> Callable[[], str]:
    """The report's markdown summary, built on first use, then kept."""
    box: list[str] = []

    def text() -> str:
        if not box:
            from laya_tui.report.markdown import build_markdown

            box.append(build_markdown(report))
        return box[0]

    return text


def _step_summary(markdown: Callable[[], str]) -> None:
    """Append the markdown summary to ``$GITHUB_STEP_SUMMARY`` when it is set."""
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary_path:
        return
    try:
        with open(summary_path, "a", encoding="utf-8") as fh:
            fh.write(markdown() + "\n")
    except OSError as exc:
        print(f"laya-tui: warning: cannot append to GITHUB_STEP_SUMMARY {summary_path}: "
              f"{exc.strerror or exc}", file=sys.stderr)
