"""Call sites: the innermost frame outside torch's machinery and outside laya-tui, as
``file:line(func)``.

Frames are classified once per code object (a dict lookup afterwards), so walking the stack
of an intercepted op costs a few pointer hops. Internal: the torch package (functorch and
Inductor included), torch_rbln, the standard library, transformers outside its model files
(decorators, attention/mask/cache plumbing: only its ``models`` folder is model code) and
laya-tui itself (the package, and a checkout's ``probes/`` beside it), except the demo's
model code, which stands for a user's code (the decision model, the hand-written decode
loop: :data:`DEMO_FILES`, :data:`DEMO_CODE`). Generated code (Inductor's output modules, FX
graph modules) is internal too but flagged, and the walk reads the user frames it was
generated from (:mod:`laya_tui.families.explain.source_map`), so an op called from compiled
code is sited at the line of the model that produced it.

Function names are qualified by class (``Norm.forward``, ``co_qualname``), and Dynamo's resume
functions (``torch_dynamo_resume_in_forward_at_27``) are named after the function they resume.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Sequence
from types import CodeType, FrameType
from typing import TYPE_CHECKING

from laya_tui.families.explain.frame_names import (
    GENERATED,
    INDUCTOR,
    INTERNAL,
    USER,
    plain_name,
)
from laya_tui.families.explain.records import SiteDict

if TYPE_CHECKING:
    from traceback import FrameSummary

__all__ = ["GENERATED", "INDUCTOR", "INTERNAL", "USER", "plain_name"]

#: The laya_tui package folder (this file is laya_tui/families/explain/sites.py).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
#: laya-tui functions that stand for a user's code: (file, function name).
DEMO_CODE = {(os.path.join(_PACKAGE, "families", "presets.py"), "host_greedy_decode")}
#: laya-tui files that stand for a user's model file.
DEMO_FILES = {os.path.join(_PACKAGE, "families", "decision_model.py")}
_kinds: dict[CodeType, int] = {}
_names: dict[CodeType, str] = {}
_roots: list[str] | None = None
#: folders inside an internal root that hold model code (transformers/models/)
_model_roots: list[str] = []


def _own_roots() -> list[str]:
    """laya-tui's folders: the package, and a source checkout's ``probes/`` beside it."""
    roots = [_PACKAGE + os.sep]
    repo = os.path.dirname(_PACKAGE)
    probes = os.path.join(repo, "probes")
    if os.path.isdir(probes) and os.path.isfile(os.path.join(repo, "pyproject.toml")):
        roots.append(probes + os.sep)
    return roots


_LIBS = ("torch", "torch_rbln", "functorch", "transformers")
_roots_for: tuple[bool, ...] = ()


def _internal_roots() -> list[str]:
    """laya-tui's folders and those of the loaded libraries (recomputed when one loads)."""
    global _roots, _roots_for
    loaded = tuple(name in sys.modules for name in _LIBS)
    if _roots is not None and loaded == _roots_for:
        return _roots
    roots = _own_roots()
    for name in _LIBS[:3]:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            roots.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    path = getattr(sys.modules.get("transformers"), "__file__", None)
    if path:
        base = os.path.dirname(os.path.abspath(path))
        roots.append(base + os.sep)
        _model_roots[:] = [os.path.join(base, "models") + os.sep]
    _roots, _roots_for = roots, loaded
    return roots


def _in_inductor_cache(filename: str) -> bool:
    """Under ``$TORCHINDUCTOR_CACHE_DIR`` (torch sets it once it resolves its cache folder;
    a user may name any folder, without "torchinductor" in it)."""
    root = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    return bool(root) and filename.startswith(os.path.join(os.path.abspath(root or "."), ""))


def classify_file(filename: str) -> int:
    """USER, INTERNAL, GENERATED (FX graph code) or INDUCTOR (Inductor output code)."""
    if filename.startswith("<"):
        # "<eval_with_key>.3" (FX graph modules), "<string>", "<frozen ...>"
        return GENERATED if "eval_with_key" in filename else INTERNAL
    if "torchinductor" in filename or _in_inductor_cache(filename):
        return INDUCTOR
    roots = _internal_roots()
    for root in _model_roots:
        if filename.startswith(root):
            return USER
    for root in roots:
        if filename.startswith(root):
            return INTERNAL
    if filename.startswith(_STDLIB) and "site-packages" not in filename:
        return INTERNAL
    if not os.path.isabs(filename):
        real = os.path.abspath(filename)
        if real != filename:
            return classify_file(real)
    return USER


