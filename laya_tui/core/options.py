"""One option, declared once: :func:`option` on a field of the settings dataclasses
(:mod:`laya_tui.core.settings`) is that field's command-line flag, ``[tool.laya-tui]`` key,
``--help`` line, ``laya-tui init`` template line and validation, all at once.

The front end derives its views from :func:`option_table`: the argparse flags and their
help (``laya_tui.cli.options``), the table's validation and the merge flag > table >
default (``laya_tui.cli.config``), the ``init`` template (``laya_tui.cli.init_cmd``);
``tests/test_options.py`` proves the views agree. Standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict, TypeVar, Unpack, overload

#: the metadata key of an option on a dataclass field
META = "laya_tui.option"


@dataclass(frozen=True)
class Option:
    """How one settings field is spelled and checked outside the program.

    ``name`` (the field's name, also the flag's argparse ``dest``) and ``part`` (``run``,
    ``gates``, ``outputs`` or ``settings``: the dataclass it is on) are filled in by
    :func:`option_table`; ``default`` is the field's.
    """

    #: the flag and its aliases (``("--quiet", "-q")``); empty: settable in the table only
    flags: tuple[str, ...] = ()
    #: the ``[tool.laya-tui]`` key; ``None``: a flag only
    key: str | None = None
    #: how a value is parsed and checked: a name in ``laya_tui.cli.options.KINDS``
    kind: str = "string"
    #: the ``--help`` line (``{default}`` is replaced by the field's default)
    help: str = ""
    metavar: str | None = None
    #: the ``--help`` group: ``"run"`` (the main list) or ``"ci"`` (CI gates and files)
    group: str = "run"
    #: a flag that sets the field back to its default whatever else says (``--no-baseline``)
    off_flag: str | None = None
    off_help: str = ""
    #: the ``init`` template's example value (TOML), for every option with a ``key``
    example: str | None = None
    #: the template's comment when the help line reads badly there (default: ``help``)
    note: str | None = None
    #: probes see it in ``laya_tui.api.options()`` when it differs from its default
    probes_see: bool = False
    name: str = ""
    part: str = ""
    default: object = None

    @property
    def flag(self) -> str | None:
        """The flag's long name (``--device``), or ``None`` for a table-only option."""
        return self.flags[0] if self.flags else None

    def spelled(self) -> str:
        """Every spelling, for messages: ``--device / device =``."""
        names = [*self.flags[:1], *([f"{self.key} ="] if self.key else [])]
        return " / ".join(names) or self.name


class OptionSpec(TypedDict, total=False):
    """The :class:`Option` fields an ``option(...)`` call gives (``name``, ``part`` and
    ``default`` are filled in by :func:`options_of`)."""

    flags: tuple[str, ...]
    key: str | None
    kind: str
    help: str
    metavar: str | None
    group: str
    off_flag: str | None
    off_help: str
    example: str | None
    note: str | None
    probes_see: bool


_T = TypeVar("_T")


@overload
def option(default: _T, **spec: Unpack[OptionSpec]) -> _T: ...
@overload
def option(*, default_factory: Callable[[], _T], **spec: Unpack[OptionSpec]) -> _T: ...
@overload
def option(**spec: Unpack[OptionSpec]) -> None: ...  # no default: None
def option(default: object = None, *,
           default_factory: Callable[[], object] | None = None,
           **spec: Unpack[OptionSpec]) -> object:
    """A dataclass field that is an option (``spec``: the :class:`Option` fields); typed
    like ``dataclasses.field``: the field's value has the default's type."""
    meta = {META: Option(**spec)}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def options_of(part: str, cls: type) -> tuple[Option, ...]:
    """The options declared on dataclass ``cls``, in field order, named and defaulted."""
    out = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(META)
        if spec is None:
            continue
        default = (f.default_factory() if f.default_factory is not dataclasses.MISSING
                   else f.default)
        out.append(dataclasses.replace(spec, name=f.name, part=part, default=default))
    return tuple(out)


def option_table() -> tuple[Option, ...]:
    """Every option, in ``--help`` order: the invocation's, the run's, the gates', the
    outputs' (imported here so that this module stays a leaf)."""
    from laya_tui.core.settings import Gates, Outputs, RunOptions, Settings

    return (*options_of("settings", Settings), *options_of("run", RunOptions),
            *options_of("gates", Gates), *options_of("outputs", Outputs))
