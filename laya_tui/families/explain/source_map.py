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
from bisect import bisect_right
from types import CodeType, FrameType

from laya_tui.families.explain.frame_names import INDUCTOR, plain_name
from laya_tui.families.explain.records import SiteDict

_TRACE_FRAME = re.compile(r'File "(.+)", line (\d+), in (.+)\n')
#: a traceback frame and the source line it quotes (when it does)
_TRACE_FRAME_CODE = re.compile(r'File "(.+)", line (\d+), in (.+)\n(?:[ \t]+(\S[^\n]*))?')
#: (code, line) of a generated frame -> its user frames, innermost first
_generated: dict[tuple[CodeType, int], list[SiteDict]] = {}
#: file -> [(co_name, qualified name, first line, last line)] of every code object in it
_tables: dict[str, list[tuple[str, str, int, int]]] = {}
_LIMIT = 4096


def generated_frames(frame: FrameType, kind: int) -> list[SiteDict]:
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


def _inductor(frame: FrameType) -> list[SiteDict]:
    from torch._inductor.codecache import PyCodeCache

    path, lineno = frame.f_code.co_filename, frame.f_lineno
    linemaps = getattr(PyCodeCache, "linemaps", None)
    if not isinstance(linemaps, dict):  # another torch: its own parse, no source text
        found = PyCodeCache.stack_frames_for_code(path, lineno) or []
        frames = [(str(f["filename"]), int(f["line"]), str(f["name"]), None) for f in found]
    else:  # what stack_frames_for_code reads, keeping each frame's source text
        lines, nodes = linemaps.get(path) or ([], [])
        p = bisect_right(lines, lineno)
        entry = nodes[p - 1] if p else None
        frames = [(f, int(ln), n, code) for f, ln, n, code
                  in reversed(_TRACE_FRAME_CODE.findall(entry or ""))]
    out = []
    for file_, line, name, code in frames:
        file = loaded_path(file_, line, plain_name(name), code)
        if file is None:  # the cache served another source's line map: no expansion
            return []
        now = current_line(file, line, code, plain_name(name))
        if now is None:  # that line is no longer in the file: no site rather than a wrong one
            return []
        out.append(_site(file, now, name))
    return out


def current_line(file: str, line: int, code: str | None, func: str | None) -> int | None:
    """Where the source line a stack trace quotes (``code``) is in ``file`` now.

    Inductor's FX-graph cache keys the graph, not the source: after an edit that moves
    lines but leaves the graph as it was, it serves the old line numbers. ``line`` stays
    when the file still has ``code`` there; else the one line of function ``func`` that
    holds it; None when there is none or more than one. No ``code``: ``line``.
    """
    if not code or not code.strip():
        return line
    want = code.strip()
    linecache.checkcache(file)
    if linecache.getline(file, line).strip() == want:
        return line
    hits = [i + 1 for i, text in enumerate(linecache.getlines(file)) if text.strip() == want]
    if func:
        _tables.pop(file, None)  # the file changed since its table was read
        hits = [h for h in hits if _defines(file, h, func)]
    return hits[0] if len(hits) == 1 else None


#: (how many modules were loaded, realpath of each module file, basename -> those paths)
_loaded: tuple[int, frozenset[str], dict[str, list[str]]] = (-1, frozenset(), {})


def loaded_path(file: str, line: int | None = None, func: str | None = None,
                code: str | None = None) -> str | None:
    """``file`` as this process loaded it, or None when it loaded no such file.

    Inductor's FX-graph cache does not key on source paths: a graph compiled from the same
    code in another checkout or virtual environment is served with *that* compile's line
    map, naming files this process never imported. Such a path is replaced by the loaded
    module file that shares the longest tail of path components with it (the file name at
    least) and, when ``line`` and ``func`` are given, has a function ``func`` holding
    ``line`` (or, when the served map is older than the file, holding the source line
    ``code`` the trace quotes: :func:`current_line`). A path this process loaded stays.
    None when no loaded file qualifies, or two do equally: the cache keys graphs, not
    sources, so an identical graph traced from a different file is served with that
    file's lines, which must not be reported as a site.
    The compiled code ran in this process, so the file it came from is one this process
    loaded.
    """
    import os
    import sys

    global _loaded
    if _loaded[0] != len(sys.modules):
        files = frozenset(os.path.realpath(f) for m in list(sys.modules.values())
                          if isinstance(f := getattr(m, "__file__", None), str))
        by_name: dict[str, list[str]] = {}
        for f in files:
            by_name.setdefault(os.path.basename(f), []).append(f)
        _loaded = (len(sys.modules), files, by_name)
    _, files, by_name = _loaded
    real = os.path.realpath(file)
    if real in files:
        return file
    parts = real.split(os.sep)
    best: str | None = None
    best_tail, tied = 0, False
    for cand in by_name.get(os.path.basename(real), ()):
        if line is not None and func and not _defines(cand, line, func) and (
                not code or current_line(cand, line, code, func) is None):
            continue
        other = cand.split(os.sep)
        tail = 0
        while tail < min(len(parts), len(other)) and parts[-1 - tail] == other[-1 - tail]:
            tail += 1
        if tail > best_tail:
            best, best_tail, tied = cand, tail, False
        elif tail == best_tail:
            tied = True
    return None if tied else best


def _fx(frame: FrameType) -> list[SiteDict]:
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


def parse_stack_trace(text: str | None) -> list[SiteDict]:
    """An FX node's ``stack_trace`` (traceback text) -> site dicts, innermost first."""
    found = _TRACE_FRAME.findall(str(text or ""))
    return [_site(f, int(line), name) for f, line, name in reversed(found)]


def _site(file: str, line: int, name: str) -> SiteDict:
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


def _defines(file: str, line: int, func: str) -> bool:
    """Whether ``file`` has a function ``func`` whose lines hold ``line``."""
    return any(co_name == func and lo <= line <= hi for co_name, _, lo, hi in _table(file))


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
