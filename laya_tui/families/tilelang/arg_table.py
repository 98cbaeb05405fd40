"""The ``[tool.laya-tui.kernel-args."file.py::kernel"]`` tables of ``pyproject.toml``: their
keys, finding a kernel's table, and the exact lines to add for a kernel whose arguments
nobody gives, with values only where the file itself has them (stdlib only).

A table has one key per kernel argument plus the reserved keys ``dtypes`` (one cell per
dtype, passed as the ``dtype-arg`` argument, default ``dtype``), ``targets`` and
``execution-backend`` (how the cell builds; default: TileLang's own default for the target).
"""

from __future__ import annotations

import ast
import json
import os
from typing import TypeAlias

from laya_tui.families.tilelang.records import KernelTable

#: Keys of a kernel-args table that are not kernel arguments.
RESERVED = ("dtypes", "targets", "dtype-arg", "execution-backend")


def table_key(path: str, kernel: str, workspace: str | None) -> str:
    """``kernels/gemm.py::matmul``: the key a kernel's table has in pyproject."""
    rel = path
    if workspace:
        try:
            candidate = os.path.relpath(path, workspace)
            if not candidate.startswith(".."):
                rel = candidate
        except ValueError:
            pass
    return f"{rel.replace(os.sep, '/')}::{kernel}"


def find_table(tables: dict[str, object] | None, path: str, kernel: str,
               workspace: str | None) -> tuple[str, KernelTable] | None:
    """The kernel's table: keyed by workspace-relative path, absolute path or file name."""
    if not tables:
        return None
    real = os.path.realpath(path)
    for key, value in tables.items():
        file, _, name = key.rpartition("::")
        if name != kernel or not isinstance(value, dict):
            continue
        cands = {os.path.realpath(os.path.join(workspace or "", file)), os.path.realpath(file)}
        if real in cands or file == os.path.basename(path):
            return key, value
    return None


#: A value the file gives an argument (a literal, or a list of them), as a table line writes it.
FileValue: TypeAlias = "bool | int | float | str | list[int | float | str]"
#: Argument name -> (the value the file gives it, where: "the file's argparse default --M").
FileDefaults: TypeAlias = "dict[str, tuple[FileValue, str]]"


def file_defaults(tree: ast.Module, names: list[str]) -> FileDefaults:
    """Values the file itself gives ``names`` somewhere else: an argparse default of that
    name (``--M``), a same-named parameter default of one of its functions, a module
    constant: ``{name: (value, where)}``. Names the file has no value for are left out."""
    from laya_tui.families.tilelang.static_calls import argparse_options
    from laya_tui.families.tilelang.static_eval import ModuleScope, evaluate
    from laya_tui.families.tilelang.static_values import Unresolved

    module = ModuleScope(tree)
    wanted = {n.lower(): n for n in names}
    out: FileDefaults = {}

    def offer(name: str, expr: ast.expr | None, where: str) -> None:
        key = wanted.get(name.lower())
        if key is None or key in out or expr is None:
            return
        try:
            value = evaluate(expr, module)
        except Unresolved:
            return
        if isinstance(value, (bool, int, float, str)):
            out[key] = (value, where)
        elif isinstance(value, (list, tuple)):
            items = [v for v in value if isinstance(v, (int, float, str))]
            if len(items) == len(value):  # (a list of literals only)
                out[key] = (items, where)

    for ns in argparse_options([tree]).values():
        for dest, (flag, default) in ns.items():
            offer(dest, default, f"the file's argparse default {flag}")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            a = node.args
            pos = [p.arg for p in (*a.posonlyargs, *a.args)]
            for p, d in zip(pos[len(pos) - len(a.defaults):], a.defaults, strict=True):
                offer(p, d, f"the default of {node.name}({p}=...)")
            for kwarg, kd in zip(a.kwonlyargs, a.kw_defaults, strict=True):
                offer(kwarg.arg, kd, f"the default of {node.name}({kwarg.arg}=...)")
    for name, expr in module.names.items():
        offer(name, expr, f"the file's constant {name}")
    return out


def _toml_value(value: FileValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def lines_to_add(key: str, missing: list[str], defaults: FileDefaults) -> list[str]:
    """The table header and one line per missing argument: its value where the file has
    one (with where it comes from), else a commented line for the user's value."""
    lines = [f'[tool.laya-tui.kernel-args."{key}"]']
    for m in missing:
        if m in defaults:
            value, where = defaults[m]
            lines.append(f"{m} = {_toml_value(value)}  # {where}")
        else:
            lines.append(f"# {m} = ?  (your value: the file gives none)")
    return lines


def missing_message(kernel: str, key: str, missing: list[str], workspace: str | None,
                    defaults: FileDefaults | None = None, *,
                    called: bool = True) -> str:
    """The reason of a kernel whose arguments are unknown: which, and the lines to add."""
    where = os.path.join(workspace, "pyproject.toml") if workspace else "pyproject.toml"
    lines = lines_to_add(key, missing, defaults or {})
    them = "them" if len(missing) > 1 else "it"
    if not called:
        needs = (f"until it gets its arguments ({', '.join(missing)})" if missing else
                 "until a table names it (its arguments all have defaults)")
        return (f"{kernel} is defined but nothing in its file or the files importing it "
                f"builds it: nothing to examine {needs}; to examine it, add to {where}:\n"
                + "\n".join(lines))
    return (f"kernel arguments unknown: {kernel} needs {', '.join(missing)} and neither the "
            f"file's own run, pyproject, LAYA_ARGS nor a call in its file gives {them}; add "
            f"to {where}:\n" + "\n".join(lines))
