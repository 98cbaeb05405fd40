"""Command line: ``laya-tui`` (dashboard), ``--headless --json`` (CI), ``--list``, ``--watch``.

Only argparse and the standard library at import time: ``--help`` and ``--list`` must stay
well under half a second, and this process never imports torch & co (docs/architecture.md,
'Processes and the one rule').
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from laya_tui.cli.project import NothingConfigured
from laya_tui.core.defaults import DEFAULT_DEBOUNCE_MS, default_jobs
from laya_tui.core.errors import EXIT_USAGE, UsageError, internal_error
from laya_tui.core.files import check_output_path
from laya_tui.core.settings import MAX_DEBOUNCE_MS, MAX_JOBS, check_seconds

if TYPE_CHECKING:
    from laya_tui.core.settings import RunOptions

def seconds_arg(text: str) -> float:
    """``--timeout``: a finite number of seconds in (0, a week] (argparse's type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    try:
        return check_seconds(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}, got {text!r}") from None


def whole_arg(low: int, high: int, unit: str = "") -> Callable[[str], int]:
    """A whole-number flag in ``[low, high]`` (``nan``, ``inf``, ``1.5``: a one-line error)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number{unit} from {low} to {high}, got {text!r}")
        return value

    parse.__name__ = "whole number"
    return parse


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"laya-tui: error: {message} (see laya-tui --help)\n")


class SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser: a bad flag is one line naming the subcommand, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_report_flags(ap: argparse.ArgumentParser, json_help: str) -> None:
    """``--json`` and the CI files a report-writing subcommand writes (``merge``, ``import``)."""
    ap.add_argument("--json", nargs="?", const="-", metavar="PATH", help=json_help)
    ap.add_argument("--junit", metavar="PATH", help="also write JUnit XML")
    ap.add_argument("--markdown", metavar="PATH",
                    help="also write a markdown summary (appended to $GITHUB_STEP_SUMMARY "
                    "when set)")
    ap.add_argument("--html", metavar="PATH", help="also write the self-contained HTML page")


def add_workspace_flag(ap: argparse.ArgumentParser) -> None:
    """``--workspace DIR``: where a subcommand reads its ``[tool.laya-tui]`` gate settings."""
    ap.add_argument("--workspace", metavar="DIR", default=".",
                    help="read gate settings from DIR/pyproject.toml [tool.laya-tui] "
                    "(default: the current folder)")


def add_gate_flags(ap: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The gate flags, shared by a run and ``laya-tui merge`` (they mean the same in both)."""
    ap.add_argument("--baseline", metavar="PATH",
                    help="compare with an earlier --json report; any regression fails")
    ap.add_argument("--no-baseline", action="store_true",
                    help="ignore the baseline set in pyproject.toml (to write a fresh one)")
    ap.add_argument("--fail-on", action="append", metavar="KIND[,KIND...]",
                    help="fail on any occurrence of KIND (a signal kind, or failed/skipped)")
    ap.add_argument("--max", action="append", metavar="KIND=N",
                    help="fail on more than N occurrences of KIND (repeatable)")
    ap.add_argument("--fail-on-env-change", action="store_true", default=None,
                    help="with several --env: fail when a later environment is worse than "
                    "the first (a cell no longer ok, new fallbacks/recompiles, a lowering or "
                    "tolerance check that now fails)")


def add_finding_flags(ap: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--sarif`` and ``--annotations``, shared by a run and ``laya-tui merge``."""
    ap.add_argument("--sarif", metavar="PATH",
                    help="also write the findings as SARIF 2.1.0 (GitHub code scanning)")
    ap.add_argument("--annotations", action=argparse.BooleanOptionalAction, default=None,
                    help="print the most important findings as GitHub workflow commands "
                    "(annotations on the pull request's lines)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (kept in one place so docs and tests agree)."""
    ap = _Parser(
        prog="laya-tui",
        description="Explain/fallback diagnostics for PyTorch ports: run probes, "
        "see what fell back, recompiled, bounced through the host, failed to lower or drifted.",
        epilog="subcommands (each with its own --help): laya-tui init (write a [tool.laya-tui] "
        "table), laya-tui show REPORT (the dashboard over a saved report), laya-tui diff BASE "
        "NEW (what changed), laya-tui merge REPORT... (shards and hosts as one report), laya-tui "
        "import TRACE_DIR (a TORCH_TRACE folder as a report; show opens one too)",
    )
    ap.add_argument("--headless", action="store_true",
                    help="no dashboard: run, print a summary to stderr (implied without a TTY)")
    ap.add_argument("--json", nargs="?", const="-", metavar="PATH",
                    help="write the JSON report to PATH (or '-' for stdout)")
    ap.add_argument("--list", action="store_true", help="print probe ids and exit (runs nothing)")
    ap.add_argument("--probes", action="append", metavar="PATH",
                    help="probe file or folder beside the built-in ones (repeatable; "
                    "default: ./probes)")
    ap.add_argument("--kernels", action="append", metavar="DIR",
                    help="TileLang kernel folder or one kernel file (repeatable; "
                    "default: ./kernels)")
    ap.add_argument("--model", action="append", metavar="MODULE:CALLABLE", dest="models",
                    help="model for the explain/aoti probes, imported from the workspace: "
                    "a callable returning (model, inputs)")
    ap.add_argument("--demo", action=argparse.BooleanOptionalAction, default=None,
                    help="also run the built-in demo (tiny Llama/ModernBERT, decision model, "
                    "MLX encoder, five TileLang kernels); default: [tool.laya-tui] demo")
    ap.add_argument("--device", metavar="DEV", help="where explain models run: cpu, cuda, "
                    "cuda:N, mps, rbln (default: the accelerator when present)")
    ap.add_argument("--env", action="append", metavar="NAME=PYTHON", dest="envs",
                    help="run every cell once per environment, in workers started with that "
                    "Python (repeatable; ids get @NAME; the first is the reference; also "
                    "envs = {...} in [tool.laya-tui])")
    ap.add_argument("--only", action="append", metavar="GLOB",
                    help="run only probe ids matching GLOB (repeatable; '[' is literal)")
    ap.add_argument("--timeout", type=seconds_arg, metavar="SECONDS",
                    help="per-probe timeout for every family (default: per family)")
    ap.add_argument("--jobs", type=whole_arg(1, MAX_JOBS), default=None, metavar="N",
                    help="families run at once, one warm worker each (default: "
                    f"{default_jobs()})")
    ap.add_argument("--no-cache", action="store_true", help="run every probe, ignore the cache")
    ap.add_argument("--cache-dir", metavar="DIR", help="result cache folder")
    ap.add_argument("--out", metavar="DIR",
                    help="folder for artifacts (packages, generated source); default: cache")
    ap.add_argument("--workspace", metavar="DIR", default=".",
                    help="workspace root (default: the current folder)")
    ap.add_argument("--precision-plan", action=argparse.BooleanOptionalAction, default=None,
                    help="after a failing bf16/fp16 eager tolerance, search the modules to keep "
                    "in fp32 and verify the plan; after a TileLang kernel fails its file's "
                    "check, the pass option that restores it; after a compile cell fails, "
                    "torch's compiler bisector (bounded; default: on, off under --watch)")
    ap.add_argument("--rbln-log", metavar="PATH",
                    help="an RBLN runtime log (TORCH_RBLN_LOG_LEVEL=INFO) to merge as fallbacks")
    ap.add_argument("--watch", action="store_true",
                    help="re-run the probes whose files change (headless: a JSON line per re-run)")
    ap.add_argument("--debounce-ms", type=whole_arg(0, MAX_DEBOUNCE_MS, " of ms"), default=None,
                    metavar="MS",
                    help="watch: let a burst of saves settle this long "
                    f"(default: {DEFAULT_DEBOUNCE_MS})")
    ap.add_argument("--quiet", "-q", action="store_true", help="headless: no progress lines")
    ap.add_argument("--shard", metavar="K/N",
                    help="run only the K-th of N balanced, disjoint parts of the selected cells "
                    "(merge the parts' reports with 'laya-tui merge')")
    ap.add_argument("--durations", metavar="REPORT",
                    help="--shard: balance by the probe seconds of this earlier report (give "
                    "every machine the same file and they agree on the split)")
    ci = ap.add_argument_group("CI gates (also settable in [tool.laya-tui] of pyproject.toml; "
                               "flags win)")
    add_gate_flags(ci)
    ci.add_argument("--junit", metavar="PATH", help="also write JUnit XML (one case per cell)")
    ci.add_argument("--markdown", metavar="PATH",
                    help="also write a markdown summary (appended to $GITHUB_STEP_SUMMARY "
                    "when set)")
    ci.add_argument("--html", metavar="PATH",
                    help="also write a self-contained HTML page of the report")
    ci.add_argument("--trace", metavar="PATH",
                    help="also write the run's timeline as Chrome trace JSON (Perfetto)")
    add_finding_flags(ci)
    ap.add_argument("--version", action=_Version, nargs=0,
                    help="laya-tui's version and the installed torch, TileLang... versions")
    return ap


class _Version(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        sys.stdout.write(_versions() + "\n")
        parser.exit(0)


def _versions() -> str:
    """laya-tui's version and the probed libraries' installed ones (metadata, no import)."""
    from importlib.metadata import PackageNotFoundError, version

    def one(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    libs = ("torch", "tilelang", "transformers", "mlx", "torch-rbln", "textual")
    return f"laya-tui {one('laya-tui')}\n" + "\n".join(f"  {d} {one(d)}" for d in libs)


def config_from_args(args: argparse.Namespace) -> RunOptions:
    """The run options of parsed flags (with the workspace's table), raising UsageError."""
    from laya_tui.cli.config import settings_from

    return settings_from(args).run


#: ``laya-tui NAME ...`` subcommands: NAME -> "module:function" taking the remaining argv and
#: returning an exit code (imported only when used, so ``--help`` stays fast).
SUBCOMMANDS: dict[str, str] = {
    "init": "laya_tui.cli.init_cmd:main",
    "show": "laya_tui.cli.show:main",
    "diff": "laya_tui.cli.diff:main",
    "merge": "laya_tui.cli.merge:main",  # merge shard/host reports into one
    "import": "laya_tui.cli.import_cmd:main",  # a TORCH_TRACE folder as a report
    "serve": "laya_tui.cli.serve:main",  # the dashboard in a browser (textual-serve)
}


def _run_subcommand(name: str, argv: list[str]) -> int:
    import importlib

    module, _, func = SUBCOMMANDS[name].partition(":")
    try:
        return int(getattr(importlib.import_module(module), func)(argv))
    except UsageError as exc:
        print(f"laya-tui {name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def wants_headless(headless: bool, json_path: str | None) -> bool:
    """No dashboard: asked for, the report goes to stdout, or no terminal on stdin/stdout."""
    from laya_tui.cli.serve import served

    return bool(headless or json_path == "-"
                or not (served() or (sys.stdout.isatty() and sys.stdin.isatty())))


def check_only(config: RunOptions) -> None:
    """Each ``--only`` pattern matches a discovered cell (a UsageError naming the others);
    the run itself checks it too, the watch's first discovery does not."""
    import asyncio

    from laya_tui.core.run import discover_checked
    from laya_tui.core.runner import Runner

    async def go() -> None:
        runner = Runner(config)
        try:
            await discover_checked(runner)
        finally:
            await runner.close()

    asyncio.run(go())


def _nothing_configured(hint: str, args: argparse.Namespace) -> int:
    """The configuration hint: a paragraph on stderr, or one screen on a terminal; exit 2."""
    if args.list or wants_headless(args.headless, args.json):
        sys.stderr.write(hint)
        return EXIT_USAGE
    from laya_tui.tui.screens.hint import show_hint

    show_hint(hint)
    return EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``laya-tui`` command."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:
        return _run_subcommand(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    try:
        from laya_tui.cli.config import settings_from

        settings = settings_from(args)  # flags > [tool.laya-tui] > defaults, checked
        check_output_path(settings.outputs.json, "--json")
        if settings.list_only:
            from laya_tui.cli.headless import list_probes

            return list_probes(settings.run)
        from laya_tui.report.gates import prepare_gates

        gates = prepare_gates(settings)  # bad baseline/outputs: exit 2, nothing runs
        if wants_headless(settings.headless, settings.outputs.json):
            from laya_tui.cli.headless import run_headless

            if settings.watch and settings.run.only:
                check_only(settings.run)  # a watch would wait on a typo forever

            return run_headless(settings, gates)
        from laya_tui.cli.dashboard import run_app

        return run_app(settings, gates)
    except NothingConfigured as exc:
        return _nothing_configured(str(exc), args)
    except UsageError as exc:
        print(f"laya-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("laya-tui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `laya-tui --list | head`: the reader had enough, not an error
        _quiet_stdout()
        return 141
    except Exception as exc:  # noqa: BLE001 - exit 3 with one line, never a traceback
        return internal_error("laya-tui", exc)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
