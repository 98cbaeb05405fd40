"""Compact JSON encoding for the signal path: ``json.dumps(obj, default=...)`` without its
per-call set-up and circular-reference bookkeeping (signals are plain trees).

Reports are strict JSON (RFC 8259: no ``NaN``, ``Infinity``): :func:`finite` writes a
measured value that is not a finite number as ``null``, with a ``"nonfinite"`` field beside
it saying what it was (``{"value": null, "nonfinite": {"value": "nan"}}``). The strict
encoders here try the fast C encoder first and walk the value only when it holds one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from laya_tui.core.open_types import JsonObject

if TYPE_CHECKING:
    from _json import make_encoder

_c_make_encoder: type[make_encoder] | None
try:
    from _json import make_encoder as _c_make_encoder
except ImportError:  # an interpreter without the C accelerator
    _c_make_encoder = None

#: the field that says which values of an object were not finite numbers
NONFINITE = "nonfinite"


def _label(x: float) -> str:
    return "nan" if math.isnan(x) else "inf" if x > 0 else "-inf"


def _bad(x: object) -> bool:
    return type(x) is float and not math.isfinite(x)


_PLAIN = (str, int, float, bool, type(None), dict, list, tuple)


def finite(obj: object, default: Callable[[object], object] | None = None) -> object:
    """``obj`` with every non-finite float replaced by ``None``; a dict holding one (directly
    or in a list) gets ``"nonfinite": {key or "key[i]": "nan" | "inf" | "-inf"}``. Objects
    without one come back as they are (not copied). ``default`` converts values JSON has no
    type for first (a tensor scalar to its float), as the encoder would."""
    if default is not None and not isinstance(obj, _PLAIN):
        obj = default(obj)
        if not isinstance(obj, _PLAIN):
            return obj
    if isinstance(obj, float) and type(obj) is not float:  # a float subclass (numpy)
        obj = float(obj)
    if type(obj) is float:
        return None if not math.isfinite(obj) else obj
    if isinstance(obj, dict):
        out: dict[object, object] | None = None
        notes: dict[str, str] = {}
        for k, v in obj.items():
            if default is not None and not isinstance(v, _PLAIN):
                v = default(v)
            if isinstance(v, float) and type(v) is not float:
                v = float(v)
            if _bad(v):
                notes[str(k)] = _label(v)
                new: object = None
            elif isinstance(v, list | tuple):
                for i, item in enumerate(v):
                    if _bad(item):
                        notes[f"{k}[{i}]"] = _label(item)
                new = finite(v, default)
            else:
                new = finite(v, default)
            if new is not obj[k] and out is None:
                out = dict(obj)
            if out is not None:
                out[k] = new
        if out is None:
            return obj
        if notes:
            before = out.get(NONFINITE)
            out[NONFINITE] = {**before, **notes} if isinstance(before, dict) else notes
        return out
    if isinstance(obj, list | tuple):
        items = [finite(v, default) for v in obj]
        if all(a is b for a, b in zip(items, obj, strict=True)):
            return obj
        return items
    return obj


def finite_fields(obj: JsonObject, skip: str = "signals") -> JsonObject:
    """:func:`finite` for the fields of one object written a field at a time (a probe of
    the report), leaving ``skip`` (its signals, encoded strictly on their own) unwalked."""
    if not any(_bad(v) or (isinstance(v, list) and any(_bad(i) for i in v))
               for k, v in obj.items() if k != skip):
        return obj
    rest = finite({k: v for k, v in obj.items() if k != skip})
    assert isinstance(rest, dict)  # finite() of a dict is a dict
    return {k: (obj[k] if k == skip else rest[k]) for k in obj} | {
        k: v for k, v in rest.items() if k not in obj}


def compact_encoder(default: Callable[[object], object] = repr, *,
                    strict: bool = False) -> Callable[[object], str]:
    """A function giving the same text as ``json.dumps(obj, default=default)``; ``strict``:
    never ``NaN``/``Infinity`` (see :func:`finite`), at the C encoder's speed otherwise."""
    plain: Callable[[object], str]
    if _c_make_encoder is None:
        plain = json.JSONEncoder(default=default, check_circular=False,
                                 allow_nan=not strict).encode
    else:
        enc = _c_make_encoder(None, default, json.encoder.encode_basestring_ascii, None,
                              ": ", ", ", False, False, not strict)
        join = "".join

        def fast(obj: object) -> str:
            return join(enc(obj, 0))

        plain = fast

    if not strict:
        return plain

    def encode_strict(obj: object) -> str:
        try:
            return plain(obj)
        except ValueError:  # "Out of range float values are not JSON compliant"
            return plain(finite(obj, default))

    return encode_strict


def dumps_strict(obj: object, **kwargs: Any) -> str:
    """``json.dumps(obj, **kwargs)`` as strict JSON (see :func:`finite`)."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(finite(obj, kwargs.get("default")), allow_nan=False, **kwargs)


def loads_strict(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity`` (ValueError)."""

    def refuse(name: str) -> NoReturn:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)
