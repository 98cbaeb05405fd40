"""Where the values of a call the file made came from, read from its syntax tree (stdlib
only): the capture knows a kernel was built by ``main() at line 129`` with ``M=320``; this
says that ``M`` is the file's ``argparse default --M``."""

from __future__ import annotations

import ast
import functools

from laya_tui.families.tilelang.kernel_sig import kernel_signature
from laya_tui.families.tilelang.static_args import bind_call
from laya_tui.families.tilelang.static_calls import calls_to
from laya_tui.families.tilelang.static_eval import ModuleScope


@functools.lru_cache(maxsize=64)
def _module(path: str, mtime_ns: int) -> ModuleScope:
    with open(path, encoding="utf-8", errors="replace") as f:
        return ModuleScope(ast.parse(f.read(), filename=path))


def call_sources(path: str, kernel: str, site: str) -> dict[str, str]:
    """Static sources of the arguments of the call of ``kernel`` at ``site`` (``main() at
    line 129``); empty when the call cannot be found there."""
    import os

    line = int(site.rsplit(" at line ", 1)[-1])
    module = _module(path, os.stat(path).st_mtime_ns)
    fn = module.functions.get(kernel)
    if not isinstance(fn, ast.FunctionDef):
        return {}
    sig = kernel_signature(fn, module)
    for s in calls_to(module, kernel):
        if s.call.lineno <= line <= (s.call.end_lineno or s.call.lineno):
            return bind_call(s, sig, module)[1]
    return {}
