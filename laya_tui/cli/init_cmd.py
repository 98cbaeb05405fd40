"""``laya-tui init``: write a commented ``[tool.laya-tui]`` table into the project's
pyproject.toml (created when absent): every key of the option table, commented out, with
an example value. An existing table is never touched (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib

from laya_tui.cli.options import template
from laya_tui.core.errors import EXIT_OK, UsageError

#: every ``[tool.laya-tui]`` key, commented out, under its note (from the option table)
TEMPLATE = template()


def write_table(workspace: str) -> str:
    """Add :data:`TEMPLATE` to ``<workspace>/pyproject.toml``; returns what was done."""
    path = os.path.join(workspace, "pyproject.toml")
    if not os.path.isdir(workspace):
        raise UsageError(f"workspace folder does not exist: {workspace}")
    if not os.path.exists(path):
        with open(path, "x", encoding="utf-8") as fh:
            fh.write(TEMPLATE)
        return f"created {path} with a commented [tool.laya-tui] table"
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: invalid TOML ({exc}); fix it, then run init again") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    tool = data.get("tool")
    if isinstance(tool, dict) and "laya-tui" in tool:
        raise UsageError(f"{path} already has a [tool.laya-tui] table; left it unchanged")
    text = raw.decode("utf-8")
    prefix = "" if not text.strip() else ("\n" if text.endswith("\n") else "\n\n")
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(prefix + TEMPLATE)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return f"added a commented [tool.laya-tui] table to {path}"


def main(argv: list[str]) -> int:
    """``laya-tui init [--workspace DIR]``."""
    ap = argparse.ArgumentParser(prog="laya-tui init",
                                 description="Write a commented [tool.laya-tui] table into "
                                 "the project's pyproject.toml (never over an existing one).")
    ap.add_argument("--workspace", metavar="DIR", default=".",
                    help="project folder (default: the current folder)")
    args = ap.parse_args(argv)
    print(f"laya-tui: {write_table(os.path.abspath(args.workspace))}; edit it, then run "
          "laya-tui --list", file=sys.stderr)
    return EXIT_OK
