"""Did the low-precision run take another path than the fp32 reference?

Forward pre-hooks record, for both runs, the modules in the order they are called and the
user line that called each (:func:`laya_tui.families.explain.sites.user_site`). The first
position where the two orders differ is where the paths part: the module both called last,
what each called next, and the branch that decided, found in the source as the innermost
``if``/``while``/``for`` of that function holding one of the two calls but not the other (or
the two in different arms). Pure standard library: the hooks are plain callables.
"""

from __future__ import annotations

import ast
import linecache

from laya_tui.families.explain.records import Divergence, SiteDict
from laya_tui.families.explain.sites import format_frame

_trees: dict[str, ast.Module | None] = {}
_BRANCHES = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.Try)


def divergence(model_calls: list[tuple[str, SiteDict | None]],
               ref_calls: list[tuple[str, SiteDict | None]], *, dtype: str
               ) -> Divergence | None:
    """The first difference of two call orders ``[(module name, call site)]``, or None.

    Returns ``{"index", "after", "model_called", "reference_called", "model_site",
    "reference_site", "site", "text", "differing"}``; ``site`` is the branch statement's
    line where the source shows it, else the model run's call.
    """
    n = min(len(model_calls), len(ref_calls))
    i = next((k for k in range(n) if model_calls[k][0] != ref_calls[k][0]), n)
    if i == len(model_calls) == len(ref_calls):
        return None
    after = model_calls[i - 1][0] if i else None
    mine = model_calls[i] if i < len(model_calls) else (None, None)
    theirs = ref_calls[i] if i < len(ref_calls) else (None, None)
    site = branch_site(mine[1], theirs[1]) or mine[1] or theirs[1]
    where = f"after `{after}`" if after is not None else "at its first module call"
    text = (f"{dtype} took another branch {where}: it called "
            f"{_called(mine[0])}, fp32 called {_called(theirs[0])}")
    counts: dict[str, int] = {}
    for name, _ in model_calls:
        counts[name] = counts.get(name, 0) + 1
    for name, _ in ref_calls:
        counts[name] = counts.get(name, 0) - 1
    return {"index": i, "after": after, "model_called": mine[0],
            "reference_called": theirs[0],
            "model_site": None if mine[1] is None else format_frame(mine[1]),
            "reference_site": None if theirs[1] is None else format_frame(theirs[1]),
            "site": site, "text": text,
            "differing": sum(abs(v) for v in counts.values())}


def _called(name: str | None) -> str:
    return "no further module" if name is None else f"`{name}`"


def _tree(file: str) -> ast.Module | None:
    if file not in _trees:
        lines = linecache.getlines(file)
        try:
            _trees[file] = ast.parse("".join(lines)) if lines else None
        except (SyntaxError, ValueError):
            _trees[file] = None
    return _trees[file]


def _span(stmts: list[ast.stmt]) -> tuple[int, int] | None:
    if not stmts:
        return None
    return stmts[0].lineno, max(getattr(s, "end_lineno", None) or s.lineno for s in stmts)


def _inside(span: tuple[int, int] | None, line: int | None) -> bool:
    return span is not None and line is not None and span[0] <= line <= span[1]


def branch_site(a: SiteDict | None, b: SiteDict | None) -> SiteDict | None:
    """The innermost branch statement that separates call site ``a`` from ``b`` (one of them
    may be None: the run that called nothing more), as a site dict; None when the two are
    not in one file and function or the source does not show it."""
    known = [s for s in (a, b) if s is not None]
    if not known or (len(known) == 2 and (a["file"] != b["file"] or  # type: ignore[index]
                                          a.get("func") != b.get("func"))):  # type: ignore[union-attr]
        return None
    file = str(known[0]["file"])
    tree = _tree(file)
    if tree is None:
        return None
    la = None if a is None else a.get("line")
    lb = None if b is None else b.get("line")
    first = min(x for x in (la, lb) if x is not None) if (la or lb) else None
    best: ast.stmt | None = None
    best_holds = False
    for node in ast.walk(tree):
        if not isinstance(node, _BRANCHES):
            continue
        arms = [_span(node.body)] + [_span(getattr(node, name, None) or [])
                                     for name in ("orelse", "finalbody")]
        arms += [_span(h.body) for h in getattr(node, "handlers", [])]
        arm_a = next((k for k, s in enumerate(arms) if _inside(s, la)), None)
        arm_b = next((k for k, s in enumerate(arms) if _inside(s, lb)), None)
        if arm_a == arm_b:
            continue  # both in one arm, or both outside: this statement did not decide
        # the paths part at the first statement, in source order, that holds a call
        holds = _inside((node.lineno, getattr(node, "end_lineno", None) or node.lineno),
                        first)
        if best is None or (holds, node.lineno) > (best_holds, best.lineno):
            best, best_holds = node, holds
    if best is None:
        return None
    return {"file": file, "line": best.lineno, "func": known[0].get("func")}
