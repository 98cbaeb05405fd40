"""Open a call site in ``$EDITOR`` at its line."""

from __future__ import annotations

import os
import shlex

#: Editors that take ``--goto FILE:LINE``.
_GOTO = {"code", "code-insiders", "codium", "cursor"}
#: Editors that take ``FILE:LINE``.
_COLON = {"subl", "zed", "idea", "pycharm", "charm"}


def editor_command(editor: str, path: str, line: int | None) -> list[str]:
    """The argv that opens ``path`` at ``line`` with ``editor`` (a ``$EDITOR`` string)."""
    argv = shlex.split(editor) or ["vi"]
    name = os.path.basename(argv[0])
    if not line:
        return [*argv, path]
    if name in _GOTO:
        return [*argv, "--goto", f"{path}:{line}"]
    if name in _COLON:
        return [*argv, f"{path}:{line}"]
    return [*argv, f"+{line}", path]  # vi, vim, nvim, nano, emacs, micro, hx, kak...


def default_editor() -> str | None:
    """``$VISUAL``, then ``$EDITOR``; None when neither is set."""
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or None
