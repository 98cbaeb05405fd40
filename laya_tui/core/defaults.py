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


def usable_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup v2 CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, round(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


#: The variable that sets a worker's intra-op threads (torch's OpenMP pool, and MKL's).
THREADS_VAR = "OMP_NUM_THREADS"


def worker_threads(jobs: int) -> int:
    """Intra-op threads per worker: the usable cores shared by the ``jobs`` workers that run
    at once (``--jobs 1`` gives one worker every core). More would oversubscribe the cores:
    OpenMP threads then spin at every barrier while their partner waits for a core, which
    on two cores cost a tiny model's forward 3-5x its CPU (issue 45)."""
    return max(1, usable_cores() // max(1, jobs))

