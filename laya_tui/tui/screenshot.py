"""The palette's Screenshot: Textual saves to ``~/Downloads``, and fails ("Failed to save
screenshot") where that folder does not exist (a server, a container). Here the folder is
created, or the workspace is used when it cannot be, and the notice names the file; in a
browser (``laya-tui serve``) the browser receives it as before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol


def screenshot_folder(workspace: str | None) -> Path:
    """``~/Downloads`` (made when missing), else the workspace, else the current folder."""
    from platformdirs import user_downloads_path

    try:
        folder = Path(user_downloads_path())
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    return Path(workspace or os.getcwd()).resolve()


class _ScreenshotApp(Protocol):
    """What the mixin uses of the Textual App it is mixed into."""

    @property
    def is_web(self) -> bool: ...
    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None: ...


class SavesScreenshots:
    """Mixin for the App: ``action_screenshot`` into :func:`screenshot_folder`."""

    def action_screenshot(self: _ScreenshotApp, filename: str | None = None,
                          path: str | None = None) -> None:
        if path is None and not self.is_web:
            path = str(screenshot_folder(getattr(self, "workspace", None)))
        self.deliver_screenshot(filename, path)
