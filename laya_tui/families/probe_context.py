"""The probe's ``ctx`` (:class:`laya_tui.api.Context`) as the families use it: the families
layer does not import the api, so it names the methods it calls here (one protocol for
every family; ``tests/test_tilelang_records.py`` keeps it in step with the api). ``skip``,
``fail`` and ``error`` raise: they end the probe."""

from __future__ import annotations

import os
from typing import Any, NoReturn, Protocol

from laya_tui.core.report_types import SignalDict


class ProbeContext(Protocol):
    """What a family calls on the probe's context; every method emits signals."""

    @property
    def id(self) -> str: ...

    @property
    def options(self) -> dict[str, Any]:
        """The run's options (``--out``, the numerics switches...): an open mapping."""
        ...

    def signal(self, kind: str, **fields: Any) -> SignalDict: ...

    def environment(self, subject: str, value: Any, **fields: Any) -> SignalDict: ...

    def timing(self, subject: str, seconds: float, **fields: Any) -> SignalDict: ...

    def step(self, name: str) -> None: ...

    def artifact(self, subject: str, path: str | os.PathLike[str],
                 **fields: Any) -> SignalDict: ...

    def log(self, text: str, **fields: Any) -> SignalDict: ...

    def tolerance(self, subject: str, value: float, limit: float, *,
                  passed: bool | None = None, **fields: Any) -> SignalDict: ...

    def depends_on(self, path: str | os.PathLike[str]) -> None: ...

    def lowering(self, subject: str, *, passed: bool, reason: str | None = None,
                 **fields: Any) -> SignalDict: ...

    def compare(self, subject: str, out: Any, ref: Any, *, atol: float, mask: Any = None,
                **fields: Any) -> SignalDict: ...

    def skip(self, reason: str) -> NoReturn: ...

    def fail(self, reason: str) -> NoReturn: ...

    def error(self, reason: str) -> NoReturn: ...
