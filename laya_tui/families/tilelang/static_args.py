"""A kernel's arguments read from its file without running it: the fallback of the capture
(:mod:`laya_tui.families.tilelang.capture`) (stdlib only).

Each argument comes from the first of these sources that has it (highest precedence first):

1. ``[tool.laya-tui.kernel-args."<file>::<kernel>"]`` in the workspace's ``pyproject.toml``
   (:mod:`laya_tui.families.tilelang.arg_table`);
2. a module-level ``LAYA_ARGS = {"<kernel>": dict(M=1024, ...)}`` in the kernel file;
3. the arguments of the file's own call of the kernel, the call the file runs first
   (the ``__main__`` block and ``main()``, then ``test_*`` functions, then the rest),
   evaluated by :mod:`laya_tui.families.tilelang.static_eval` (argparse defaults,
   ``math.ceil(A / B)``, one call level up, ``x.shape``); tensor arguments give the eager
   style's ``T.const`` shape names;
4. the first ``@autotune`` config, only when that call passes none of the tuned
   parameters (TileLang tunes then; a call that passes some skips tuning and the rest keep
   their defaults);
5. the parameter's own default.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from laya_tui.core.kernel_table import DTYPE_NAMES
from laya_tui.families.tilelang.arg_table import RESERVED, find_table
from laya_tui.families.tilelang.data_dtype import side, static_data_dtype
from laya_tui.families.tilelang.kernel_sig import KernelSig, TensorSpec
from laya_tui.families.tilelang.records import KernelArgs, KernelTable, Kwargs, ProbeOptions
from laya_tui.families.tilelang.static_calls import CallSite, calls_to, function_scope
from laya_tui.families.tilelang.static_eval import (
    ModuleScope,
    Scope,
    Trail,
    dtype_name,
    evaluate,
    tensor_maker,
    tensor_shape,
)
from laya_tui.families.tilelang.static_values import Unresolved

#: source of a value the first autotune config gives
AUTOTUNE_SOURCE = "first @autotune config (the file tunes it; TileLang picks on a GPU)"


@dataclass
class ResolvedArgs:
    """Values for a kernel's arguments and where each came from."""

    values: KernelArgs
    sources: dict[str, str]
    missing: list[str]
    dtypes: list[str] | None = None  # the table's dtypes (one cell each)
    dtype_arg: str | None = None
    targets: list[str] | None = None
    call_line: int | None = None  # the call the values came from
    tuned: bool = False  # the first autotune config stands in for TileLang's tuning
    table: KernelTable | None = None  # the kernel's pyproject table


def source_of(site: CallSite, trail: Trail) -> str:
    """``main() at line 129``; ``argparse default --M (main() at line 129)``; with the
    caller that passed the value one level up."""
    base = site.where
    if trail.callers:
        base += ", given by " + trail.callers[0]
    if trail.argparse:
        return f"argparse default {trail.argparse[0]} ({base})"
    return base


def bind_call(site: CallSite, sig: KernelSig, module: ModuleScope
              ) -> tuple[KernelArgs, dict[str, str]]:
    """The arguments one call gives (unresolvable ones left out) and their sources."""
    scope = function_scope(site.fn, module)
    got: KernelArgs = {}
    sources: dict[str, str] = {}
    call = site.call

    def take(pname: str, expr: ast.expr) -> None:
        scope.trail = Trail()
        if pname in sig.tensor_params:
            for k, v in shape_from_tensor(expr, sig.tensor_params[pname], scope).items():
                got[k] = v
                sources[k] = f"tensor {pname}: " + source_of(site, scope.trail)
            return
        try:
            got[pname] = evaluate(expr, scope)
            sources[pname] = source_of(site, scope.trail)
        except Unresolved:
            pass

    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) or i >= len(sig.params):
            break
        take(sig.params[i], arg)
    for kw in call.keywords:
        if kw.arg is None:
            scope.trail = Trail()
            try:
                extra = evaluate(kw.value, scope)
            except Unresolved:
                continue
            if isinstance(extra, dict):
                for k, v in extra.items():
                    if k in sig.accepted:
                        got[k], sources[k] = v, source_of(site, scope.trail)
            continue
        take(kw.arg, kw.value)
    scope.trail = None
    return got, sources


def shape_from_tensor(arg: ast.expr, spec: TensorSpec, scope: Scope) -> KernelArgs:
    """``a = torch.randn(M, N, dtype=torch.float32)`` passed as ``A: T.Tensor((M, N), dt)``
    gives M, N (and dt)."""
    try:
        dims = tensor_shape(arg, scope)
    except Unresolved:
        return {}
    out: KernelArgs = {name: dim for name, dim in zip(spec.dims, dims, strict=False)
                       if name}
    maker = tensor_maker(arg, scope)
    dt = next((kw.value for kw in maker.keywords if kw.arg == "dtype"), None) \
        if maker is not None else None
    if spec.dtype_param and dt is not None and dtype_name(dt):
        out[spec.dtype_param] = dtype_name(dt)
    return out


