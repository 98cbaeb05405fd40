"""Kept for probe files that import ``laya_tui.tolerance``: the module now lives at
:mod:`laya_tui.families.tolerance`, and this name is that same module object."""

import sys

from laya_tui.families import tolerance as _moved

sys.modules[__name__] = _moved
