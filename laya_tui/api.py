"""The probe API: ``@probe``, parameter cells and the ``ctx`` object probes report through.

Probe files import this module at top level, so it stays light: no torch, tilelang or mlx
here. Heavy helpers (explain regions, numeric comparison) import their libraries lazily,
inside the worker that runs the probe.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from laya_tui.core.cellid import cell_id
from laya_tui.core.open_types import Detail, Kwargs, Params, ProbeOptions
from laya_tui.core.protocol import DEFAULT_TIMEOUTS, FALLBACK_TIMEOUT, Reply  # noqa: F401 - re-exported
from laya_tui.core.signals import make_signal

if TYPE_CHECKING:
    from laya_tui.core.protocol import SignalEvent
    from laya_tui.core.report_types import SignalDict
    from laya_tui.families.explain.region import ExplainRegion
    from laya_tui.families.explain.steady import SteadyResult

#: A probe function, ``func(ctx, **kwargs)``; what it returns is not read.
ProbeFunc = TypeVar("ProbeFunc", bound="Callable[..., object]")


@dataclass(frozen=True)
class Param:
    """One cell of a parametrised probe: its id suffix and the keyword arguments it gets.

    ``name`` overrides the probe's leaf name for this cell, so one probe function can
    expand into ``tilelang/gemm_kernel[c,bf16,gpu]`` and ``tilelang/rope_kernel[...]``.
    """

    id: str
    kwargs: Kwargs = field(default_factory=dict)
    name: str | None = None
    deps: tuple[str, ...] = ()


def param(id: str, *, name: str | None = None, deps: Iterable[str] = (), **kwargs: object) -> Param:
    """Build a :class:`Param` (``param("c,fp32,cpu", name="gemm_kernel", target="c")``)."""
    return Param(id=id, kwargs=kwargs, name=name, deps=tuple(str(d) for d in deps))


@dataclass
class ProbeSpec:
    """What ``@probe`` records on a function."""

    func: Callable[..., object]
    family: str
    name: str
    params: Iterable[Param] | Callable[[], Iterable[Param]] | None = None
    timeout: float | None = None

    def cells(self) -> list[tuple[str, Param | None]]:
        """Expand into ``(probe_id, param)`` pairs with stable ids."""
        if self.params is None:
            return [(cell_id(self.family, self.name), None)]
        params = self.params() if callable(self.params) else self.params
        out: list[tuple[str, Param | None]] = []
        for p in params:
            if not isinstance(p, Param):
                p = Param(id=str(p), kwargs={"value": p})
            out.append((cell_id(self.family, p.name or self.name, p.id), p))
        return out


def probe(
    family: str,
    *,
    name: str | None = None,
    params: Iterable[Param] | Callable[[], Iterable[Param]] | None = None,
    timeout: float | None = None,
) -> Callable[[ProbeFunc], ProbeFunc]:
    """Mark ``func(ctx, **kwargs)`` as a probe of ``family``.

    ``params`` is a list of :func:`param` cells, or a light zero-argument callable returning
    one (evaluated at discovery, so it must not import heavy libraries).
    """
    if not family or "/" in family:
        raise ValueError(f"probe family must be a non-empty name without '/': {family!r}")

    def mark(func: ProbeFunc) -> ProbeFunc:
        func.__laya_probe__ = ProbeSpec(  # type: ignore[attr-defined]
            func=func, family=family, name=name or func.__name__, params=params, timeout=timeout
        )
        return func

    return mark


def options() -> ProbeOptions:
    """Run options given to probes (``kernels``, ``models``, ``out``, ``workspace``...)."""
    import json

    raw = os.environ.get("LAYA_TUI_OPTIONS")
    if not raw:
        return {}
    opts = json.loads(raw)
    if not isinstance(opts, dict):
        raise ValueError(f"LAYA_TUI_OPTIONS must hold a JSON object, not {type(opts).__name__}")
    return opts


def _failure_text(sig: SignalDict) -> str:
    """One line for a failing signal: ``tolerance logits: 0.31 > limit 0.05``."""
    head = " ".join(str(x) for x in (sig["kind"], sig.get("subject")) if x)
    if sig.get("reason"):
        return f"{head}: {sig['reason']}"
    if sig.get("value") is not None and sig.get("limit") is not None:
        from laya_tui.core.units import past_limit  # the reports' own formatting

        return f"{head}: {past_limit(sig['value'], sig['limit'])}"
    return head


def _detail_of(fields: dict[str, object]) -> Detail:
    """A copy of the ``detail`` a caller passed among ``fields`` (taken out of them)."""
    raw = fields.pop("detail", None) or {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"detail must be a mapping, not {type(raw).__name__}")
    return dict(raw)


class Skipped(Exception):
    """Raised by :meth:`Context.skip`; ends the probe with status ``skipped``."""


class Failed(Exception):
    """Raised by :meth:`Context.fail`; ends the probe with status ``failed``."""


class Unexamined(Exception):
    """Raised by :meth:`Context.error`; ends the probe with status ``error``."""


class Context:
    """The only way a probe reports: every method turns into signals on the pipe."""

    def __init__(
        self,
        probe_id: str,
        family: str,
        emit: Callable[[SignalEvent], None],
        *,
        params: Params | None = None,
        opts: ProbeOptions | None = None,
        add_dep: Callable[[str], None] | None = None,
        on_step: Callable[[str], None] | None = None,
    ) -> None:
        self.id = probe_id
        self.family = family
        self.params = params or {}
        self.options = opts if opts is not None else options()
        self._emit = emit
        self._add_dep = add_dep
        self._on_step = on_step
        self.failures: list[str] = []
        self.artifacts_dir = self.options.get("out")

    # -- the primitive -------------------------------------------------------------
    def signal(self, kind: str, **fields: object) -> SignalDict:
        """Emit one signal of ``kind`` (see :data:`laya_tui.core.signals.FIELDS`)."""
        sig = make_signal(kind, self.id, **fields)
        if sig.get("passed") is False:
            self.failures.append(_failure_text(sig))
        self._emit({"type": Reply.SIGNAL, "probe": self.id, "signal": sig})
        return sig

    # -- conveniences --------------------------------------------------------------
    def environment(self, subject: str, value: object, **fields: object) -> SignalDict:
        """An environment fact (a version, a path, a device)."""
        return self.signal("environment", subject=subject, value=value, **fields)

    def timing(self, subject: str, seconds: float, **fields: object) -> SignalDict:
        """A measured duration."""
        return self.signal("timing", subject=subject, seconds=round(float(seconds), 6), **fields)

    def step(self, name: str) -> None:
        """Say that the probe begins step ``name`` (``export``, ``package``...): not a
        signal, nothing in the report; a timeout's reason names the step it was in."""
        if self._on_step is not None:
            self._on_step(str(name))

    @contextlib.contextmanager
    def timed(self, subject: str, **fields: object) -> Iterator[dict[str, float]]:
        """Time the block as step ``subject`` and emit a ``timing`` signal; yields a dict
        that gets ``seconds``."""
        self.step(subject)
        box: dict[str, float] = {}
        t0 = time.perf_counter()
        try:
            yield box
        finally:
            box["seconds"] = time.perf_counter() - t0
            self.timing(subject, box["seconds"], **fields)

    def artifact(self, subject: str, path: str | os.PathLike[str], **fields: object) -> SignalDict:
        """A file the probe produced (generated source, package); bytes filled in if it exists."""
        path = os.fspath(path)
        size = os.path.getsize(path) if os.path.isfile(path) else None
        detail = _detail_of(fields)
        detail.setdefault("path", path)
        return self.signal("artifact", subject=subject, bytes=fields.pop("bytes", size),
                           detail=detail, **fields)

    def lowering(self, subject: str, *, passed: bool, reason: str | None = None,
                 **fields: object) -> SignalDict:
        """A lowering/build/run outcome of a kernel cell."""
        return self.signal("lowering", subject=subject, passed=passed, reason=reason, **fields)

    def tolerance(self, subject: str, value: float, limit: float, *, passed: bool | None = None,
                  **fields: object) -> SignalDict:
        """A numeric delta against its limit; ``passed`` defaults to ``value <= limit``."""
        value = float(value)
        ok = (value <= limit) if passed is None else passed
        if value != value:  # NaN never passes
            ok = False
        return self.signal("tolerance", subject=subject, value=value, limit=float(limit),
                           passed=bool(ok), **fields)

    def compare(self, subject: str, out: object, ref: object, *, atol: float,
                mask: object = None, passed: bool | None = None,
                **fields: object) -> SignalDict:
        """Compare ``out`` with ``ref`` (torch, numpy or mlx arrays): max |diff| vs ``atol``.

        ``mask`` (broadcastable boolean) restricts the comparison to valid positions.
        """
        from laya_tui.families.numeric import max_abs_diff

        value, detail = max_abs_diff(out, ref, mask=mask)
        extra = _detail_of(fields)
        extra.update(detail)
        return self.tolerance(subject, value, atol, passed=passed, detail=extra, **fields)

    def log(self, text: str, **fields: object) -> SignalDict:
        """A free-form note kept with the probe's signals."""
        return self.signal("log", reason=text, **fields)

    def depends_on(self, path: str | os.PathLike[str]) -> None:
        """Declare a file this probe read, so watch mode and the cache see its edits."""
        if self._add_dep is not None:
            self._add_dep(os.path.abspath(os.fspath(path)))

    def skip(self, reason: str) -> NoReturn:
        """End the probe as ``skipped`` with ``reason`` (say how to install what is missing)."""
        raise Skipped(reason)

    def fail(self, reason: str) -> NoReturn:
        """End the probe as ``failed`` with ``reason``: a finding about the subject."""
        raise Failed(reason)

    def error(self, reason: str) -> NoReturn:
        """End the probe as ``error``: it could not examine its subject at all.

        Use it for what the user must fix before anything can be found (kernel arguments
        unknown, a model module that does not import, a factory that raises); a default gate
        fails on it, unlike :meth:`fail`, which reports what the subject did.
        """
        raise Unexamined(reason)

    def explain(self, name: str, *, with_stack: bool = True, **kwargs: object) -> ExplainRegion:
        """An explain region around model code (RBLN when available, portable otherwise)."""
        from laya_tui.families.explain import open_region

        return open_region(self, name, with_stack=with_stack, **kwargs)

    def explain_steady(self, name: str, fn: Callable[[], object], *, warmup: int = 2,
                       **kwargs: Any) -> SteadyResult:
        """Cold region around ``fn()``, ``warmup`` calls, warm region around a later call;
        emits both and their difference (see :func:`laya_tui.families.explain.explain_steady`)."""
        from laya_tui.families.explain import explain_steady

        return explain_steady(self, name, fn, warmup=warmup, **kwargs)
