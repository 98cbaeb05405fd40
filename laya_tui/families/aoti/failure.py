"""Turn an export/package/load/run exception into a reportable step failure (plain Python).

A failure is a first-class result: the step, the exception type, the first meaningful line
of its text (not a wrapper banner), the user's call site and, for known classes, a fix.
"""

from __future__ import annotations

import os
import re
import sysconfig
import traceback
from dataclasses import dataclass, field
from typing import TypedDict

from laya_tui.core.logtext import trim_faulthandler
from laya_tui.core.open_types import Detail
from laya_tui.core.report_types import SiteDict
from laya_tui.families.aoti.records import LoadError

#: Lines that introduce or wrap an error rather than state it.
_NOISE = [re.compile(p) for p in (
    r"^Traceback \(most recent call last\):",
    r"^Error: .*API call failed at ",
    r"^Exception raised from ",
    r"^frame #\d+",
    r"^<omitting python frames>",
    r"^backend=.* raised:$",
    r"^(torch\._\w+\.exc\.)?\w*(Error|Exception|Failed): *$",
    r"^CppCompileError: C\+\+ compile error$",
    r"^Set TORCH_LOGS=",
    r"^You can suppress this exception",
    r"^terminate called after throwing",
    r"^\s*(Command|Output):\s*$",
    r"^During handling of the above exception",
    r"^The above exception was the direct cause",
)]
_CXX_ERROR = re.compile(r"(^|\s|:)(fatal )?error: ", re.IGNORECASE)
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_CPP_SITE = re.compile(r"^Error: (\w+)\(.*API call failed at (\S+), line (\d+)", re.M)
_NO_FAKE = re.compile(r"no fake impl registered for (?:<CustomOpDef\()?([\w.]+::[\w.]+)\)?>?"
                      r"(?:.*?use `?([\w.]+\.register_fake)`?)?", re.S)
_GB_ID = re.compile(r"/gb/(gb\d+)\.html|\b(GB\d+)\b", re.I)

#: (pattern in the error text, one-line fix).
FIXES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"mat1 and mat2 must have the same dtype|expected .* same dtype", re.I),
     "cast every extra input to the head's dtype before the matmul "
     "(features.to(pooled.dtype)); a bf16 copy needs explicit casts, not autocast"),
    (re.compile(r"data.dependent|GuardOnDataDependentSymNode|unbacked", re.I),
     "replace Python branching on tensor values with torch.cond / torch.where, "
     "or bound the value with torch._check"),
    (re.compile(r"Constraints violated|specializ|ConstraintViolation", re.I),
     "the model fixes a dim declared dynamic: apply export's suggested Dim fix "
     "or declare that dim static"),
    (re.compile(r"in pytree is not registered", re.I),
     "the package's output spec names a Python class (such as a transformers ModelOutput): "
     "import its library before calling the package, or return a tuple of tensors"),
    (re.compile(r"outside the exported ranges", re.I),
     "pad or split inputs into the exported ranges, or re-export with wider Dims"),
    (re.compile(r"C\+\+ compile error|CppCompileError|InvalidCxxCompiler", re.I),
     "check the C++ compiler (CXX) and the generated source named in the detail"),
    (re.compile(r"Unsupported|not supported|no fake impl|NotImplementedError", re.I),
     "rewrite the op with supported aten ops or register a fake (meta) kernel for it"),
)


class MissingFake(TypedDict):
    """A custom op torch could not trace for want of a fake (meta) impl."""

    op: str
    gb: str | None
    register: str
    site: SiteDict | None
    reason: str


@dataclass
class StepFailure:
    """One failed step, ready to become a ``log`` signal and a results.json entry."""

    step: str
    exception: str
    line: str
    text: str
    site: SiteDict | None = None
    fix: str | None = None
    detail: Detail = field(default_factory=dict)

    def as_dict(self) -> Detail:
        """JSON-ready form for results.json."""
        return {"step": self.step, "exception": self.exception, "line": self.line,
                "site": self.site, "fix": self.fix, "text": self.text[-6000:], **self.detail}


def first_meaningful_line(text: str) -> str:
    """The first line that states the error, skipping banners, frames and blank lines.

    For a C++ compiler failure, the first compiler ``error:`` line wins.
    """
    lines = [ln.rstrip() for ln in str(text).splitlines()]
    if any("CppCompileError" in ln or "C++ compile error" in ln for ln in lines):
        for ln in lines:
            if _CXX_ERROR.search(ln) and "CppCompileError" not in ln:
                return ln.strip()[:400]
    for ln in lines:
        s = ln.strip()
        if not s or any(p.search(s) for p in _NOISE):
            continue
        return s[:400]
    return ""


