"""The probe's ``ctx`` (:class:`laya_tui.api.Context`) as the families use it: the families
layer does not import the api, so it names the methods it calls here (one protocol for
every family; ``tests/test_tilelang_records.py`` keeps it in step with the api). ``skip``,
``fail`` and ``error`` raise: they end the probe."""

from __future__ import annotations

import os
from typing import NoReturn, Protocol

from laya_tui.core.open_types import ProbeOptions
from laya_tui.core.report_types import SignalDict


class ProbeContext(Protocol):
    """What a family calls on the probe's context; every method emits signals."""

    @property
    def id(self) -> str: ...

    @property
    def options(self) -> ProbeOptions:
        """The run's options (``--out``, the numerics switches...): an open mapping."""
        ...

    def signal(self, kind: str, **fields: object) -> SignalDict: ...

    def environment(self, subject: str, value: object, **fields: object) -> SignalDict: ...

    def timing(self, subject: str, seconds: float, **fields: object) -> SignalDict: ...

    def step(self, name: str) -> None: ...

    def artifact(self, subject: str, path: str | os.PathLike[str],
                 **fields: object) -> SignalDict: ...

    def log(self, text: str, **fields: object) -> SignalDict: ...

    def tolerance(self, subject: str, value: float, limit: float, *,
                  passed: bool | None = None, **fields: object) -> SignalDict: ...

    def depends_on(self, path: str | os.PathLike[str]) -> None: ...

    def lowering(self, subject: str, *, passed: bool, reason: str | None = None,
                 **fields: object) -> SignalDict: ...

    def compare(self, subject: str, out: object, ref: object, *, atol: float, mask: object = None,
                passed: bool | None = None, **fields: object) -> SignalDict: ...

    def skip(self, reason: str) -> NoReturn: ...

    def fail(self, reason: str) -> NoReturn: ...

    def error(self, reason: str) -> NoReturn: ...
