"""Exit codes and the usage error shared by the CLI, headless and watch modes."""

EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""
