"""Textual's Footer, drawn with the first frame and rebuilt only when its keys change."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeyFooter(Footer):
    """The same keys as ``Footer``, cheaper at start-up and on focus moves.

    Textual's Footer composes empty, then rebuilds all its key widgets after every bindings
    signal (each focus change publishes one): at start-up that is two or three rebuilds, the
    keys reaching the terminal frames after the rest of the screen. This one composes its
    keys at once, each in its final style, and rebuilds only when the keys it would show
    differ.
    """

    def __init__(self, *args: Any, auto_focus_first: bool = False, **kwargs: Any) -> None:
        """``auto_focus_first``: let the screen auto-focus (as Textual does right after
        composing it) before the keys are composed, so the focused widget's keys are in
        the first frame instead of a rebuild later."""
        super().__init__(*args, **kwargs)
        ready = getattr(Footer, "_bindings_ready", None)  # Textual internals (8.x): guarded
        if ready is not None:
            self.set_reactive(ready, True)
        self._shown: tuple[Any, ...] | None = None
        self._auto_focus_first = auto_focus_first

    def _keys(self) -> tuple[Any, ...]:
        """What the footer shows: the shown bindings (and the palette key), in order."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple(
            (binding.key, binding.action, binding.description, binding.group, enabled,
             tooltip, binding.tooltip)
            for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == palette)

    def compose(self) -> ComposeResult:
        auto_focus = getattr(self.screen, "_update_auto_focus", None)
        if self._auto_focus_first and self.screen.focused is None and auto_focus is not None:
            auto_focus()
        self._shown = self._keys()
        for widget in super().compose():
            if isinstance(widget, FooterKey) and hasattr(FooterKey, "compact"):
                # FooterKey starts compact and is then bound to the footer's (not compact):
                # two class changes, each a restyle, per key. Set the end state up front
                # (the palette key is not bound and keeps its own).
                compact = widget.compact if widget.has_class("-command-palette") \
                    else self.compact
                widget.set_reactive(FooterKey.compact, compact)
                widget.set_class(compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and self._keys() != self._shown:
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        # several signals can arrive before the rebuild (focus passing through None)
        if self.is_attached and self._keys() != self._shown:
            await self.recompose()
