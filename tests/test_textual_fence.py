"""Textual's private API is used in one module, ``tui/textual_fence.py``, and Textual is
pinned to the range the dashboard's tests run (issue 44).

A private Textual name is one that starts with ``_`` (not a dunder) and that Textual defines
on a class the dashboard uses: a method, a class attribute or an attribute its source sets on
``self``. Outside the fence the dashboard may not import a Textual module or name that starts
with ``_``, override or call such a method on its own classes, or reach such an attribute on
any object (``screen._dirty_widgets``, ``getattr(screen, "_dirty_widgets")``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap
import tomllib
from functools import cache
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from textual.widgets import Tree

from tests._util import REPO

TUI = REPO / "laya_tui" / "tui"
FENCE = TUI / "textual_fence.py"


#: Named tuples' own methods: public, though they start with ``_``.
NAMED_TUPLE_API = ("_replace", "_asdict", "_make", "_fields", "_field_defaults")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@cache
def _source_names(cls: type) -> frozenset[str]:
    """Private names a Textual class defines: its own dict, and ``self._x`` its code sets."""
    names = {n for n in vars(cls) if _private(n)}
    if issubclass(cls, tuple):  # a named tuple's _replace, _asdict... are its public API
        names -= set(NAMED_TUPLE_API)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return frozenset(names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self" \
                and _private(node.attr):
            names.add(node.attr)
    return frozenset(names)


def textual_privates(cls: type) -> set[str]:
    """The private names of every Textual class in ``cls``'s MRO."""
    out: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] == "textual":
            out |= _source_names(base)
    return out


def _textual_classes_used() -> list[type]:
    """Every Textual class a dashboard module imports or subclasses (with their MROs)."""
    found: list[type] = []
    for path in sorted(TUI.rglob("*.py")):
        module = importlib.import_module(_module_name(path))
        for value in vars(module).values():
            if isinstance(value, type):
                found += [b for b in value.__mro__ if b.__module__.startswith("textual")]
    return list(dict.fromkeys(found))


@cache
def all_textual_privates() -> frozenset[str]:
    out: set[str] = set()
    for cls in _textual_classes_used():
        out |= textual_privates(cls)
    return frozenset(out)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def _class_objects(module: object, tree: ast.Module) -> dict[ast.ClassDef, type]:
    """The runtime class of each class statement (nested ones too)."""
    out: dict[ast.ClassDef, type] = {}

    def visit(body: list[ast.stmt], owner: object) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                cls = getattr(owner, node.name, None)
                if isinstance(cls, type):
                    out[node] = cls
                    visit(node.body, cls)

    visit(tree.body, module)
    return out


def private_uses(source: str, module: object | None = None) -> list[str]:
    """``line: what`` for every private Textual name ``source`` uses (see the docstring)."""
    tree = ast.parse(source)
    everywhere = all_textual_privates()
    found: list[str] = []
    classes = _class_objects(module, tree) if module is not None else {}

    def on_self(node: ast.ClassDef) -> set[str]:
        cls = classes.get(node)
        return textual_privates(cls) if cls is not None else set()

    def walk(node: ast.AST, own: set[str]) -> None:
        if isinstance(node, ast.ClassDef):
            own = on_self(node)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                        and item.name in own:
                    found.append(f"{item.lineno}: overrides {item.name}")
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == "textual":
            if any(_private(p) for p in node.module.split(".")) or \
                    any(_private(a.name) for a in node.names):
                found.append(f"{node.lineno}: imports from {node.module}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "textual" and any(
                        _private(p) for p in a.name.split(".")):
                    found.append(f"{node.lineno}: imports {a.name}")
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            is_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            is_super = isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Name) and node.value.func.id == "super"
            if (node.attr in own) if (is_self or is_super) else (node.attr in everywhere):
                found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and \
                isinstance(node.args[1].value, str) and node.args[1].value in everywhere:
            found.append(f"{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
        for child in ast.iter_child_nodes(node):
            walk(child, own)

    walk(tree, set())
    return found


def test_private_textual_names_are_used_in_the_fence_only():
    outside = {}
    for path in sorted(TUI.rglob("*.py")):
        if path == FENCE:
            continue
        module = importlib.import_module(_module_name(path))
        uses = private_uses(path.read_text(encoding="utf-8"), module)
        if uses:
            outside[str(path.relative_to(REPO))] = uses
    assert outside == {}, "use laya_tui/tui/textual_fence.py for these"


def test_the_check_finds_what_the_fence_does():
    """The check is not blind: the fence's own workarounds are each found, and so are the
    forms it looks for written elsewhere."""
    fence = importlib.import_module("laya_tui.tui.textual_fence")
    uses = " ".join(private_uses(FENCE.read_text(encoding="utf-8"), fence))
    for what in ("overrides _on_timer_update", "._on_timer_update", "._scroll_update",
                 "._render_line", "._line_cache", "imports from textual.widgets._footer",
                 "'_layout_required'", "'_dirty_widgets'", "'_bindings_ready'",
                 "'_update_auto_focus'"):
        assert what in uses, what
    sample = textwrap.dedent("""
        import textual._time
        from textual.widgets import Tree

        class Mine(Tree):
            def _on_resize(self, event):
                super()._on_resize(event)
                self._own_thing = self.app._driver

        def f(screen):
            return screen._compositor, getattr(screen, "_dirty_widgets", None)
    """)

    class Mine(Tree):  # what the sample's class is at runtime
        pass

    module = type("M", (), {"Mine": Mine})
    got = [u.split(": ", 1)[1] for u in private_uses(sample, module)]
    assert got == ["imports textual._time", "overrides _on_resize", "._on_resize", "._driver",
                   "._compositor", "getattr(..., '_dirty_widgets')"]


def _textual_requirement() -> Requirement:
    with open(REPO / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    return next(r for r in map(Requirement, deps) if r.name == "textual")


def test_textual_is_pinned_to_the_range_the_fence_was_checked_on():
    """pyproject's range, nox's two Textual sessions, constraints.txt's pin and the fence's
    checked releases agree: the floor session runs the range's lowest release, the latest
    session the range itself, the pin is the newest release read, the next major and an
    older minor are outside the range, and the Textual installed here was read."""
    from laya_tui.tui.textual_fence import CHECKED_ON

    spec = _textual_requirement().specifier
    floor, newest = Version(CHECKED_ON[0]), Version(CHECKED_ON[-1])
    assert floor in spec and newest in spec
    assert Version(f"{floor.major + 1}.0") not in spec  # the next major is not let in
    assert Version(f"{floor.major}.{floor.minor - 1}") not in spec  # nor an older minor
    nox = (REPO / "noxfile.py").read_text(encoding="utf-8")
    assert f'nox.param("=={floor}", id="floor")' in nox
    latest = re.search(r'nox\.param\("([^"]+)", id="latest"\)', nox)
    assert latest is not None and SpecifierSet(latest.group(1)) == spec
    pin = re.search(r"^textual==(\S+)$", (REPO / "constraints.txt").read_text(), re.M)
    assert pin is not None and Version(pin.group(1)) == newest
    assert version("textual") in CHECKED_ON  # a newer one: read the fence again, add it
