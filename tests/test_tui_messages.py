"""Every message the dashboard posts is nested in the class that posts it and has a handler
Textual dispatches to: a method named by Textual's rule for nested messages
(``SignalTable.SignalChosen`` -> ``on_signal_table_signal_chosen``) on some dashboard class."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import is_dataclass

from textual.message import Message

import laya_tui.tui


def _classes() -> list[type]:
    """Every class defined in a dashboard module, nested ones too."""
    found: list[type] = []

    def visit(owner: object, module: str) -> None:
        for value in vars(owner).values():
            if isinstance(value, type) and value.__module__ == module and value not in found:
                found.append(value)
                visit(value, module)

    for info in pkgutil.walk_packages(laya_tui.tui.__path__, "laya_tui.tui."):
        module = importlib.import_module(info.name)
        visit(module, info.name)
    return found


def test_each_message_is_nested_and_handled():
    classes = _classes()
    messages = [c for c in classes if issubclass(c, Message)
                and not any(issubclass(o, c) and o is not c for o in classes)]  # not a base
    assert len(messages) >= 10
    handlers = {name for c in classes for name in vars(c) if name.startswith("on_")}
    for message in messages:
        assert "." in message.__qualname__, f"{message.__qualname__}: nest it in its poster"
        assert is_dataclass(message), f"{message.__qualname__}: a dataclass, no __init__"
        assert message.handler_name in handlers, f"nothing handles {message.__qualname__}"


def test_handler_names_follow_textuals_rule():
    from laya_tui.tui.widgets.signal_table import SignalTable

    assert SignalTable.SignalChosen.handler_name == "on_signal_table_signal_chosen"
