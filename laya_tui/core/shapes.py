"""Safe reads of JSON-shaped values: a report, a signal, a worker event.

Documents come from files and pipes, so a field that should be an object may be anything.
These accessors give the shape the reader expects (an empty one when the value is not it),
which keeps the readers short and lets the type checker follow them.
"""

from __future__ import annotations

from typing import Any

from laya_tui.core.open_types import JsonObject


def as_dict(value: object) -> JsonObject:
    """``value`` when it is a dict, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """``value`` when it is a list, else an empty list."""
    return value if isinstance(value, list) else []
