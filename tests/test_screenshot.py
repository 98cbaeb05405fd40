"""The palette's Screenshot (issue 46): Textual's default ``~/Downloads`` is created when
missing, else the workspace is used; the notice names the file written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from laya_tui.cli.show import build_saved_app, source_line

REPORT = Path(__file__).parent / "fixtures/recorded/env_report.json"


async def _shoot(monkeypatch, home: Path, workspace: Path) -> tuple[list[Path], str]:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(workspace / "no-config"))
    report = json.loads(REPORT.read_text())
    app = build_saved_app(report, label=source_line(report, REPORT.name),
                          workspace=str(workspace), path=REPORT.name)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.settled()
        app.action_screenshot()
        for _ in range(50):
            await pilot.pause(0.05)
            notes = [str(n.message) for n in app._notifications]
            if any("screenshot" in n.lower() for n in notes):
                break
    return sorted(workspace.rglob("*.svg")) + sorted(home.rglob("*.svg")), "\n".join(notes)


@pytest.mark.asyncio
async def test_screenshot_creates_downloads(monkeypatch, tmp_path: Path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    files, notes = await _shoot(monkeypatch, home, ws)
    assert [f.parent for f in files] == [home / "Downloads"], notes
    assert "Saved screenshot to" in notes and str(files[0]) in notes
    assert files[0].read_text().startswith("<svg")


@pytest.mark.asyncio
async def test_screenshot_falls_back_to_the_workspace(monkeypatch, tmp_path: Path):
    home, ws = tmp_path / "home-is-a-file", tmp_path / "ws"
    home.write_text("")  # ~/Downloads cannot be made under it
    ws.mkdir()
    files, notes = await _shoot(monkeypatch, home, ws)
    assert [f.parent for f in files] == [ws], notes
    assert "Failed" not in notes and str(files[0]) in notes
