"""A signal's optional parts, for tests that expect them there: each accessor asserts the
part is present (a failing test names the signal) and returns it typed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from laya_tui.core.report_types import SignalDict, SiteDict


def site_of(sig: SignalDict) -> SiteDict:
    """The signal's site (asserted present)."""
    site = sig.get("site")
    assert site is not None, sig
    return site


def detail_of(sig: SignalDict) -> Mapping[str, Any]:
    """The signal's detail (asserted present)."""
    detail = sig.get("detail")
    assert detail is not None, sig
    return detail
