"""ElementTree lookups a test expects to find: each asserts the element, attribute or text
is there (the failure names it) and returns it typed, not Optional."""

from __future__ import annotations

import xml.etree.ElementTree as ET


def child(el: ET.Element, path: str) -> ET.Element:
    """``el.find(path)``, asserted found."""
    found = el.find(path)
    assert found is not None, f"no {path} in <{el.tag}>"
    return found


def attr(el: ET.Element, name: str) -> str:
    """``el.get(name)``, asserted set."""
    value = el.get(name)
    assert value is not None, f"<{el.tag}> has no {name}"
    return value


def text(el: ET.Element) -> str:
    """``el.text``, asserted set."""
    assert el.text is not None, f"<{el.tag}> has no text"
    return el.text
