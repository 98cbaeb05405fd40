"""Every use of Textual's private API in the dashboard, in one place.

Names that start with ``_`` may change in any Textual release. pyproject.toml pins
``textual>=8.2,<9`` and noxfile.py runs the dashboard's tests on the floor (8.2.0) and the
newest 8.x (``textual(floor)``, ``textual(latest)``); each workaround below was read in the
source of both ends, :data:`CHECKED_ON`, and says why it exists. The rest of
``laya_tui/tui`` calls the names here only: ``tests/test_textual_fence.py`` fails on a
private Textual name used anywhere else. Moving to Textual 9: read each one again, then
widen the pin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rich.style import Style
from textual.geometry import Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer, Tree

# Textual exports FooterKey from no public module (8.2): KeyFooter composes the keys itself
# so that they are in the first frame (widgets/footer.py).
from textual.widgets._footer import FooterKey

__all__ = ["CHECKED_ON", "FooterKey", "PacedScreen", "auto_focus_now", "grow_tree_line_cache",
           "mark_bindings_ready", "repaint_due", "tree_line", "update_scrollbars"]

#: The Textual releases whose source every workaround here was read in (the pin's two ends).
CHECKED_ON = ("8.2.0", "8.2.8")


class PacedScreen(Screen[None]):
    """A screen whose repaint can wait: :meth:`update_due` decides when it runs.

    ``Screen._on_timer_update`` is the callback of the screen's repaint timer, the one place
    a repaint starts, and Textual has no public hook there (8.2.0-8.2.8). The main screen
    lets a repaint right after other heavy work wait a moment (``tui/loop_pass.py``).
    """

    def _on_timer_update(self) -> None:
        self.update_due(super()._on_timer_update)

    def update_due(self, update: Callable[[], None]) -> None:
        """The repaint timer fired: run ``update`` now or later (default: now)."""
        update()


#: a tree's node data (whatever it is: these read the tree's lines only)
_Data = TypeVar("_Data")


def repaint_due(screen: Screen[object], besides: Widget) -> bool:
    """The screen has a layout or a repaint of a widget other than ``besides`` waiting.

    ``Screen._layout_required`` and ``Screen._dirty_widgets`` (8.2.0-8.2.8) are what its next
    update will do; no public name says it. The signal table's build steps wait for that
    repaint (widgets/signal_table.py). Read with guards: a Textual without them says no.
    """
    if getattr(screen, "_layout_required", False):
        return True
    return any(w is not besides for w in getattr(screen, "_dirty_widgets", None) or ())


def update_scrollbars(widget: Widget, virtual_size: Size) -> None:
    """Resize ``widget``'s scrollbars to ``virtual_size`` and nothing else.

    Setting ``virtual_size`` lays the whole screen out again (every widget repainted) for
    what only moves the signal table's scrollbar; ``Widget._scroll_update`` (8.2.0-8.2.8) is
    the part of it the scrollbars need.
    """
    widget._scroll_update(virtual_size)


def tree_line(tree: Tree[_Data], y: int, x1: int, x2: int, style: Style) -> Strip:
    """Line ``y`` of ``tree`` (columns ``x1``..``x2``) drawn over ``style``.

    ``Tree.render_line`` takes ``rich_style`` for every line, each a walk over every
    ancestor's styles (most of a repaint of the probe tree); ``Tree._render_line``
    (8.2.0-8.2.8) takes the style given, computed once per paint.
    """
    return tree._render_line(y, x1, x2, style)


def grow_tree_line_cache(tree: Tree[_Data], height: int) -> None:
    """Let ``tree``'s line cache hold ``height`` lines, keeping the lines it has.

    Tree's own resize handler does this and then clears every cached line; the probe tree
    skips that handler when only its height changed (the lines are cached by width), and
    ``Tree._line_cache`` (8.2.0-8.2.8) is where the lines are.
    """
    tree._line_cache.grow(height)


def mark_bindings_ready(footer: Footer) -> None:
    """Let ``footer`` compose its keys at once.

    ``Footer._bindings_ready`` (a reactive, 8.2.0-8.2.8) keeps Footer empty until the first
    bindings signal; KeyFooter composes its keys with the first frame instead. Guarded: a
    Textual without it composes as usual.
    """
    ready = getattr(Footer, "_bindings_ready", None)
    if ready is not None:
        footer.set_reactive(ready, True)


def auto_focus_now(screen: Screen[object]) -> None:
    """Give ``screen``'s auto-focus widget the focus now rather than after composing.

    ``Screen._update_auto_focus`` (8.2.0-8.2.8) is what Textual runs right after a screen
    is composed; run earlier, the focused widget's keys are in the footer's first frame
    instead of a rebuild later. Guarded: a Textual without it focuses as usual.
    """
    update = getattr(screen, "_update_auto_focus", None)
    if update is not None:
        update()
