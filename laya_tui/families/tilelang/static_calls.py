"""Where a kernel file calls its kernels, read from the syntax tree (stdlib only).

The calls of a kernel (``kernel(...)``, ``kernel.compile(...)``, ``kernel.get_tir(...)``) are
ranked the way the file runs them: first the ``if __name__ == "__main__":`` block and what
it calls (``main()``), then ``test_*`` functions and what they call, then everything else
(perf helpers). A call's arguments are evaluated in its function's scope: parameter
defaults, assignments, ``argparse`` defaults (``args.M``), module constants, and, one level
up, the arguments the function's own caller passes (``test_x`` calling ``run([64, 128])``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from laya_tui.families.tilelang.kernel_sig import is_jit_decorator, is_prim_func_decorator
from laya_tui.families.tilelang.static_eval import (
    ModuleScope,
    Scope,
    Trail,
    collect_names,
    evaluate,
)
from laya_tui.families.tilelang.static_values import Unresolved

CALL_METHODS = {"compile", "get_tir", "get_kernel_source", "par_compile"}
MAIN_BLOCK = "the __main__ block"
TOP_LEVEL = "the file's top level"


@dataclass(frozen=True)
class CallSite:
    """One call of a kernel: the node, its enclosing function and its rank (0 runs first)."""

    call: ast.Call
    fn: ast.FunctionDef | None  # None: module level (the __main__ block or the top level)
    rank: int
    top: str = MAIN_BLOCK  # what module level is here: MAIN_BLOCK or TOP_LEVEL

    @property
    def where(self) -> str:
        """``main() at line 129`` / ``the __main__ block at line 40``."""
        name = f"{self.fn.name}()" if self.fn is not None else self.top
        return f"{name} at line {self.call.lineno}"


def module_level_label(tree: ast.Module, line: int) -> str:
    """MAIN_BLOCK for a line inside ``if __name__ == "__main__":``, else TOP_LEVEL."""
    block = main_block(tree)
    if block is not None and block.lineno <= line <= (block.end_lineno or block.lineno):
        return MAIN_BLOCK
    return TOP_LEVEL


def main_block(tree: ast.Module) -> ast.If | None:
    """The ``if __name__ == "__main__":`` statement, if any."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) \
                and "__name__" in ast.unparse(node.test):
            return node
    return None


def _called_names(nodes: Sequence[ast.AST]) -> set[str]:
    out = set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                out.add(sub.func.id)
    return out


def entry_ranks(module: ModuleScope) -> dict[str, int]:
    """Module function name -> rank: 0 reached from the __main__ block (or ``main`` when
    there is none), 1 from a ``test_*`` function, 2 otherwise."""
    funcs = {n: f for n, f in module.functions.items() if isinstance(f, ast.FunctionDef)}
    block = main_block(module.tree)
    roots0 = _called_names(block.body) if block is not None else ({"main"} & set(funcs))
    ranks: dict[str, int] = {}
    for rank, roots in ((0, roots0), (1, {n for n in funcs if n.startswith("test")})):
        todo = [r for r in roots if r in funcs]
        while todo:
            name = todo.pop()
            if name in ranks:
                continue
            ranks[name] = rank
            todo.extend(c for c in _called_names([funcs[name]]) if c in funcs
                        and c not in ranks)
    return ranks


def call_index(tree: ast.Module) -> dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]]:
    """Every call ``name(...)`` / ``name.compile(...)`` in the file by ``name``, with its
    enclosing top-level function (one walk per file)."""
    index: dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]] = {}
    stack: list[tuple[ast.AST, ast.FunctionDef | None]] = [(tree, None)]
    while stack:
        node, fn = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call):
                f = child.func
                if isinstance(f, ast.Name):
                    index.setdefault(f.id, []).append((child, fn))
                elif isinstance(f, ast.Attribute) and f.attr in CALL_METHODS \
                        and isinstance(f.value, ast.Name):
                    index.setdefault(f.value.id, []).append((child, fn))
            if isinstance(child, ast.FunctionDef) and any(
                    is_jit_decorator(d) or is_prim_func_decorator(d)
                    for d in child.decorator_list):
                continue  # kernel bodies (most of a file) never call kernels
            inner = fn if fn is not None or not isinstance(child, ast.FunctionDef) else child
            stack.append((child, inner))
    for calls in index.values():
        calls.sort(key=lambda cf: (cf[0].lineno, cf[0].col_offset))
    return index


def calls_to(module: ModuleScope, name: str) -> list[CallSite]:
    """Calls of ``name`` outside its own body, the way the file runs them (rank, then line)."""
    if module.calls is None:
        module.calls = call_index(module.tree)
    ranks = getattr(module, "_ranks", None)
    if ranks is None:
        ranks = entry_ranks(module)
        module._ranks = ranks  # type: ignore[attr-defined]
    sites = [CallSite(c, fn, 0 if fn is None else ranks.get(fn.name, 2),
                      module_level_label(module.tree, c.lineno) if fn is None else MAIN_BLOCK)
             for c, fn in module.calls.get(name, []) if fn is None or fn.name != name]
    return sorted(sites, key=lambda s: (s.rank, s.call.lineno))


def is_referenced(module: ModuleScope, name: str) -> bool:
    """Whether anything outside ``name``'s own definition uses it (a call, an attribute, an
    argument): a kernel nobody references is a helper the file never builds."""
    loads = getattr(module, "_loads", None)
    if loads is None:  # one walk per file, not one per name asked about
        loads = [(node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  else None,
                  {sub.id for sub in ast.walk(node)
                   if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)})
                 for node in module.tree.body]
        module._loads = loads  # type: ignore[attr-defined]
    return any(name in names for own, names in loads if own != name)


