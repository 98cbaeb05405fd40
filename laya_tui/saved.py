"""Read a saved report (``laya-tui show``/``diff``): the baseline loader's checks, its wording.

One validation for every reader of an earlier report: :func:`laya_tui.baseline.load_baseline`
does the work (schema version, shape, truncation); only its messages are re-worded, since the
file here is the subject, not a baseline. Standard library only.
"""

from __future__ import annotations

from typing import Any

from laya_tui.baseline import load_baseline
from laya_tui.errors import UsageError


def load_saved_report(path: str) -> dict[str, Any]:
    """The report document at ``path``; any problem is a one-line :class:`UsageError`."""
    try:
        return load_baseline(path).report
    except UsageError as exc:
        text = str(exc)
        for old, new in ((f"cannot read baseline {path}", f"cannot read {path}"),
                         (f"baseline {path}", path),
                         ("regenerate the baseline", "regenerate the report")):
            text = text.replace(old, new)
        raise UsageError(text) from None
