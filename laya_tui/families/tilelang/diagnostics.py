"""The first real diagnostic of a failing stage: its line, the kernel line it points at, the pass.

Sources, best first: TileLang's own ``--> file:line:col`` marker; buffers the message names
(or whose scope/dtype it names) found in the IR the failing pass received, with the source
spans TileLang stamps on them; the user's frame in a Python traceback; the factory's
``def`` line. The failing pass comes from TileLang's pass instrumentation
(:mod:`laya_tui.families.tilelang.passlog`), else from the traceback (Python frames, then C++
frames).

TVM is imported inside functions: this module is imported by worker-side code only.
"""

from __future__ import annotations

import os
import re
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from laya_tui.families.tilelang.records import BufferDict, SiteDict

if TYPE_CHECKING:
    from laya_tui.families.tilelang.passlog import PassLog
    from laya_tui.families.tilelang.tl_objects import IRModule, PrimFunc

#: ``--> /abs/path/kernel.py:21:1`` markers TileLang appends to compiler errors.
MARKER_RE = re.compile(r"-->\s+(?P<file>[^\s].*?):(?P<line>\d+)(?::(?P<col>\d+))?\s*$",
                       re.MULTILINE)
#: gcc/clang ``file:line:col: error: msg`` and nvcc ``file(line): error: msg``.
CC_ERROR_RE = re.compile(
    r"^(?P<file>[^\s:()][^:()]*?)(?::(?P<line>\d+)(?::(?P<col>\d+))?:|\((?P<pline>\d+)\):)"
    r"\s*(?:fatal )?error\b[^:]*:\s*(?P<msg>.*)$", re.MULTILINE)
_CPP_FRAME_RE = re.compile(r"in tvm::tl::(?:\w+::)*?(?P<name>\w+(?:Pass|Inferencer|Rewriter|"
                           r"Planner|Legalizer|Lowerer|Mutator))::")
_TILEOP_FRAME_RE = re.compile(r"in tvm::tl::(?P<op>\w+)Node::Lower\b")
_NOISE_PREFIXES = ("Traceback", "File ", "  File", "[", "During handling", "The above")
MAX_TEXT = 8000

#: Parts of a diagnostic that change between processes, not with the kernel: object
#: addresses, and the fragment TileLang's layout inference names (it names the first fragment
#: without a layout in a hash map keyed by object address, ``use_list_`` in
#: layout_inference.cc, so which one comes first follows the process's memory history).
PROCESS_DEPENDENT = (r"0x[0-9a-fA-F]+",
                     r"(?<=The layout for fragment )\S+(?= can not be inferred)")
_PROCESS_DEPENDENT_RE = re.compile("|".join(PROCESS_DEPENDENT))


def same_diagnostic(a: str, b: str) -> bool:
    """Whether two first lines are the same diagnostic, process-dependent parts aside."""
    return _PROCESS_DEPENDENT_RE.sub("?", a) == _PROCESS_DEPENDENT_RE.sub("?", b)


@dataclass
class Diagnostic:
    """What a failing stage said, and where it points."""

    stage: str  # import | factory | lower | build | run
    exception: str
    line: str
    text: str
    site: SiteDict | None = None
    source_excerpt: str | None = None
    pass_name: str | None = None
    buffers: list[BufferDict] = field(default_factory=list)
    command: str | None = None
    fix: str | None = None


# -- text helpers ---------------------------------------------------------------------------


def first_line(message: str) -> str:
    """The first meaningful line of an error message (tracebacks and blank lines skipped)."""
    for raw in message.splitlines():
        line = raw.strip()
        if not line or line.startswith(_NOISE_PREFIXES) or line.startswith("-->"):
            continue
        return line[:500]
    return message.strip()[:500]


def excerpt(path: str, line: int | None, context: int = 2, col: int | None = None
            ) -> str | None:
    """``path`` lines ``line-context .. line+context`` with a gutter and a ``>`` marker
    (None without a line)."""
    if line is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    if not 1 <= line <= len(lines):
        return None
    lo, hi = max(1, line - context), min(len(lines), line + context)
    width = len(str(hi))
    out = [f"  --> {path}:{line}" + (f":{col}" if col else "")]
    for n in range(lo, hi + 1):
        mark = ">" if n == line else " "
        out.append(f"{mark} {n:>{width}} | {lines[n - 1]}")
    return "\n".join(out)


