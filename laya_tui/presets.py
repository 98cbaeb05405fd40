"""Kept for probe files that import ``laya_tui.presets``: the module now lives at
:mod:`laya_tui.families.presets`, and this name is that same module object."""

import sys

from laya_tui.families import presets as _moved

sys.modules[__name__] = _moved
