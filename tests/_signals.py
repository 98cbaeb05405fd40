"""Typed access for tests: a signal's optional parts and a table's rows, each asserted
present (a failing test names what was missing) and returned typed, not Optional; and the
named casts a test passes a partial signal, result or report through."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from laya_tui.core.report_types import ReportDict, ResultDict, SignalDict, SiteDict

if TYPE_CHECKING:  # the widget pulls in Textual: only tests of the table need it at run time
    from laya_tui.tui.model import SignalRow
    from laya_tui.tui.widgets.signal_table import SignalTable


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


def row_at(table: SignalTable, index: int) -> SignalRow:
    """The table's row at ``index`` (asserted there)."""
    row = table.row_at(index)
    assert row is not None, index
    return row


def rows_of(table: SignalTable) -> list[SignalRow]:
    """Every row of the table, in order."""
    return [row_at(table, i) for i in range(table.row_count)]


# Partial documents on purpose: a test that builds a signal, a result or a report with only
# the fields the code under test reads (a real one has all its required keys) says so by
# passing it through one of these. Each is a cast, nothing else: the object is returned as is.
def partial_signal(fields: Mapping[str, Any]) -> SignalDict:
    """A signal with only the fields a test is about (e.g. no ``probe``)."""
    return cast(SignalDict, fields)


def partial_result(fields: Mapping[str, Any]) -> ResultDict:
    """A probe result with only the fields a test is about."""
    return cast(ResultDict, fields)


def partial_report(doc: Mapping[str, Any]) -> ReportDict:
    """A report with only the parts a test is about."""
    return cast(ReportDict, doc)
