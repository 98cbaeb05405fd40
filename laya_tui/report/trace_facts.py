"""What the payloads of TORCH_TRACE records say, as plain facts: a graph break's type, GB id
and user frame; a failing guard and where its guard came from; where a failed export's
partial graph stopped (docs/architecture.md, 'TORCH_TRACE: reading the logs users have').

The texts parsed here are Dynamo's own messages, as ``torch/_dynamo/symbolic_convert.py``,
``convert_frame.py`` and ``guards.py`` (torch 2.x) write them into the log; a text that
does not look as expected yields fewer facts, never an exception. Standard library only.
"""

from __future__ import annotations

import re
from typing import NotRequired, TypedDict

from laya_tui.core.tracelog import TraceFrame

_USER_AT = re.compile(r"Graph break in user code at (.+):(\d+)\s*$")
_GB_ID = re.compile(r"/gb/gb(\d+)\.html")
_DOC = re.compile(r"(https?://\S+/gb/gb\d+\.html)")
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (.+?)\s*$')
_SKIP = re.compile(r"torch\.compile will skip tracing the frame (\S+)")
#: ``# y = x.sin()  # mp/i33x/model.py:4 in f``: a guard's origin in the guard tree.
_ORIGIN = re.compile(r"#\s(?P<code>.*?)\s+#\s(?P<file>\S+):(?P<line>\d+) in (?P<func>\S+)\s*$")
_SOURCE = re.compile(r"source=(.+?), accessed_by=")
_TENSOR_NAME = re.compile(r"tensor '([^']+)'")
#: ``# File: /tmp/m.py:17 in forward, code: if x.sum() > 0:`` in an FX graph's code.
_FX_FILE = re.compile(r"#\s*File: (.+?):(\d+) in ([^,]+), code: (.*)$")
_COMPILE_ID = re.compile(r"^\s*(!?\d+/)?(\d+/\d+)(?:_\d+)?: ")
_EXC_PREFIX = re.compile(r"^(?:[\w.]+\.)?(?:Unsupported|UserError|[A-Z]\w*Error): ")


class CodeSite(TypedDict):
    """A user line with its function and code: where a guard was installed (``file`` as
    torch shortened it), where a failed export's partial graph stopped."""

    file: str
    line: int
    func: str
    code: str


class GraphBreakFacts(TypedDict):
    """What one ``dynamo_graph_break_reason`` payload says (see :func:`parse_graph_break`);
    ``record_line``: its line in the log, added by the reader."""

    type: str | None
    hints: list[str]
    stack: list[TraceFrame]
    site: NotRequired[TraceFrame | None]
    gb_id: NotRequired[str]
    documentation: NotRequired[str]
    explanation: NotRequired[str]
    context: NotRequired[str]
    skipped_frame: NotRequired[str]
    record_line: NotRequired[int]


class GuardFailure(TypedDict):
    """One failing guard (see :func:`parse_guard_failure`)."""

    guard: str
    failed_compile: NotRequired[str]
    stack: NotRequired[list[TraceFrame]]


def parse_graph_break(text: str) -> GraphBreakFacts:
    """A ``dynamo_graph_break_reason`` payload -> ``type`` (the graph-break type: the line
    above ``Explanation:``), ``gb_id`` (``GB0170``), ``documentation``, ``explanation``,
    ``hints``, ``context`` (the reason's first line when it is not the type), ``site`` (the
    user line), ``stack`` (user frames, outermost first) and ``skipped_frame`` (the frame
    Dynamo gave up on and ran eager, when it says so)."""
    lines = text.splitlines()
    out: GraphBreakFacts = {"type": None, "hints": [], "stack": []}
    site: TraceFrame | None = None
    reason_first: str | None = None
    for i, ln in enumerate(lines):
        s = ln.strip()
        if site is None and (m := _USER_AT.search(ln)):
            site = {"file": m.group(1), "line": int(m.group(2))}
        elif s.startswith("Graph Break Reason:") and reason_first is None:
            reason_first = s[len("Graph Break Reason:"):].strip()
        elif s.startswith("Explanation:") and out["type"] is None:
            out["explanation"] = _continued(lines, i, s[len("Explanation:"):].strip())
            out["type"] = _line_above(lines, i)
        elif s.startswith("Hint:"):
            out["hints"].append(s[len("Hint:"):].strip())
        if "gb_id" not in out and (m := _GB_ID.search(ln)):
            out["gb_id"] = f"GB{m.group(1)}"
            doc = _DOC.search(ln)
            if doc:
                out["documentation"] = doc.group(1)
        if "skipped_frame" not in out and (m := _SKIP.search(ln)):
            out["skipped_frame"] = m.group(1)
    if out["type"] is None:
        out["type"] = reason_first or (lines[0].strip() if lines else "graph break")
    if reason_first and reason_first != out["type"]:
        out["context"] = reason_first
    out["stack"] = user_frames(text)
    if site is not None:
        for f in reversed(out["stack"]):
            if f["file"] == site["file"] and f["line"] == site["line"]:
                site = f.copy()
                break
    elif out["stack"]:
        site = out["stack"][-1].copy()
    out["site"] = site
    return out


def _line_above(lines: list[str], i: int) -> str | None:
    for j in range(i - 1, -1, -1):
        s = lines[j].strip()
        if s:
            s = s.removeprefix("Graph Break Reason:").strip()
            return _EXC_PREFIX.sub("", s)
    return None


