"""Names for the mappings that stay open on purpose (each is ``dict[str, Any]``): JSON read
from outside before it is validated, and the report fields the schema leaves free-form
(``report/schema.json``: a signal's ``detail``, a cell's ``params``). Everything that has a
fixed shape gets a TypedDict or dataclass of its own instead (``core/report_types.py``)."""

from __future__ import annotations

from typing import Any, TypeAlias

#: A JSON object read from a file, a log or another process, before it is validated.
JsonObject: TypeAlias = dict[str, Any]
#: A signal's ``detail``: free-form per signal kind (``{"type": "object"}`` in the schema).
Detail: TypeAlias = dict[str, Any]
#: A cell's ``params``: free-form per family (``{"type": "object"}`` in the schema).
Params: TypeAlias = dict[str, Any]
#: A report's ``environment`` (and each of its ``hosts``): facts by name (``host``,
#: ``versions``, ``probed``...), open in the schema: each writer adds what it knows.
HostFacts: TypeAlias = dict[str, Any]
#: The run options probes see (``laya_tui.api.options()``; ``RunOptions.options``):
#: JSON-able, by option name; the option table declares the names, so probes read them
#: by key and an option added there reaches them without a change here.
ProbeOptions: TypeAlias = dict[str, Any]
#: A call's keyword arguments as the caller passed them, handed on as they are.
Kwargs: TypeAlias = dict[str, Any]
