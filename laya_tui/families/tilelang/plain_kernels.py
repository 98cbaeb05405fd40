"""The kernels of a TileLang file written the way TileLang's examples are (stdlib only).

Every ``@tilelang.jit`` function (``@autotune`` stacked on it too), every module-level
PrimFunc (``@T.prim_func`` or ``kernel = make(...)``) and every *maker* (a function returning
a nested ``@T.prim_func``, compiled by the file with ``tilelang.compile(make(...))``) is a
kernel with its own cells. Each is labelled with its own dtype (the dtype of its first
tensor parameter with the arguments the file gives it: fp16, int8, fp8e4m3, ...) and
says whether the file references it at all (a kernel nobody calls is a helper the file
never builds). Arguments come from :mod:`laya_tui.families.tilelang.static_args`; the
worker replaces them with what the file's own run builds
(:mod:`laya_tui.families.tilelang.capture`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from laya_tui.families.tilelang.arg_table import find_table, table_key
from laya_tui.families.tilelang.data_dtype import LABELS, LOW, segment_data_dtype
from laya_tui.families.tilelang.kernel_sig import (
    decorator_name,
    is_jit_decorator,
    is_prim_func_decorator,
    kernel_signature,
)
from laya_tui.families.tilelang.records import KernelArgs, PassConfigs, ProbeOptions
from laya_tui.families.tilelang.static_args import kernel_dtype, resolve
from laya_tui.families.tilelang.static_calls import is_referenced
from laya_tui.families.tilelang.static_eval import ModuleScope

#: dtype labels, and the dtypes that label a kernel over fp32 (fp32 alone is usually the
#: accumulator): :mod:`laya_tui.families.tilelang.data_dtype`
_LOW = LOW
_TOKEN = re.compile(r"\b(" + "|".join(sorted(LABELS, key=len, reverse=True)) + r")\b")
_COMPILERS = ("tilelang.compile", "tl.compile", "T.prim_func", "tilelang.jit")


@dataclass(frozen=True)
class KernelEntry:
    """One kernel found in a folder."""

    name: str  # cell name: the factory name, or the file stem for plain files
    file: str
    kind: str  # "factory" | "jit" | "primfunc" | "maker" | "nested" (a PrimFunc made deeper
    # inside a top-level function or class: a maker's maker, a closure, a module's
    # __init__; examined as the file's run builds it) | "file" (a plain file not parsing)
    factory: str | None = None
    line: int | None = None  # where the factory (or the kernel object) is defined
    dtype: str | None = None  # plain files: the dtype the kernel is built with
    spec: str | None = None  # factories only: "gpu" or "cpu"
    broken: bool = False  # did not parse (the cells still exist and report the error)
    obj: str | None = None  # plain files: the module attribute holding the kernel
    key: str | None = None  # plain files: "path/file.py::kernel" (the pyproject table key)
    args: KernelArgs = field(default_factory=dict)  # resolved arguments (static)
    arg_sources: dict[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ()  # required arguments nobody gives
    dtypes: tuple[str, ...] = ()  # the pyproject table's dtypes (one cell each)
    dtype_arg: str | None = None
    targets: tuple[str, ...] = ()  # the pyproject table's targets
    pass_configs: PassConfigs | None = None  # literal @tilelang.jit(pass_configs=...)
    called: bool = True  # the file references the kernel (calls, compiles or passes it)
    tuned: bool = False  # the file lets @autotune pick the config
    execution_backend: str | None = None  # the table's or @tilelang.jit's, else default
    note: str | None = None  # kind "account": why reading the file found no kernel in it


def source_dtype(segment: str) -> str:
    """The data dtype of the one kernel ``segment`` defines (its read and written tensors'
    dtypes, :func:`segment_data_dtype`), else the dtype the text uses most among the
    low-precision ones, else fp32."""
    found = segment_data_dtype(segment)
    if found:
        return found
    counts: dict[str, int] = {}
    for m in _TOKEN.finditer(segment):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    low = [d for d in _LOW if counts.get(d)]
    return max(low, key=lambda d: counts[d]) if low else "float32"


def _has_prim_func(fn: ast.FunctionDef | ast.ClassDef) -> bool:
    """A ``@T.prim_func`` defined anywhere inside ``fn`` (a closure, a method, a maker's
    maker)."""
    return any(isinstance(n, ast.FunctionDef) and any(is_prim_func_decorator(d)
                                                      for d in n.decorator_list)
               for n in ast.walk(fn) if n is not fn)


def _own_nodes(fn: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of ``fn``'s body outside nested functions (their ``def`` nodes included)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _is_maker(fn: ast.FunctionDef) -> bool:
    """A plain function returning a ``@T.prim_func`` it defines itself."""
    own = _own_nodes(fn)
    nested = {n.name for n in own if isinstance(n, ast.FunctionDef)
              and any(is_prim_func_decorator(d) for d in n.decorator_list)}
    return bool(nested) and any(isinstance(r, ast.Return) and isinstance(r.value, ast.Name)
                                and r.value.id in nested for r in own)


def _is_entry(name: str) -> bool:
    """``main()`` or a ``test_*`` function: the file's own run calls it."""
    return name == "main" or name.startswith("test")


