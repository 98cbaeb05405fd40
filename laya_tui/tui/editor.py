"""Open a call site in ``$EDITOR`` at its line."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:

    from laya_tui.tui.app import LayaApp
    from laya_tui.tui.model import SignalRow

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


def open_site(app: LayaApp, row: SignalRow | None, workspace: str | None) -> None:
    """Open a signal row's call site in the editor at its line, the app suspended meanwhile
    (a failing TileLang cell: the IR its failing pass received)."""
    from textual.app import SuspendNotSupported

    from laya_tui.tui.widgets.detail import resolve_path, tilelang_editor_target

    site = row.sig.site if row is not None else None
    ir = tilelang_editor_target(row.sig.detail or {}) if row is not None else None
    if ir is not None:
        site = {"file": ir[0], "line": ir[1]}
    if not isinstance(site, Mapping) or not site.get("file"):
        app.notify("this signal has no call site", severity="warning")
        return
    path = resolve_path(str(site["file"]), workspace)
    cmd = editor_command(default_editor() or "vi", path, site.get("line"))
    try:
        with app.suspend():
            subprocess.run(cmd, check=False)
    except SuspendNotSupported:
        app.notify(f"cannot hand the terminal over here; run: {shlex.join(cmd)}",
                   severity="warning")
    except OSError as exc:
        app.notify(f"cannot start the editor {cmd[0]!r}: {exc}", severity="error")