def fix_for(text: str) -> str | None:
    """A one-line fix for a known failure class, or None."""
    for pattern, fix in FIXES:
        if pattern.search(text):
            return fix
    return None


def _is_library(path: str) -> bool:
    real = os.path.realpath(path)
    libs = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "purelib", "platlib")}
    if any(real.startswith(lib + os.sep) for lib in libs):
        return True
    parts = real.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    here = os.path.dirname(os.path.abspath(__file__))
    return real.startswith(here + os.sep) or real.startswith("<")


def user_site_from_frames(frames: list[tuple[str, int, str]]) -> SiteDict | None:
    """The innermost ``(file, line, func)`` that is user code (not torch, not this pipeline)."""
    for path, line, func in reversed(frames):
        if not _is_library(path):
            return {"file": os.path.realpath(path), "line": int(line), "func": func}
    return None


def user_site(exc: BaseException) -> SiteDict | None:
    """The user's call site of ``exc``: its traceback first, then ``File ...`` lines in its text."""
    frames = [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    site = user_site_from_frames(frames)
    return site or site_from_text(str(exc))


def site_from_text(text: str) -> SiteDict | None:
    """The innermost user frame among ``File "...", line N, in f`` lines of a text."""
    frames = [(m.group(1), int(m.group(2)), m.group(3)) for m in _FILE_LINE.finditer(text)]
    return user_site_from_frames(frames)


def cpp_site(text: str) -> SiteDict | None:
    """``{file, line, func}`` from an AOTInductor ``API call failed at FILE, line N`` line."""
    m = _CPP_SITE.search(text)
    if not m:
        return None
    return {"file": m.group(2), "line": int(m.group(3)), "func": m.group(1)}


def missing_fake(text: str, site: SiteDict | None = None) -> MissingFake | None:
    """``{op, gb, register, site, reason}`` when ``text`` says a custom op has no fake impl.

    Torch says it the same way under torch.compile (a ``TorchRuntimeError`` with the graph
    break's ``gbNNNN`` page) and under torch.export; the reason names all of it in one line.
    """
    m = _NO_FAKE.search(text)
    if m is None:
        return None
    gb = _GB_ID.search(text)
    gb_id = (gb.group(1) or gb.group(2)).upper() if gb else None
    site = site or site_from_text(text)
    register = m.group(2) or f"{m.group(1).split('::')[-1]}.register_fake"
    where = f" at {os.path.basename(site['file'])}:{site['line']}" if site else ""
    reason = (f"custom op {m.group(1)} has no fake (meta) impl{where}"
              f"{f' ({gb_id})' if gb_id else ''}: torch.compile/export cannot trace it; "
              f"add one with @{register}")
    return {"op": m.group(1), "gb": gb_id, "register": register, "site": site,
            "reason": reason}


def describe(step: str, exc: BaseException, **detail: object) -> StepFailure:
    """Describe an exception raised by ``step`` in this process."""
    text = f"{type(exc).__name__}: {exc}"
    line = first_meaningful_line(str(exc)) or type(exc).__name__
    site = user_site(exc)
    fake = missing_fake(text, site_from_text(text) or site)
    if fake is not None:
        line, site = fake["reason"], fake["site"]
        detail = {**detail, "missing_fake": {k: fake[k] for k in ("op", "gb", "register")}}
    return StepFailure(step=step, exception=type(exc).__name__, line=line, text=text,
                       site=site, fix=fix_for(text), detail=dict(detail))


def describe_remote(step: str, error: LoadError | None, stderr: str = "",
                    returncode: int | None = None, **detail: object) -> StepFailure:
    """Describe a failure reported by (or inferred from) the fresh worker process."""
    if error:
        text = f"{error.get('type', 'Error')}: {error.get('message', '')}"
        line = first_meaningful_line(error.get("message", "")) or error.get("type", "Error")
        site = site_from_text(error.get("traceback", "")) or cpp_site(stderr)
        fake = missing_fake(text, site)
        if fake is not None:
            line, site = fake["reason"], fake["site"]
        return StepFailure(step=error.get("step") or step, exception=error.get("type", "Error"),
                           line=line, text=text + "\n" + trim_faulthandler(stderr)[-3000:],
                           site=site,
                           fix=fix_for(text), detail=dict(detail))
    signame = _signal_name(returncode)
    stderr = trim_faulthandler(stderr)
    line = first_meaningful_line(stderr) or f"process exited with code {returncode}{signame}"
    return StepFailure(step=step, exception=f"exit {returncode}{signame}", line=line,
                       text=stderr[-6000:], site=cpp_site(stderr), fix=fix_for(stderr),
                       detail=dict(detail))


def _signal_name(code: int | None) -> str:
    if code is None or code >= 0:
        return ""
    import signal

    try:
        return f" ({signal.Signals(-code).name})"
    except ValueError:
        return ""
