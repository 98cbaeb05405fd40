"""The live runner for a run's options: the local :class:`~laya_tui.core.runner.Runner`,
or under ``--cluster`` the :class:`~laya_tui.cluster.runner.ClusterRunner` (imported only
then: it brings Ray). The front ends (cli, tui) build their runner here."""

from __future__ import annotations

from collections.abc import Callable

from laya_tui.core.events import Event
from laya_tui.core.runner import Runner
from laya_tui.core.settings import RunOptions


def make_runner(config: RunOptions, on_event: Callable[[Event], None] | None = None) -> Runner:
    """A runner for ``config`` (raises UsageError for options the cluster refuses)."""
    if getattr(config, "cluster", None):
        from laya_tui.cluster.runner import ClusterRunner

        return ClusterRunner(config, on_event)
    return Runner(config, on_event)