def _site(path: str, line: int, func: str | None = None) -> SiteDict:
    site: SiteDict = {"file": os.path.realpath(path), "line": int(line)}
    if func:
        site["func"] = func
    return site


class _SourceName(Protocol):
    @property
    def name(self) -> object: ...


class _Span(Protocol):
    """Where TileLang stamped an IR node: its source file's name and line."""

    @property
    def source_name(self) -> _SourceName | None: ...

    @property
    def line(self) -> int: ...


class _IrBuffer(Protocol):
    """A ``tir.Buffer`` as the failing IR holds it (its span read when it has one)."""

    @property
    def name(self) -> object: ...

    @property
    def dtype(self) -> object: ...

    def scope(self) -> object: ...


def _span_site(span: _Span | None) -> tuple[str, int] | None:
    try:
        if span is None or span.source_name is None:
            return None
        name = str(span.source_name.name)
        line = int(span.line)
    except (AttributeError, TypeError, ValueError):
        return None
    if not name or line <= 0 or not os.path.isfile(name):
        return None
    return name, line


# -- buffers the failing IR holds -----------------------------------------------------------


def ir_buffers(mod: IRModule) -> tuple[list[BufferDict], list[tuple[str, list[str]]]]:
    """Buffers of every function in ``mod`` (name, scope, dtype, span site) and its tile ops.

    Tile ops come back in IR order as ``(op name, [buffer names])``.
    """
    from tvm import tirx
    from tvm.tirx import stmt_functor

    buffers: dict[str, BufferDict] = {}
    ops: list[tuple[str, list[str]]] = []

    def note(buf: _IrBuffer) -> None:
        name = str(buf.name)
        if name in buffers:
            return
        entry: BufferDict = {"name": name, "scope": str(buf.scope()), "dtype": str(buf.dtype)}
        where = _span_site(getattr(buf, "span", None))
        if where:
            entry["file"], entry["line"] = where
        buffers[name] = entry

    def visit(node: object) -> None:
        if isinstance(node, tirx.SBlock):
            for buf in node.alloc_buffers:
                note(buf)
        elif isinstance(node, tirx.Evaluate) and isinstance(node.value, tirx.Call):
            op = getattr(node.value.op, "name", "")
            if op.startswith("tl.tileop."):
                names = []
                for arg in node.value.args:
                    for m in re.finditer(r"T\.region\((\w+)\[", str(arg)[:400]):
                        names.append(m.group(1))
                ops.append((op.removeprefix("tl.tileop."), names))

    for _gv, func in mod.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        for buf in func.buffer_map.values():
            note(buf)
        stmt_functor.post_order_visit(func.body, visit)
    return list(buffers.values()), ops