def _foreign_jit(tree: ast.Module) -> bool:
    """The file's bare ``jit`` comes from another library (``from triton import jit``)."""
    return any(isinstance(n, ast.ImportFrom) and not (n.module or "").startswith("tilelang")
               and any(a.name in ("jit", "lazy_jit") and a.asname is None for a in n.names)
               for n in ast.walk(tree))


def _found(tree: ast.Module, module: ModuleScope,
           tabled: Callable[[str], bool] = lambda name: False
           ) -> list[tuple[str, ast.AST, str]]:
    """(object name, node, kind) of every kernel in file order (``tabled``: a name the
    ``[tool.laya-tui.kernel-args]`` table gives values for counts as called)."""
    foreign = _foreign_jit(tree)

    def is_jit(d: ast.expr) -> bool:
        bare = decorator_name(d) in ("jit", "lazy_jit")
        return is_jit_decorator(d) and not (bare and foreign)

    jit_names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                 and any(is_jit(d) for d in n.decorator_list)}
    found: list[tuple[str, ast.AST, str]] = []
    assigned_makers: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            decos = node.decorator_list
            if any(is_jit(d) for d in decos):
                found.append((node.name, node, "jit"))
            elif any(is_prim_func_decorator(d) for d in decos):
                found.append((node.name, node, "primfunc"))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            callee = ast.unparse(node.value.func)
            maker = module.functions.get(callee)
            if callee in jit_names:
                continue  # a call of a jit kernel (it runs it), not a kernel of its own
            if (isinstance(maker, ast.FunctionDef) and _has_prim_func(maker)) \
                    or callee in _COMPILERS:
                found.append((node.targets[0].id, node, "primfunc"))
                assigned_makers.add(callee)
    taken = {name for name, _, _ in found} | assigned_makers
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name in taken:
            continue
        if not (_is_entry(node.name) or is_referenced(module, node.name)
                or tabled(node.name)):
            continue
        if isinstance(node, ast.FunctionDef) and not node.decorator_list \
                and not node.name.startswith("_") and _is_maker(node):
            found.append((node.name, node, "maker"))
        elif _has_prim_func(node) and not any(is_jit(d) for d in node.decorator_list):
            found.append((node.name, node, "nested"))
    return sorted(found, key=lambda f: int(getattr(f[1], "lineno", 0) or 0))


def plain_kernels(path: str, stem: str, source: str, tree: ast.Module,
                  opts: ProbeOptions) -> list[KernelEntry]:
    """The kernels of one plain TileLang file with their statically resolved arguments."""
    module = ModuleScope(tree)
    workspace = opts.get("workspace")
    found = _found(tree, module, lambda name: find_table(
        opts.get("kernel_args"), path, name, workspace) is not None)
    # kernels made deeper inside functions do not rename the file's one other kernel: its
    # cells keep the file's name (and the ids baselines and --durations files hold)
    nested = sum(1 for _, _, kind in found if kind == "nested")
    lines = source.splitlines()
    entries = []
    for obj, node, kind in found:
        name = stem if len(found) == 1 or (kind != "nested" and len(found) - nested == 1) \
            else f"{stem}.{obj}"
        # a kernel function is labelled by its own source; a PrimFunc built by a call
        # (``kernel = make(64)``) by its file's
        # (a kernel made deeper inside a function gets its dtype from the calls too)
        segment = "\n".join(lines[node.lineno - 1:node.end_lineno or node.lineno]) \
            if isinstance(node, ast.FunctionDef) and kind != "nested" else source
        lineno = int(getattr(node, "lineno", 0) or 0)
        entry = KernelEntry(name=name, file=path, kind=kind, line=lineno,
                            dtype=source_dtype(segment), obj=obj,
                            key=table_key(path, obj, workspace),
                            called=kind == "primfunc" or is_referenced(module, obj)
                            or kind == "nested" and _is_entry(obj))
        if kind in ("jit", "maker", "nested") and isinstance(node, ast.FunctionDef):
            sig = kernel_signature(node, module)
            res = resolve(sig, module, path, opts)
            backend = (res.table or {}).get("execution-backend") \
                or sig.jit_kwargs.get("execution_backend")
            entry = KernelEntry(**{
                **entry.__dict__, "args": res.values, "arg_sources": res.sources,
                "missing": tuple(res.missing), "dtypes": tuple(res.dtypes or ()),
                "dtype_arg": res.dtype_arg, "targets": tuple(res.targets or ()),
                "dtype": kernel_dtype(sig, res.values, node, module) or entry.dtype,
                "pass_configs": sig.jit_kwargs.get("pass_configs") or None,
                "tuned": res.tuned,
                "execution_backend": backend if isinstance(backend, str) else None})
        entries.append(entry)
    return entries
