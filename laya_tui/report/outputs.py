"""From a run's results to what it leaves behind: the report document with its gates, the
CI files, the summary on stderr and the exit code. Headless runs, the dashboard, watch mode
and ``laya-tui merge`` all end here, so they write the same things the same way."""

from __future__ import annotations

import sys
from typing import Any

from laya_tui.core.errors import EXIT_GATE, EXIT_OK
from laya_tui.core.runner import Discovery
from laya_tui.core.settings import Settings
from laya_tui.report.document import build_report, human_summary, write_atomic, write_report
from laya_tui.report.gates import GateSettings, evaluate_all


def make_report(results: list[dict[str, Any]], disc: Discovery, seconds: float,
                settings: GateSettings | None = None) -> dict[str, Any]:
    """Evaluate gates (and the baseline comparison) and build the report document."""
    if disc.envs and not (settings and settings.envs):  # --env: compare the environments
        from dataclasses import replace

        settings = replace(settings or GateSettings(), envs=dict(disc.envs))
    gates, extra = evaluate_all(results, settings, disc.errors)
    if disc.shard:
        extra = dict(extra, shard=disc.shard)
    return build_report(results, seconds=seconds, gates=gates, errors=disc.errors,
                        extra=extra or None)


def write_ci_files(report: dict[str, Any], settings: Settings) -> None:
    """``--junit``, ``--markdown``, ``--html``, ``--trace``, ``$GITHUB_STEP_SUMMARY``,
    ``--sarif`` and ``--annotations`` (paths checked up front by
    :func:`laya_tui.report.gates.prepare_gates`)."""
    out = settings.outputs
    if out.junit:
        from laya_tui.report.junit import build_junit

        write_atomic(out.junit, build_junit(report))
    from laya_tui.report.markdown import write_markdown_outputs

    write_markdown_outputs(report, out.markdown)
    if out.html:
        from laya_tui.report.html import build_html

        write_atomic(out.html, build_html(report, workspace=settings.workspace))
    if out.trace:
        from laya_tui.core.trace import trace_json

        write_atomic(out.trace, trace_json(report))
    if out.sarif or out.annotations:
        from laya_tui.report.sarif import write_finding_outputs

        write_finding_outputs(report, settings)


def finish(report: dict[str, Any], settings: Settings, json_path: str | None) -> int:
    """Write the JSON report (``-`` is stdout) and the CI files, print the summary and the
    baseline comparison on stderr; the exit code of the gates."""
    if json_path:
        write_report(json_path, report)  # streamed in chunks, "-" is stdout
    write_ci_files(report, settings)
    print(human_summary(report), file=sys.stderr)
    if report.get("baseline"):
        from laya_tui.report.baseline import summary_lines

        print("\n".join(summary_lines(report["baseline"])), file=sys.stderr)
    if report.get("env_comparison"):
        from laya_tui.report.envview import env_summary_lines

        print("\n".join(env_summary_lines(report["env_comparison"])), file=sys.stderr)
    return EXIT_OK if report["summary"]["passed"] else EXIT_GATE