def implicated_buffers(message: str, trace: str, buffers: list[BufferDict],
                       ops: list[tuple[str, list[str]]]) -> list[BufferDict]:
    """The buffers a diagnostic is about: named in it, or of the scope/dtype it names
    and used by the tile op that failed."""
    named = [b for b in buffers if re.search(rf"(?<![\w.]){re.escape(b['name'])}(?![\w])",
                                             message)]
    if named:
        return named
    scopes = set(re.findall(r"`?(local\.fragment|shared\.dyn|shared|local\.var)`?", message))
    dtypes = set(re.findall(r"\b(bfloat16|float16|float8\w*|float32|int8)\b", message))
    if not scopes and not dtypes:
        return []
    by_name = {b["name"]: b for b in buffers}

    def fits(b: BufferDict) -> bool:
        return b["scope"] in scopes if scopes else b["dtype"] in dtypes

    op_match = _TILEOP_FRAME_RE.findall(trace)
    failing_op = _camel_to_snake(op_match[-1]) if op_match else None
    for op, names in ops:  # the first op of the failing kind that holds such a buffer
        if failing_op and not (op.startswith(failing_op) or failing_op.startswith(op)):
            continue
        hit = [by_name[n] for n in dict.fromkeys(names) if n in by_name and fits(by_name[n])]
        if hit:
            return hit
    return [b for b in buffers if fits(b)][:4]


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def pass_from_trace(exc: BaseException, trace: str) -> str | None:
    """The failing pass or stage from a traceback when no instrument saw it."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.name in ("PreLowerSemanticCheck",):
            return frame.name
        if "codegen" in frame.name and "tilelang" in frame.filename:
            return f"device codegen ({frame.name})"
    m = _CPP_FRAME_RE.findall(trace)
    return m[-1] if m else None


def fix_for(line: str, target: str, stage: str) -> str | None:
    """A one-line fix for the diagnostics users meet most on target ``c``."""
    low = line.lower()
    if target == "c":
        if "fragment" in low:
            return ("fragments are GPU registers: lower the cpu=True specialization "
                    "(local buffers, serial loops) for target c")
        if "bfloat16" in low:
            return "target c has no bfloat16 type: use float32 (the cpu=True specialization)"
        if stage == "build" and ("half" in low or "float16" in low):
            return "fp16 vectors do not compile as C++: use float32 on target c (cpu=True)"
        if "shared" in low or "not passed in as api arguments" in low:
            return "shared-memory tiles need the GPU: use the cpu=True specialization on c"
    if stage == "build" and "-lcuda" in low:
        return "no libcuda to link: build on a machine with the NVIDIA driver"
    return None


# -- building a Diagnostic ------------------------------------------------------------------


def from_exception(exc: BaseException, *, stage: str, target: str, kernel_file: str,
                   factory_site: SiteDict | None = None, tracker: PassLog | None = None,
                   source_func: PrimFunc | None = None) -> Diagnostic:
    """The diagnostic of an exception raised while importing, tracing or lowering a kernel.

    ``source_func`` (the traced PrimFunc) supplies buffer spans that late passes dropped.
    """
    message = str(exc) if str(exc).strip() else type(exc).__name__
    if isinstance(exc, SyntaxError) and exc.msg:
        message = f"{exc.msg} ({os.path.basename(exc.filename or kernel_file)}, line {exc.lineno})"
    trace = "".join(traceback.format_exception(exc))
    line = first_line(message)
    diag = Diagnostic(stage=stage, exception=type(exc).__name__, line=line,
                      text=message[:MAX_TEXT])

    # the pass, and the IR it received
    failed_mod = None
    inner = tracker.innermost() if tracker is not None else None
    if inner is not None:
        name, failed_mod = inner
        if not name.startswith("after "):  # "after X": no pass raised, X's output is the IR
            diag.pass_name = name
    if diag.pass_name is None and stage == "lower":
        diag.pass_name = pass_from_trace(exc, trace)

    # where it points: marker, implicated buffers, the user's frame, the factory
    site = None
    marker = MARKER_RE.search(message)
    if marker and os.path.isfile(marker.group("file")):
        site = _site(marker.group("file"), int(marker.group("line")))
    if failed_mod is not None or source_func is not None:
        try:
            buffers, ops = ir_buffers(failed_mod) if failed_mod is not None else ([], [])
            if source_func is not None:
                from tilelang import tvm

                more, more_ops = ir_buffers(tvm.IRModule({"main": source_func}))
                known = {b["name"] for b in buffers}
                buffers += [b for b in more if b["name"] not in known]
                ops = ops or more_ops
                spans = {b["name"]: b for b in more if b.get("file")}
                for b in buffers:
                    if not b.get("file") and b["name"] in spans:
                        b["file"], b["line"] = spans[b["name"]]["file"], spans[b["name"]]["line"]
            diag.buffers = implicated_buffers(message, trace, buffers, ops)
        except Exception:  # noqa: BLE001 - enrichment must never hide the diagnostic
            diag.buffers = []
        if site is None:
            for b in diag.buffers:
                if b.get("file"):
                    site = _site(b["file"], b["line"])
                    break
    if isinstance(exc, SyntaxError) and exc.lineno:
        site = _site(exc.filename or kernel_file, exc.lineno)
    if site is None:
        site = user_frame(exc, kernel_file)
    if site is None and factory_site is not None:
        site = factory_site.copy()
    diag.site = site
    if site is not None:
        diag.source_excerpt = excerpt(site["file"], site["line"])
    notes = [f"  note: buffer `{b['name']}` ({b['scope']}, {b['dtype']})"
             + (f" allocated at {b['file']}:{b['line']}" if b.get("file") else "")
             for b in diag.buffers]
    if diag.pass_name:
        notes.append(f"  note: raised in pass {diag.pass_name}")
    if notes:
        diag.text = (diag.text.rstrip() + "\n" + "\n".join(notes))[:MAX_TEXT]
    if diag.source_excerpt and "-->" not in message:
        diag.text = (diag.text.rstrip() + "\n" + diag.source_excerpt)[:MAX_TEXT]
    diag.fix = fix_for(line + " " + " ".join(b["scope"] for b in diag.buffers), target, stage)
    return diag


def user_frame(exc: BaseException, kernel_file: str) -> SiteDict | None:
    """The innermost traceback frame in the kernel's folder (the user's kernel code)."""
    folder = os.path.dirname(os.path.realpath(kernel_file)) + os.sep
    site = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = os.path.realpath(frame.filename)
        if path.startswith(folder) and frame.lineno:
            site = _site(path, frame.lineno, frame.name)
    return site


def from_compiler(output: str, command: list[str], *, target: str, source_path: str,
                  returncode: int) -> Diagnostic:
    """The diagnostic of a failed C/C++/CUDA compile: its first error line and the command."""
    cmd = " ".join(command)
    m = CC_ERROR_RE.search(output)
    site = None
    if m:
        line = f"{os.path.basename(m.group('file'))}:{m.group('line') or m.group('pline')}: " \
               f"error: {m.group('msg').strip()}"
        lineno = int(m.group("line") or m.group("pline"))
        if os.path.isfile(m.group("file")):
            site = _site(m.group("file"), lineno)
    else:
        errs = [ln for ln in output.splitlines() if "error" in ln.lower()]
        line = (errs[0] if errs else first_line(output) or
                f"compiler exited with status {returncode}").strip()[:500]
    body = output.strip() or line
    if len(body) > MAX_TEXT - 2000:  # leave room for the notes and the excerpt
        body = body[: MAX_TEXT - 2000].rstrip() + "\n  [... compiler output trimmed]"
    diag = Diagnostic(stage="build", exception="CompileError", line=line, text=body,
                      command=cmd, site=site)
    if m and os.path.realpath(m.group("file")) == os.path.realpath(source_path):
        diag.source_excerpt = excerpt(source_path, int(m.group("line") or m.group("pline")))
    elif site is not None:
        diag.source_excerpt = excerpt(site["file"], lineno)  # (site is lineno's)
        generated = generated_line(source_path, site["file"], lineno,
                                   int(m.group("col") or 0) if m else 0)
        if generated and diag.source_excerpt:
            diag.source_excerpt += f"\n  generated ({os.path.basename(source_path)}):\n" \
                                   f"    {generated.strip()}"
    notes = [f"  note: C type `{t}` is {C_TYPES[t.rstrip('0123456789')]}"
             for t in dict.fromkeys(re.findall(r"\b(half\d*|bfloat16_t\d*)\b", line))]
    if notes:
        diag.text = (diag.text.rstrip() + "\n" + "\n".join(notes))[:MAX_TEXT]
    if diag.source_excerpt:
        diag.text = (diag.text.rstrip() + "\n" + diag.source_excerpt)[:MAX_TEXT]
    diag.fix = fix_for(line, target, "build")
    return diag


#: C/C++ type names in compiler errors -> TileLang dtypes.
C_TYPES = {"half": "float16 (a vector of it when numbered)",
           "bfloat16_t": "bfloat16 (a vector of it when numbered)"}


def generated_line(source_path: str, file: str, line: int, col: int) -> str | None:
    """The generated-source line a ``#line``-mapped compiler error sits on (first match)."""
    try:
        with open(source_path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    directive = re.compile(r'^\s*#line\s+(\d+)\s+"(.*)"')
    current: tuple[int, str] | None = None
    candidates = []
    for text in lines:
        d = directive.match(text)
        if d:
            current = (int(d.group(1)), d.group(2))
            continue
        if current is not None:
            if current[0] == line and os.path.realpath(current[1]) == os.path.realpath(file):
                candidates.append(text)
            current = (current[0] + 1, current[1])
    fitting = [c for c in candidates if len(c) >= col]
    return (fitting or candidates)[0] if (fitting or candidates) else None
