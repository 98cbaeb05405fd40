"""Keeping large, long-lived containers out of the cyclic collector's young generations.

A list or tuple made in one go (a recording's 200,000 signals copied, a finished probe's
signals frozen into a tuple) starts in generation 0, and each young collection walks every
item until it reaches the oldest generation: at 200,000 items that is 10-15 ms of the
event loop per collection, on the frame it lands in. ``gc.freeze()`` right after making it
moves everything alive now into the permanent generation, which no collection walks (the
dashboard's row lists and the model's rows are kept out the same way; docs/architecture.md,
'The dashboard').
"""

from __future__ import annotations

import gc

#: containers of this many items or more are moved out of the collector's sight when made
FREEZE_ABOVE = 10_000


def freeze_if_large(size: int) -> bool:
    """``gc.freeze()`` when a container of ``size`` items was just made; True if frozen.

    Only for containers that live as long as the process (or nearly): frozen objects are
    never collected, only freed by their reference counts.
    """
    if size < FREEZE_ABOVE:
        return False
    gc.freeze()
    return True
