"""Call sites: the first Python frame outside torch's own internals, as ``file:line(func)``.

Frames are classified once per code object (a dict lookup afterwards), so walking the stack
of an intercepted op costs a few pointer hops. Internal: the torch package (functorch and
Inductor included), torch_rbln, the standard library, transformers' decorator plumbing
(``transformers/utils/``) and this package. Generated code (Inductor's output modules, FX
graph modules) is internal too but flagged, so an op called from compiled code is known as
such. transformers' modeling files are model code.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType
from typing import Any

USER, INTERNAL, GENERATED, INDUCTOR = 0, 1, 2, 3

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
_kinds: dict[CodeType, int] = {}
_roots: list[str] | None = None


def _internal_roots() -> list[str]:
    global _roots
    if _roots is None:
        roots = [_HERE]
        for name in ("torch", "torch_rbln", "functorch"):
            mod = sys.modules.get(name)
            path = getattr(mod, "__file__", None)
            if path:
                roots.append(os.path.dirname(os.path.abspath(path)) + os.sep)
        tf = sys.modules.get("transformers")
        if tf is not None and getattr(tf, "__file__", None):
            roots.append(os.path.join(os.path.dirname(os.path.abspath(tf.__file__)), "utils")
                         + os.sep)
        if "torch" in sys.modules:  # only then is the list complete; retry later otherwise
            _roots = roots
        return roots
    return _roots


def classify_file(filename: str) -> int:
    """USER, INTERNAL, GENERATED (FX graph code) or INDUCTOR (Inductor output code)."""
    if filename.startswith("<"):
        # "<eval_with_key>.3" (FX graph modules), "<string>", "<frozen ...>"
        return GENERATED if "eval_with_key" in filename else INTERNAL
    if "torchinductor" in filename:
        return INDUCTOR
    for root in _internal_roots():
        if filename.startswith(root):
            return INTERNAL
    if filename.startswith(_STDLIB) and "site-packages" not in filename:
        return INTERNAL
    if not os.path.isabs(filename):
        real = os.path.abspath(filename)
        if real != filename:
            return classify_file(real)
    return USER


def code_kind(code: CodeType) -> int:
    """Cached :func:`classify_file` per code object."""
    kind = _kinds.get(code)
    if kind is None:
        kind = _kinds[code] = classify_file(code.co_filename)
    return kind


def frame_site(frame: FrameType) -> dict[str, Any]:
    """``{"file", "line", "func"}`` of a frame."""
    code = frame.f_code
    return {"file": code.co_filename, "line": frame.f_lineno, "func": code.co_name}


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


def format_frame(site: dict[str, Any]) -> str:
    """``file:line(func)`` with a short path."""
    text = short_path(str(site.get("file", "")))
    if site.get("line") is not None:
        text += f":{site['line']}"
    if site.get("func"):
        text += f"({site['func']})"
    return text


def user_site(frame: FrameType | None, *, depth: int = 0
              ) -> tuple[dict[str, Any] | None, list[str], bool]:
    """Walk outward from ``frame``: ``(site, stack, compiled)``.

    ``site`` is the first user frame; ``stack`` holds it and up to ``depth`` more user frames
    as ``file:line(func)`` strings (outermost last); ``compiled`` says whether generated code
    (Inductor output, an FX graph) was on the way, i.e. the op ran inside compiled code.
    """
    site = None
    stack: list[str] = []
    compiled = False
    f = frame
    while f is not None:
        kind = code_kind(f.f_code)
        if kind == USER:
            here = frame_site(f)
            if site is None:
                site = here
            stack.append(format_frame(here))
            if len(stack) > depth:
                break
        elif kind >= GENERATED and site is None:
            compiled = True
        f = f.f_back
    return site, stack, compiled


def caller_site(skip: int = 1, *, depth: int = 0) -> tuple[dict[str, Any] | None, list[str], bool]:
    """:func:`user_site` starting ``skip`` frames above the caller."""
    return user_site(sys._getframe(skip + 1), depth=depth)
