"""Command line: ``laya-tui`` (dashboard), ``--headless --json`` (CI), ``--list``, ``--watch``.

Only argparse and the standard library at import time: ``--help`` and ``--list`` must stay
well under half a second, and this process never imports torch & co (docs/architecture.md,
'Processes and the one rule').
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, NoReturn

from laya_tui.cli.options import add_all_options, add_options
from laya_tui.cli.project import NothingConfigured
from laya_tui.core.errors import EXIT_USAGE, UsageError, internal_error
from laya_tui.core.files import check_output_path

if TYPE_CHECKING:
    from laya_tui.core.settings import RunOptions

class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"laya-tui: error: {message} (see laya-tui --help)\n")


class SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser: a bad flag is one line naming the subcommand, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_report_flags(ap: argparse.ArgumentParser, json_help: str) -> None:
    """``--json`` and the CI files a report-writing subcommand writes (``merge``, ``import``)."""
    add_options(ap, ("json", "junit", "markdown", "html"), {
        "json": json_help, "junit": "also write JUnit XML",
        "html": "also write the self-contained HTML page"})


def add_workspace_flag(ap: argparse.ArgumentParser) -> None:
    """``--workspace DIR``: where a subcommand reads its ``[tool.laya-tui]`` gate settings."""
    add_options(ap, ("workspace",), {"workspace": "read gate settings from DIR/pyproject.toml "
                                     "[tool.laya-tui] (default: the current folder)"})


def add_gate_flags(ap: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The gate flags, shared by a run and ``laya-tui merge`` (they mean the same in both)."""
    add_options(ap, ("baseline", "fail_on", "max_counts", "fail_on_env_change"))


def add_finding_flags(ap: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--sarif`` and ``--annotations``, shared by a run and ``laya-tui merge``."""
    add_options(ap, ("sarif", "annotations"))


def build_parser() -> argparse.ArgumentParser:
    """The run's argument parser: every flag of the option table (``core/settings.py``)."""
    ap = _Parser(
        prog="laya-tui",
        description="Explain/fallback diagnostics for PyTorch ports: run probes, "
        "see what fell back, recompiled, bounced through the host, failed to lower or drifted.",
        epilog="subcommands (each with its own --help): laya-tui init (write a [tool.laya-tui] "
        "table), laya-tui show REPORT (the dashboard over a saved report), laya-tui diff BASE "
        "NEW (what changed), laya-tui merge REPORT... (shards and hosts as one report), laya-tui "
        "import TRACE_DIR (a TORCH_TRACE folder as a report; show opens one too)",
    )
    add_all_options(ap)
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
    if args.list_only or wants_headless(args.headless, args.json):
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
