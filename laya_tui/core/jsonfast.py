"""Compact JSON encoding for the signal path: ``json.dumps(obj, default=...)`` without its
per-call set-up and circular-reference bookkeeping (signals are plain trees)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_c_make_encoder: Any
try:
    from _json import make_encoder as _c_make_encoder
except ImportError:  # an interpreter without the C accelerator
    _c_make_encoder = None


def compact_encoder(default: Callable[[Any], Any] = repr) -> Callable[[Any], str]:
    """A function giving the same text as ``json.dumps(obj, default=default)``."""
    if _c_make_encoder is None:
        return json.JSONEncoder(default=default, check_circular=False).encode
    enc = _c_make_encoder(None, default, json.encoder.encode_basestring_ascii, None,
                          ": ", ", ", False, False, True)
    join = "".join

    def encode(obj: Any) -> str:
        return join(enc(obj, 0))

    return encode
