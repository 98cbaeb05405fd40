"""Clean-ups for captured stderr before it is shown or stored."""

from __future__ import annotations

import re

_EXTENSIONS = re.compile(r"^Extension modules: .*?\(total: (\d+)\)$", re.M)


def trim_faulthandler(text: str) -> str:
    """Replace faulthandler's list of loaded extension modules with its count.

    The list can run to thousands of characters and push the crash's stack out of a
    log tail.
    """
    return _EXTENSIONS.sub(r"Extension modules: (\1 loaded; list omitted)", text)