def site_kind(file: str, func: str | None = None) -> int:
    """:func:`classify_file`, with the demo's user-code functions counted as USER."""
    kind = classify_file(file)
    if kind == INTERNAL and (file in DEMO_FILES or func is not None
                             and (file, func.rsplit(".", 1)[-1]) in DEMO_CODE):
        return USER
    return kind


def code_kind(code: CodeType) -> int:
    """Cached :func:`site_kind` per code object."""
    kind = _kinds.get(code)
    if kind is None:
        kind = _kinds[code] = site_kind(code.co_filename, code.co_name)
    return kind


def func_name(code: CodeType) -> str:
    """``Class.method`` (``co_qualname``), resume functions mapped back (cached)."""
    name = _names.get(code)
    if name is None:
        qual = getattr(code, "co_qualname", None) or code.co_name
        name = _names[code] = plain_name(qual.rsplit(".<locals>.", 1)[-1])
    return name


def frame_site(frame: FrameType) -> SiteDict:
    """``{"file", "line", "func"}`` of a frame (qualified function name)."""
    code = frame.f_code
    line = frame.f_lineno
    return {"file": code.co_filename, "line": code.co_firstlineno if line is None else line,
            "func": func_name(code)}


def short_path(path: str) -> str:
    """Trim a path to what identifies it: after ``site-packages/`` or the working dir."""
    marker = "site-packages" + os.sep
    i = path.rfind(marker)
    if i >= 0:
        return path[i + len(marker):]
    cwd = os.getcwd() + os.sep
    if path.startswith(cwd):
        return path[len(cwd):]
    return path


def format_frame(site: SiteDict) -> str:
    """``file:line(func)`` with a short path."""
    text = short_path(str(site.get("file", "")))
    if site.get("line") is not None:
        text += f":{site['line']}"
    if site.get("func"):
        text += f"({site['func']})"
    return text


def is_user_site(site: SiteDict | None) -> bool:
    """Whether a site dict is a user/model frame (not torch's, not laya-tui's)."""
    if not site:
        return False
    return site_kind(str(site.get("file", "")), site.get("func")) == USER


def _same_function(a: SiteDict, b: SiteDict) -> bool:
    return a["file"] == b["file"] and str(a.get("func", "")).rsplit(".", 1)[-1] == \
        str(b.get("func", "")).rsplit(".", 1)[-1]


def user_site(frame: FrameType | None, *, depth: int = 0
              ) -> tuple[SiteDict | None, list[str], bool]:
    """Walk outward from ``frame``: ``(site, stack, compiled)``.

    ``site`` is the innermost user frame; ``stack`` holds it and up to ``depth`` more user
    frames as ``file:line(func)`` strings (outermost last); ``compiled`` says whether
    generated code (Inductor output, an FX graph) was on the way, i.e. the op ran inside
    compiled code. The first generated frame is replaced by the user frames its line was
    generated from (outermost of them dropped again when the live stack repeats it).
    """
    from laya_tui.families.explain.source_map import generated_frames

    site = None
    stack: list[str] = []
    compiled = False
    repeat: SiteDict | None = None
    f = frame
    while f is not None:
        kind = code_kind(f.f_code)
        if kind == USER:
            here = frame_site(f)
            if repeat is not None and _same_function(here, repeat):
                repeat = None  # the compiled frame itself: already in the stack
            else:
                repeat = None
                if site is None:
                    site = here
                stack.append(format_frame(here))
                if len(stack) > depth:
                    break
        elif kind >= GENERATED and site is None and not compiled:
            compiled = True
            inner = [s for s in generated_frames(f, kind) if is_user_site(s)]
            for s in inner:
                if site is None:
                    site = s
                stack.append(format_frame(s))
            if inner:
                repeat = inner[-1]
            if len(stack) > depth:
                break
        f = f.f_back
    return site, stack, compiled


def caller_site(skip: int = 1, *, depth: int = 0) -> tuple[SiteDict | None, list[str], bool]:
    """:func:`user_site` starting ``skip`` frames above the caller."""
    return user_site(sys._getframe(skip + 1), depth=depth)


def summary_sites(frames: Sequence[FrameSummary]) -> list[SiteDict]:
    """``traceback.FrameSummary`` objects (outermost first) -> site dicts innermost first,
    qualified names resolved from the source (:func:`source_map.qualname_at`)."""
    from laya_tui.families.explain.source_map import qualname_at

    out: list[SiteDict] = []
    for fs in reversed(frames):
        name = plain_name(str(fs.name))
        out.append({"file": fs.filename, "line": fs.lineno,
                    "func": qualname_at(fs.filename, fs.lineno, name)})
    return out