def literal_call_args(sig: KernelSig, module: ModuleScope
                      ) -> tuple[KernelArgs, dict[str, str], CallSite | None]:
    """The arguments of the call the file runs first among those giving the most
    required arguments: (values, sources, the call)."""
    best: tuple[int, KernelArgs, dict[str, str], CallSite | None] = (-1, {}, {}, None)
    for site in calls_to(module, sig.name):
        got, sources = bind_call(site, sig, module)
        score = sum(1 for p in sig.required if p in got)
        if score > best[0]:
            best = (score, got, sources, site)
        if best[3] is not None and all(p in best[1] for p in sig.required):
            break  # the first call (in the file's order) that gives everything
    return best[1], best[2], best[3]


def autotune_configs(sig: KernelSig, module: ModuleScope) -> list[Kwargs]:
    """The ``@autotune`` configs, when they can be read (a dict of lists: its product)."""
    if sig.autotune is None:
        return []
    try:
        configs = evaluate(sig.autotune, module)
    except Unresolved:
        return []
    if isinstance(configs, dict):  # {"block_M": [64, 128], ...}: the first of each
        return [{k: (v[0] if isinstance(v, (list, tuple)) and v else v)
                 for k, v in configs.items()}]
    if isinstance(configs, (list, tuple)):
        return [dict(c) for c in configs if isinstance(c, dict)]
    return []


def in_file_args(module: ModuleScope, kernel: str) -> KernelArgs:
    """``LAYA_ARGS = {"kernel": dict(...)}`` (or a list of dicts: the first)."""
    node = module.names.get("LAYA_ARGS")
    if node is None:
        return {}
    try:
        table = evaluate(node, module)
    except Unresolved:
        return {}
    value = table.get(kernel) if isinstance(table, dict) else None
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    return dict(value) if isinstance(value, dict) else {}


def resolve(sig: KernelSig, module: ModuleScope, path: str,
            opts: ProbeOptions) -> ResolvedArgs:
    """Every source, lowest precedence first, so the higher ones overwrite."""
    values: KernelArgs = {}
    sources: dict[str, str] = {}

    def take(found: KernelArgs, source: str | dict[str, str]) -> None:
        for k, v in found.items():
            if k in sig.accepted or k in sig.params:
                values[k] = v
                sources[k] = source if isinstance(source, str) else source.get(k, "")

    take({k: v for k, v in sig.defaults.items() if k not in sig.tensor_params}, "default")
    lit, lit_sources, site = literal_call_args(sig, module)
    configs = autotune_configs(sig, module)
    tuned = bool(configs) and not any(k in lit for k in configs[0])
    if tuned:
        take(configs[0], AUTOTUNE_SOURCE)
    take(lit, lit_sources)
    take(in_file_args(module, sig.name), "LAYA_ARGS")
    workspace = opts.get("workspace")
    found = find_table(opts.get("kernel_args"), path, sig.name, workspace)
    res = ResolvedArgs(values=values, sources=sources, missing=[],
                       call_line=site.call.lineno if site else None, tuned=tuned)
    if found is not None:
        key, table = found
        res.table = table
        take({k: v for k, v in table.items() if k not in RESERVED}, f"pyproject {key}")
        res.dtypes = [DTYPE_NAMES[d] for d in table.get("dtypes") or []] or None
        res.targets = list(table.get("targets") or []) or None
        res.dtype_arg = table.get("dtype-arg")
    res.missing = [p for p in sig.required if p not in values]
    if res.dtypes and not res.dtype_arg:
        res.dtype_arg = "dtype" if "dtype" in sig.params else next(
            (p for p in sig.params if p.endswith("dtype") and "accum" not in p), None)
        if res.dtype_arg is None:
            res.dtype_arg = "dtype"
    return res


def kernel_dtype(sig: KernelSig, values: KernelArgs, fn: ast.FunctionDef | None = None,
                 module: ModuleScope | None = None) -> str | None:
    """The kernel's data dtype with ``values``: the floating or quantised type its tensors
    read and the one they write (``bfloat16-float8_e4m3fn`` when they differ; see
    :mod:`laya_tui.families.tilelang.data_dtype`), each tensor's dtype named by the kernel,
    by ``values``, by the function's own assignments or by the module's; else its
    ``dtype``/``*dtype`` argument."""

    def lookup(name: str) -> str | None:
        v = values.get(name) or sig.local_dtypes.get(name)
        if v is None and module is not None and name in module.names:
            v = dtype_name(module.names[name])
        return DTYPE_NAMES.get(v) if isinstance(v, str) else None

    if fn is not None:
        found = static_data_dtype(fn, lookup)
        if found:
            return found
    tensors = side(spec.dtype or (lookup(spec.dtype_param) if spec.dtype_param else None) or ""
                   for spec in sig.tensor_params.values())
    if tensors:
        return tensors
    names = ["dtype", "in_dtype"] + [p for p in sig.accepted
                                     if p.endswith("dtype") and "accum" not in p]
    for n in names:
        v = lookup(n)
        if v is not None:
            return v
    return None
