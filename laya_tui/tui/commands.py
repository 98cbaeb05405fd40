"""Command palette: the app's actions, a kind filter, and a jump to any probe by id."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from laya_tui.core.signals import KINDS

if TYPE_CHECKING:
    from laya_tui.tui.app import LayaApp

ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("Re-run the selected probe", "rerun", "r"),
    ("Re-run all probes", "rerun_all", "R"),
    ("Toggle watch mode", "toggle_watch", "w"),
    ("Export the report as JSON", "export", "e"),
    ("Filter signals by text", "screen.filter", "/"),
    ("Toggle only failing signals", "screen.toggle_failing", "f"),
    ("Sort signals by the next column", "screen.cycle_sort", "s"),
    ("Show the lowering matrix", "screen.matrix", "m"),
    ("Plot the selected probe's runs over time", "screen.runs", "p"),
    ("Compare the environments (--env)", "envs", "v"),
    ("Open the call site in $EDITOR", "screen.open_editor", "o"),
    ("Help: keys", "help", "?"),
    ("Quit", "quit", "q"),
)


class LayaCommands(Provider):
    """Actions, kind filters and ``Go to probe <id>``."""

    @property
    def laya(self) -> LayaApp:
        return self.app  # type: ignore[return-value]

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        out: list[tuple[str, Callable[[], object], str]] = []
        for text, action, key in ACTIONS:
            out.append((text, partial(self.laya.run_palette_action, action), f"key {key}"))
        for kind in (None, *KINDS):
            label = f"Show only {kind} signals" if kind else "Show every kind of signal"
            out.append((label, partial(self.laya.set_kind_filter, kind), "kind filter"))
        for fam in self.laya.model.families:
            out.append((f"Go to family {fam}", partial(self.laya.go_to, ("family", fam)),
                        "jump in the tree"))
        for pid in self.laya.model.probes:
            out.append((f"Go to probe {pid}", partial(self.laya.go_to, ("probe", pid)),
                        "jump in the tree"))
        return out

    async def discover(self) -> Hits:
        for text, command, help_text in self._commands()[: len(ACTIONS)]:
            yield DiscoveryHit(text, command, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, command, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
