"""Helpers shared by the TUI tests: the recorded demo fixture and app builders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from laya_tui.tui.app import LayaApp
from laya_tui.tui.factory import build_app

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
DEMO_REPORT = RECORDED / "demo_report.json"
DEMO_WS = RECORDED / "demo_ws"
#: A real ``laya-tui --headless --json --only 'tilelang/*'`` run (record.py tilelang).
TILELANG_REPORT = RECORDED / "tilelang_report.json"
REPO = RECORDED.parents[2]
SIZE = (160, 45)


def recorded_app(tmp_path: Path | None = None, report: Path = DEMO_REPORT,
                 workspace: str = str(DEMO_WS), **kwargs: Any) -> LayaApp:
    """The real app fed a recorded report (no subprocess, no clock)."""
    export = str(tmp_path / "report.json") if tmp_path is not None else None
    return build_app(recorded=report, workspace=workspace, export_path=export, **kwargs)


class MessageLog:
    """A ``message_hook`` that keeps every message, queryable by type name."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    def __call__(self, message: Any) -> None:
        self.messages.append(message)

    def of(self, name: str) -> list[Any]:
        return [m for m in self.messages if type(m).__name__ == name]


def screen_lines(app: LayaApp) -> list[str]:
    """What the terminal shows now, line by line (the current screen as composited)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def screen_text(app: LayaApp) -> str:
    return "\n".join(screen_lines(app))
