"""``torch.cond`` branches run eagerly for drift attribution, and what the other branch holds.

Eager ``torch.cond`` on a tensor predicate traces both branches with Dynamo, so module hooks
inside them never fire (or fail: ``UncapturedHigherOrderOpError``). While the drift runs,
:func:`eager_cond` replaces ``torch.cond`` with a plain Python branch on the predicate's
value: the branch that ran calls its modules, whose hooks fire as anywhere else. The branch
that did not run is traced once under ``FakeTensorMode`` (no real compute, no state change)
with a module pre-hook that only collects which modules it would call: those are listed as
not run. Worker side.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from laya_tui.families.explain.records import CondEntry
from laya_tui.families.explain.sites import format_frame, user_site

if TYPE_CHECKING:
    from torch.nn import Module


@dataclass
class CondRecord:
    """Every ``torch.cond`` call of one run: which branch ran, and the other's modules."""

    #: ``{"site", "ran", "not_run_modules"}`` per call, in order.
    calls: list[CondEntry] = field(default_factory=list)
    #: True while the branch that did not run is being traced (hooks record nothing then).
    shadow: bool = False
    #: modules the shadow trace called (module objects, by id).
    shadow_modules: list[Module] = field(default_factory=list)


def _other_branch_modules(rec: CondRecord, fn: Callable[..., object],
                          operands: tuple[object, ...]) -> str | None:
    """Trace ``fn`` on fake operands, collecting the modules it calls; an error's text."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils import _pytree as pytree

    rec.shadow, rec.shadow_modules = True, []

    def seen(m: Module, _args: tuple[object, ...]) -> None:
        rec.shadow_modules.append(m)

    handle = torch.nn.modules.module.register_module_forward_pre_hook(seen)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode, torch.no_grad():
            fake_ops = pytree.tree_map_only(torch.Tensor, mode.from_tensor, operands)
            fn(*fake_ops)
        return None
    except Exception as exc:  # noqa: BLE001 - the other branch may not trace: say so
        return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    finally:
        handle.remove()
        rec.shadow = False


@contextlib.contextmanager
def eager_cond(rec: CondRecord) -> Iterator[CondRecord]:
    """``torch.cond`` as an eager ``if`` on its predicate while the block runs."""
    import torch
    import torch._higher_order_ops as hops

    cond_mod = sys.modules["torch._higher_order_ops.cond"]  # the package's `cond` shadows it
    original = cond_mod.cond

    def cond(pred: object, true_fn: Callable[..., object], false_fn: Callable[..., object],
             operands: Sequence[object] = ()) -> object:
        if torch.compiler.is_compiling() or rec.shadow:
            return original(pred, true_fn, false_fn, operands)
        taken = bool(pred)
        fn, other = (true_fn, false_fn) if taken else (false_fn, true_fn)
        site = user_site(sys._getframe(1))[0]
        error = _other_branch_modules(rec, other, tuple(operands))
        entry: CondEntry = {"site": site, "ran": "true" if taken else "false",
                 "not_run_modules": list(rec.shadow_modules), "error": error}
        rec.calls.append(entry)
        return fn(*operands)

    homes: tuple[ModuleType, ...] = (torch, hops, cond_mod)
    saved = [h.cond for h in homes]
    for home in homes:
        vars(home)["cond"] = cond  # a module's attributes are its __dict__
    try:
        yield rec
    finally:
        for home, fn in zip(homes, saved, strict=True):
            vars(home)["cond"] = fn


def not_run(rec: CondRecord, names: dict[int, str], called: set[str]) -> dict[str, str]:
    """``{module name: reason}`` for modules only the branches that did not run call."""
    out: dict[str, str] = {}
    for entry in rec.calls:
        where = f" at {format_frame(entry['site'])}" if entry["site"] else ""
        other = "false" if entry["ran"] == "true" else "true"
        for m in entry["not_run_modules"]:
            name = names.get(id(m))
            if name and name not in called:
                out.setdefault(name, f"not run: the {other} branch of torch.cond{where} "
                                     f"(the {entry['ran']} branch ran)")
    return out