# -- scopes -----------------------------------------------------------------------------------


def _required(flags: list[str], kw: dict[str, ast.expr]) -> bool:
    """An option ``python file.py`` cannot run without (``required=True``, or a positional
    one without ``nargs="?"``/``"*"``): its value is the user's, argparse has no default."""
    required, nargs = kw.get("required"), kw.get("nargs")
    if isinstance(required, ast.Constant):
        return required.value is True
    positional = not any(f.startswith("-") for f in flags)
    return positional and not (isinstance(nargs, ast.Constant) and nargs.value in ("?", "*"))


def argparse_options(nodes: list[ast.AST]) -> dict[str, dict[str, tuple[str, ast.expr | None]]]:
    """``ns = parser.parse_args()`` -> {ns: {dest: (option string, default expression)}}."""
    parsers: dict[str, dict[str, tuple[str, ast.expr | None]]] = {}
    assigns: list[tuple[str, str]] = []  # (namespace name, parser name)
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and sub.func.attr == "add_argument" and isinstance(sub.func.value, ast.Name):
                flags = [a.value for a in sub.args if isinstance(a, ast.Constant)
                         and isinstance(a.value, str)]
                if not flags:
                    continue
                kw = {k.arg: k.value for k in sub.keywords if k.arg}
                if _required(flags, kw):
                    continue  # no value without the user's command line: left unknown
                longs = [f for f in flags if f.startswith("--")] or flags
                dest_node, type_node = kw.get("dest"), kw.get("type")
                dest = dest_node.value if isinstance(dest_node, ast.Constant) \
                    and isinstance(dest_node.value, str) else \
                    longs[0].lstrip("-").replace("-", "_")
                default = kw.get("default")
                action = kw.get("action")
                if default is None and isinstance(action, ast.Constant) \
                        and action.value in ("store_true", "store_false"):
                    default = ast.Constant(action.value == "store_false")
                if default is not None and isinstance(type_node, ast.Name) \
                        and type_node.id in ("int", "float"):  # argparse converts str defaults
                    default = ast.Call(func=ast.Name(type_node.id, ast.Load()), args=[default],
                                       keywords=[])
                parsers.setdefault(sub.func.value.id, {})[dest] = (longs[0], default)
            elif isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call) \
                    and isinstance(sub.value.func, ast.Attribute) \
                    and sub.value.func.attr in ("parse_args", "parse_known_args") \
                    and isinstance(sub.value.func.value, ast.Name):
                target = sub.targets[0]
                if isinstance(target, ast.Tuple) and target.elts:
                    target = target.elts[0]
                if isinstance(target, ast.Name):
                    assigns.append((target.id, sub.value.func.value.id))
    return {ns: parsers.get(p, {}) for ns, p in assigns}


def function_scope(fn: ast.FunctionDef | None, module: ModuleScope, trail: Trail | None = None,
                   *, up: bool = True) -> Scope:
    """The names a call inside ``fn`` sees: ``fn``'s defaults and assignments (or the
    __main__ block's), argparse defaults, and with ``up`` the values ``fn``'s first caller
    passes it (one level up)."""
    names: dict[str, ast.expr] = {}
    nodes: list[ast.AST]
    values: dict[str, object] = {}
    if fn is None:
        block = main_block(module.tree)
        nodes = list(block.body) if block is not None else []
    else:
        nodes = [fn]
        a = fn.args
        positional = [p.arg for p in (*a.posonlyargs, *a.args)]
        for name, d in zip(positional[len(positional) - len(a.defaults):], a.defaults,
                           strict=True):
            names[name] = d
        for kwarg, kd in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            if kd is not None:
                names[kwarg.arg] = kd
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Assign):
                for t in sub.targets:
                    collect_names(t, sub.value, names)
            elif isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name) \
                    and sub.value is not None:
                names[sub.target.id] = sub.value
    scope = Scope(names, module, values, trail)
    scope.namespaces = argparse_options(nodes)
    if fn is not None and up:
        for site in calls_to(module, fn.name):
            given = caller_values(site, fn, module)
            if given:
                for k, (value, note) in given.items():
                    names.pop(k, None)
                    values[k] = value
                    scope.notes[k] = note
                break
    return scope


def caller_values(site: CallSite, fn: ast.FunctionDef,
                  module: ModuleScope) -> dict[str, tuple[object, Trail]]:
    """The values the call ``site`` passes to ``fn``'s parameters (evaluated in the caller),
    each with its trail (the caller, the argparse options it came through)."""
    scope = function_scope(site.fn, module, up=False)
    a = fn.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    pairs: list[tuple[str, ast.expr]] = []
    for i, arg in enumerate(site.call.args):
        if isinstance(arg, ast.Starred) or i >= len(positional):
            break
        pairs.append((positional[i], arg))
    pairs += [(kw.arg, kw.value) for kw in site.call.keywords if kw.arg is not None]
    out: dict[str, tuple[object, Trail]] = {}
    for name, expr in pairs:
        scope.trail = Trail(callers=[site.where])
        try:
            out[name] = (evaluate(expr, scope), scope.trail)
        except Unresolved:
            pass
    scope.trail = None
    return out


def referenced_from_entries(module: ModuleScope, name: str) -> bool:
    """Whether the __main__ block, ``main()`` or a ``test_*`` function (or a function they
    call) references ``name``: a kernel the file's own run builds."""
    ranks = getattr(module, "_ranks", None)
    if ranks is None:
        ranks = entry_ranks(module)
        module._ranks = ranks  # type: ignore[attr-defined]
    block = main_block(module.tree)
    scopes: list[ast.AST] = [block] if block is not None else []
    scopes += [f for n, f in module.functions.items() if n in ranks and n != name]
    for node in scopes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load):
                return True
    return False
