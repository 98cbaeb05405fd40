"""What kind of code a frame is (the user's, a library's or laya-tui's own, FX graph code,
Inductor output code) and the name of the function a Dynamo resume function stands for.
Shared by :mod:`laya_tui.families.explain.sites` and ``source_map``; standard library only.
"""

from __future__ import annotations

import re

#: Frame kinds, as ``sites.classify_file`` tells them.
USER, INTERNAL, GENERATED, INDUCTOR = 0, 1, 2, 3
#: Dynamo names a resume function ``torch_dynamo_resume_in_<fn>_at_<line>``.
_RESUME = re.compile(r"torch_dynamo_resume_in_(\w+?)_at_\d+")


def plain_name(name: str) -> str:
    """A Dynamo resume function's name -> the function it resumes (others unchanged)."""
    while "torch_dynamo_resume_in_" in name:
        new = _RESUME.sub(r"\1", name)
        if new == name:
            break
        name = new
    return name
