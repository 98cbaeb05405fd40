"""Every default that more than one module needs, written once: the gates, the baseline
comparison, ``laya-tui diff``, the watcher, the runner and ``--help`` import them from here
(a module of constants, so ``--help`` does not build the Settings classes to print them)."""

from __future__ import annotations

import os

#: A tolerance value "moved" (baseline regression, ``laya-tui diff``) when it got worse or
#: better by more than this fraction; ``tolerance-margin =`` in the table.
DEFAULT_MARGIN = 0.25
#: Watch mode: how long a burst of saves settles before a re-run (``--debounce-ms``).
DEFAULT_DEBOUNCE_MS = 50


def default_jobs() -> int:
    """Families run at once when neither ``--jobs`` nor ``jobs =`` says: two, or one core's."""
    return min(2, os.cpu_count() or 1)
