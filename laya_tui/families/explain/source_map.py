"""Generated code back to the user's lines, and class-qualified names for frames known only
by (file, line, name).

Inductor keeps, per output module, which of its lines came from which FX node's stack trace
(``PyCodeCache.stack_frames_for_code``, the map torch uses for its own tracebacks). An FX
GraphModule's ``_lineno_map`` maps its generated ``forward``'s lines to graph nodes, whose
``meta["stack_trace"]`` holds the user frames (the eager and aot_eager backends run those).
A frame summary (a graph break's user stack, a stack trace) has no code object: its
qualified name is read from the code objects of its file, compiled once per file. Worker
side: torch is imported lazily; every lookup is cached.
"""

from __future__ import annotations

import linecache
import re
from types import CodeType
from typing import Any

from laya_tui.families.explain.sites import INDUCTOR, plain_name

_TRACE_FRAME = re.compile(r'File "(.+)", line (\d+), in (.+)\n')
#: (code, line) of a generated frame -> its user frames, innermost first
_generated: dict[tuple[CodeType, int], list[dict[str, Any]]] = {}
#: file -> [(co_name, qualified name, first line, last line)] of every code object in it
_tables: dict[str, list[tuple[str, str, int, int]]] = {}
_LIMIT = 4096


def generated_frames(frame: Any, kind: int) -> list[dict[str, Any]]:
    """The user frames an Inductor output line or FX graph line was generated from
    (``{"file", "line", "func"}``, innermost first); [] when torch keeps no map."""
    key = (frame.f_code, frame.f_lineno)
    got = _generated.get(key)
    if got is None:
        try:
            got = _inductor(frame) if kind == INDUCTOR else _fx(frame)
        except Exception:  # noqa: BLE001 - no map is no expansion, never an error
            got = []
        if len(_generated) > _LIMIT:
            _generated.clear()
        _generated[key] = got
    return got


def _inductor(frame: Any) -> list[dict[str, Any]]:
    from torch._inductor.codecache import PyCodeCache

    found = PyCodeCache.stack_frames_for_code(frame.f_code.co_filename, frame.f_lineno)
    return [_site(str(f["filename"]), int(f["line"]), str(f["name"])) for f in found or []]


def _fx(frame: Any) -> list[dict[str, Any]]:
    gm = frame.f_locals.get("self")
    lineno_map = getattr(gm, "_lineno_map", None)
    graph = getattr(gm, "graph", None)
    if not lineno_map or graph is None:
        return []
    idx = lineno_map.get(frame.f_lineno - frame.f_code.co_firstlineno)
    if idx is None:
        return []
    nodes = list(graph.nodes)
    if not 0 <= idx < len(nodes):
        return []
    return parse_stack_trace(nodes[idx].meta.get("stack_trace"))


def parse_stack_trace(text: str | None) -> list[dict[str, Any]]:
    """An FX node's ``stack_trace`` (traceback text) -> site dicts, innermost first."""
    found = _TRACE_FRAME.findall(str(text or ""))
    return [_site(f, int(line), name) for f, line, name in reversed(found)]


def _site(file: str, line: int, name: str) -> dict[str, Any]:
    return {"file": file, "line": line, "func": qualname_at(file, line, plain_name(name))}


def _qualified(code: CodeType) -> str:
    qual = getattr(code, "co_qualname", None) or code.co_name
    return plain_name(qual.rsplit(".<locals>.", 1)[-1])


def _table(file: str) -> list[tuple[str, str, int, int]]:
    table = _tables.get(file)
    if table is not None:
        return table
    table = []
    lines = linecache.getlines(file)
    try:
        todo = [compile("".join(lines), file, "exec", dont_inherit=True)] if lines else []
    except (SyntaxError, ValueError):
        todo = []
    while todo:
        code = todo.pop()
        nums = [n for _, _, n in code.co_lines() if n is not None]
        if nums:
            table.append((code.co_name, _qualified(code), min(min(nums), code.co_firstlineno),
                          max(nums)))
        todo.extend(c for c in code.co_consts if isinstance(c, CodeType))
    _tables[file] = table
    return table


def qualname_at(file: str, line: int | None, name: str) -> str:
    """The qualified name (``Norm.forward``) of function ``name`` holding ``line`` in
    ``file``; ``name`` itself when the source cannot be read or has no such function."""
    if line is None or name.startswith("<"):
        return name
    best: tuple[str, int] | None = None
    for co_name, qual, lo, hi in _table(file):
        if co_name == name and lo <= line <= hi and (best is None or hi - lo < best[1]):
            best = (qual, hi - lo)
    return best[0] if best else name
