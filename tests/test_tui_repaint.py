"""What a focus change and the filter box repaint (issue 30: Enter, Esc and / answer in
under 50 ms at any number of signals). Their cost is Textual's, per widget repainted or
laid out, so these check what gets repainted and laid out, not a time: the whole screen
not repainted on a focus change, the probe tree restyled without being rebuilt, the
filter box shown and hidden over the panes without moving them."""

from __future__ import annotations

import pytest
from textual._compositor import Compositor
from textual.widgets import Input

from tests._tui import SIZE, recorded_app, screen_lines

pytestmark = pytest.mark.asyncio
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 45), id="160x45")]


async def _settled(app, pilot) -> None:
    await app.settled()
    await pilot.pause()


async def test_a_focus_change_repaints_the_widgets_not_the_whole_screen(monkeypatch):
    app = recorded_app()
    full: list[int] = []
    orig = Compositor.render_full_update

    def counted(self, *args, **kwargs):
        full.append(1)
        return orig(self, *args, **kwargs)

    async with app.run_test(size=SIZE) as pilot:
        await _settled(app, pilot)
        main = app.main_screen
        monkeypatch.setattr(Compositor, "render_full_update", counted)
        tree_style = main.tree.rich_style
        main.table.focus()
        await pilot.pause()
        assert main.focused is main.table
        # the tree lost its focus look (Tree's :focus background tint), the table has it
        assert main.tree.rich_style != tree_style
        await pilot.press("escape")  # the table -> the tree
        await pilot.pause()
        assert main.focused is main.tree
        assert main.tree.rich_style == tree_style
        assert full == [], "a focus change repainted the whole screen"


async def test_the_tree_is_restyled_not_rebuilt_on_focus_and_on_a_height_change():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await _settled(app, pilot)
        main = app.main_screen
        tree = main.tree
        lines = tree._tree_lines
        shown = screen_lines(app)
        main.table.focus()
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert tree._tree_lines is lines, "a focus change rebuilt the tree's lines"
        assert screen_lines(app) == shown  # and it looks as it did
        await pilot.resize_terminal(SIZE[0], SIZE[1] - 6)  # only the height changes
        await pilot.pause()
        assert tree._tree_lines is lines
        assert tree.size.height < SIZE[1] - 6
        width = tree.size.width
        await pilot.resize_terminal(80, SIZE[1] - 6)  # a narrower tree: rebuilt
        await pilot.pause()
        await pilot.pause()
        assert tree.size.width < width
        assert tree._tree_lines is not lines


@pytest.mark.parametrize("size", SIZES)
async def test_the_filter_box_opens_over_the_panes_above_the_footer(size, monkeypatch):
    app = recorded_app()
    moved: set = set()  # widgets whose place in the compositor's map changed (repainted)
    orig = Compositor.reflow

    def reflow(self, parent, size):
        old = dict(self._full_map)
        result = orig(self, parent, size)
        moved.update(w for w, g in self._full_map.items() if old.get(w) != g)
        return result

    async with app.run_test(size=size) as pilot:
        await _settled(app, pilot)
        main = app.main_screen
        panes = {w: main.query_one(w).region for w in ("#tree", "#signals", "#detail")}
        monkeypatch.setattr(Compositor, "reflow", reflow)
        await pilot.press("slash")
        await pilot.pause()
        # neither the panes nor the summary were placed anew (the compositor numbers a
        # container's children: a box after them would have renumbered every one)
        assert not moved & {main.tree, main.table, main.detail, main.query_one("#summary")}
        box = main.query_one("#filter", Input)
        assert main.focused is box
        width, height = size
        # full width, its 3 rows right above the footer, which stays on the last line
        assert box.region.width == width
        assert box.region.bottom == height - 1
        lines = screen_lines(app)
        assert "filter: text in any column" in "\n".join(lines[height - 4:height - 1])
        assert "Back" in lines[-1]
        # the panes neither moved nor shrank: nothing was laid out again
        assert {w: main.query_one(w).region for w in panes} == panes
        await pilot.press("escape")
        await pilot.pause()
        assert box.display is False
        assert {w: main.query_one(w).region for w in panes} == panes
        assert "filter: text in any column" not in "\n".join(screen_lines(app))
