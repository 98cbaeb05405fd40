"""Exit codes and the usage error shared by the CLI, headless and watch modes."""

import os
import sys

EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""


def internal_error(prog: str, exc: BaseException) -> int:
    """Called in an ``except`` block: one line on stderr and exit 3, never a traceback
    (``LAYA_TUI_DEBUG`` set: the exception is raised again instead)."""
    print(f"{prog}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
    if os.environ.get("LAYA_TUI_DEBUG"):
        raise exc
    return EXIT_INTERNAL