def _continued(lines: list[str], i: int, first: str) -> str:
    """An ``Explanation:`` line and the more-indented lines right after it, joined."""
    parts = [first]
    indent = len(lines[i]) - len(lines[i].lstrip())
    for ln in lines[i + 1:]:
        s = ln.strip()
        if not s or s.startswith(("Hint:", "Developer debug context:")):
            break
        if len(ln) - len(ln.lstrip()) <= indent:
            break
        parts.append(s)
    return " ".join(parts)


def user_frames(text: str) -> list[TraceFrame]:
    """The frames of the user-code section (``User code traceback:``, ``the following user
    code:``, ``User stack trace:``) as ``{file, line, func, code?}``, outermost first; the
    framework's own ``Traceback (most recent call last):`` that follows is not read."""
    lines = text.splitlines()
    out: list[TraceFrame] = []
    inside = False
    for i, ln in enumerate(lines):
        s = ln.strip()
        if s in ("User code traceback:", "User stack trace:") or s.endswith(
                "in the following user code:"):
            inside, out = True, []
            continue
        if not inside:
            continue
        if s.startswith("Traceback (most recent call last)"):
            break
        m = _FRAME.match(ln)
        if m:
            frame: TraceFrame = {"file": m.group(1), "line": int(m.group(2)),
                                 "func": m.group(3)}
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if nxt and not _FRAME.match(lines[i + 1]) and not set(nxt) <= set("^~ "):
                frame["code"] = nxt
            out.append(frame)
    return out


def parse_guard_failure(text: str) -> GuardFailure:
    """One ``recompile_reasons`` entry (``"0/0: tensor 'x' size mismatch ..."``) ->
    ``failed_compile`` (the cache entry whose guard failed), ``guard`` (the text without it,
    first line), ``stack`` (a ``User stack trace:`` that follows, when torch recorded one)."""
    first, _, rest = str(text).partition("\n")
    out: GuardFailure = {"guard": first.strip()}
    m = _COMPILE_ID.match(first)
    if m:
        out["failed_compile"] = (m.group(1) or "") + m.group(2)
        out["guard"] = first[m.end():].strip()
    if rest:
        frames = user_frames(rest)
        if frames:
            out["stack"] = frames
    return out


def guard_origins(tree: str, limit: int = 400) -> dict[str, CodeSite]:
    """A ``dynamo_cpp_guards_str`` payload (the guard tree) -> ``{key: origin}``: each guarded
    source (``L['x']``) and each leaf guard's text, mapped to the user line that installed
    it (``{file, line, func, code}``; ``file`` as torch shortened it)."""
    out: dict[str, CodeSite] = {}
    sources: list[tuple[int, str]] = []  # (depth, source) of the enclosing managers
    for ln in tree.splitlines():
        head, sep, leaf = ln.partition("+- ")
        if not sep:
            continue
        depth = head.count("|")
        while sources and sources[-1][0] >= depth:
            sources.pop()
        src = _SOURCE.search(leaf)
        if src and leaf.startswith(("GuardManager", "DictGuardManager", "RootGuardManager")):
            sources.append((depth, src.group(1)))
            continue
        m = _ORIGIN.search(leaf)
        if m is None:
            continue
        origin: CodeSite = {"file": m.group("file"), "line": int(m.group("line")),
                              "func": m.group("func"), "code": m.group("code").strip()}
        text = leaf[:m.start()].strip()
        out.setdefault(text, origin)
        if sources:
            out.setdefault(sources[-1][1], origin)
        if len(out) >= limit:
            break
    return out


def origin_of(guard: str, origins: dict[str, CodeSite]) -> CodeSite | None:
    """Where the guard that failed (``guard``: its failure text) was installed: the tensor it
    names (``tensor 'x' ...`` -> ``L['x']``), else a leaf guard whose text holds it."""
    m = _TENSOR_NAME.search(guard)
    if m:
        name = m.group(1)
        for key in (name, f"L['{name}']", f"G['{name}']"):
            if key in origins:
                return origins[key]
    expr = guard.strip()
    if expr:
        for text, origin in origins.items():
            if expr in text:
                return origin
    return None


def resolve_file(short: str, candidates: list[str]) -> str:
    """A file name torch shortened in a guard comment, resolved against the log's full names."""
    for c in candidates:
        if c == short or c.endswith(short):
            return c
    return short


def partial_graph_stop(code: str) -> CodeSite | None:
    """The last user line an FX graph's code records (``# File: F:L in func, code: ...``):
    where tracing of a failed ``make_fx``/export got to."""
    last = None
    for ln in code.splitlines():
        m = _FX_FILE.search(ln)
        if m:
            last = m
    if last is None:
        return None
    return {"file": last.group(1), "line": int(last.group(2)), "func": last.group(3).strip(),
            "code": last.group(4).strip()}


def is_torch_file(path: str) -> bool:
    """A frame of torch itself (never the user's line)."""
    p = path.replace("\\", "/")
    return "/site-packages/torch/" in p or "/torch/_" in p or p.startswith("torch/") \
        or "/site-packages/torch_" in p


def user_only(stack: list[TraceFrame]) -> list[TraceFrame]:
    """The frames that are not torch's own."""
    return [f for f in stack if not is_torch_file(f["file"])]


def short_path(path: str) -> str:
    """The last two parts of a path (``pkg/model.py``)."""
    parts = path.replace("\\", "/").rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else path
