"""The key footer: Textual's FooterKey widgets, drawn with the first frame, fitted to the
terminal's width and rebuilt only when the keys it would show change.

At any width the help key stays: keys drop out from the least needed up (see ``PRIORITY``)
until the rest fit, compact (less padding) below ``COMPACT_BELOW`` columns. Keys the app
marks off (re-running a saved report) are not shown.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from laya_tui.tui.textual_fence import FooterKey, auto_focus_now, mark_bindings_ready

#: Actions in the order they keep their place in a narrow footer (first: kept longest).
PRIORITY = ("help", "quit", "choose", "select_cursor", "filter", "back", "rerun",
            "toggle_watch", "export", "report_info", "open_editor", "rerun_all")
#: Below this many columns the footer is compact.
COMPACT_BELOW = 120
_PALETTE_CELLS = 12  # "▏^p palette" docked right


def _rank(action: str) -> int:
    return PRIORITY.index(action) if action in PRIORITY else len(PRIORITY)


def key_cells(key_display: str, description: str, compact: bool) -> int:
    """Cells one FooterKey takes (its padding and margin included)."""
    if compact:
        return cell_len(key_display) + 1 + cell_len(description) + 1
    return cell_len(key_display) + 2 + cell_len(description) + 1


def fit_keys(keys: list[tuple[str, str, str]], width: int, compact: bool) -> set[str]:
    """The actions of ``keys`` (``(action, key display, description)``) that fit in
    ``width`` cells, dropping the least needed first."""
    room = width - _PALETTE_CELLS
    kept = {a for a, _, _ in keys}
    cost = {a: key_cells(k, d, compact) for a, k, d in keys}
    for action in sorted(kept, key=_rank, reverse=True):
        if sum(cost[a] for a in kept) <= room or action == "help":
            break
        kept.discard(action)
    return kept


class KeyFooter(Footer):
    """The keys of the focused widget, the screen and the app, fitted to the width.

    Textual's Footer composes empty, then rebuilds all its key widgets after every bindings
    signal (each focus change publishes one): at start-up that is two or three rebuilds, the
    keys reaching the terminal frames after the rest of the screen. This one composes its
    keys at once, each in its final style, and rebuilds only when the keys it would show
    differ (or the width asks for fewer).
    """

    def __init__(self, *, auto_focus_first: bool = False, name: str | None = None,
                 id: str | None = None, classes: str | None = None) -> None:
        """``auto_focus_first``: let the screen auto-focus (as Textual does right after
        composing it) before the keys are composed, so the focused widget's keys are in
        the first frame instead of a rebuild later."""
        super().__init__(name=name, id=id, classes=classes)
        mark_bindings_ready(self)
        self._shown: tuple[object, ...] | None = None
        self._auto_focus_first = auto_focus_first

    def _width(self) -> int:
        return self.app.size.width

    def _key_bindings(self) -> list[tuple[Binding, bool, str]]:
        """The shown bindings, one per action, minus the ones the app turned off."""
        hidden: frozenset[str] = getattr(self.app, "hidden_actions", frozenset)()
        palette = self.app.COMMAND_PALETTE_BINDING
        seen: set[str] = set()
        out = []
        for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items():
            if not binding.show or key == palette or binding.action in hidden:
                continue
            if binding.action in seen:
                continue
            seen.add(binding.action)
            out.append((binding, enabled, tooltip))
        return out

    def _plan(self) -> tuple[bool, list[tuple[Binding, bool, str]]]:
        compact = self._width() < COMPACT_BELOW
        bindings = self._key_bindings()
        keys = [(b.action, self.app.get_key_display(b), b.description) for b, _, _ in bindings]
        kept = fit_keys(keys, self._width(), compact)
        return compact, [t for t in bindings if t[0].action in kept]

    def _keys(self) -> tuple[object, ...]:
        """What the footer shows (compared to decide on a rebuild)."""
        compact, bindings = self._plan()
        # what is drawn, not which widget's binding it is: the tree's and the table's Enter
        # look the same, so moving the focus between them rebuilds nothing
        return (compact, self._width(), *(
            (self.app.get_key_display(b), b.key, b.description, enabled)
            for b, enabled, _tooltip in bindings))

    def compose(self) -> ComposeResult:
        if self._auto_focus_first and self.screen.focused is None:
            auto_focus_now(self.screen)
        self._shown = self._keys()
        compact, bindings = self._plan()
        self.set_reactive(Footer.compact, compact)
        self.set_class(compact, "-compact", update=False)
        for binding, enabled, tooltip in bindings:
            key = FooterKey(binding.key, self.app.get_key_display(binding),
                            binding.description, binding.action, disabled=not enabled,
                            tooltip=tooltip or binding.tooltip)
            key.set_reactive(FooterKey.compact, compact)  # its end state up front
            key.set_class(compact, "-compact", update=False)
            yield key
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, binding, enabled, _tooltip = found
                yield FooterKey(binding.key, self.app.get_key_display(binding),
                                binding.description, binding.action,
                                classes="-command-palette", disabled=not enabled,
                                tooltip=binding.tooltip or binding.description)

    def bindings_changed(self, screen: Screen[object]) -> None:
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and self._keys() != self._shown:
            self.call_after_refresh(self._recompose_if_changed)

    def on_resize(self) -> None:
        if self.is_attached and self._keys() != self._shown:
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        # several signals can arrive before the rebuild (focus passing through None)
        if self.is_attached and self._keys() != self._shown:
            await self.recompose()
