"""``laya-tui serve`` in a real browser (issue 46): Playwright drives Debian's Chromium
(tests/_browser.py finds it; Playwright's own browser download is never used). The server
binds only the loopback on a free port and is stopped at the end.

The page draws the terminal on a canvas (xterm.js), so what the browser shows is read from
the frames its websocket received: the dashboard's output, ANSI stripped."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from laya_tui.cli.serve import free_port
from tests._browser import INSTALL_HINT, find_chromium

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "tests/fixtures/recorded/tilelang_report.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")

playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright")


def start_serve(*args: str) -> tuple[subprocess.Popen[str], str, float]:
    """``laya-tui serve`` on a free loopback port; (process, printed URL, start time)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "laya_tui", "serve", "--port",
                             str(free_port()), *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if m := re.search(r"open (http://127\.0\.0\.1:\d+/\?token=\S+)", line):
            return proc, m.group(1), t0
    proc.wait(timeout=10)
    raise AssertionError(f"serve printed no URL (exit {proc.returncode})")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def served_show() -> Iterator[tuple[str, float, Any]]:
    proc, url, t0 = start_serve("show", str(REPORT))
    children: list[psutil.Process] = []  # the tab's dashboard, filled by the test
    try:
        yield url, t0, lambda: children.extend(psutil.Process(proc.pid).children(True))
    finally:
        stop(proc)
    assert proc.returncode is not None
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"left running after serve stopped: {alive}"


class Screen:
    """The text the page's websocket received (the terminal output)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.chunks: list[str] = []
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload: object) -> None:
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
        self.chunks.append(ANSI.sub("", text))

    def mark(self) -> int:
        return len(self.chunks)

    def since(self, mark: int) -> str:
        return "".join(self.chunks[mark:])

    def wait_for(self, text: str, mark: int = 0, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while text not in self.since(mark):
            if time.monotonic() > end:
                raise AssertionError(f"{text!r} never reached the browser:\n"
                                     f"{self.since(mark)[-2000:]}")
            self.page.wait_for_timeout(50)  # lets Playwright deliver the frames

    def settle(self, quiet: float = 0.4, timeout: float = 10.0) -> None:
        """Wait until no frame has arrived for ``quiet`` seconds: the app has drawn what the
        last key did (a key pressed while a filter is still being applied lands on the
        list as it was, and the test would race the app, not test it)."""
        end = time.monotonic() + timeout
        seen, since = len(self.chunks), time.monotonic()
        while time.monotonic() < end:
            self.page.wait_for_timeout(50)
            if len(self.chunks) != seen:
                seen, since = len(self.chunks), time.monotonic()
            elif time.monotonic() - since >= quiet:
                return


def test_served_dashboard_in_chromium(served_show):
    url, t0, note_children = served_show
    chromium = find_chromium()
    if chromium is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    base = url.split("?")[0]
    for bare in (base, base + "ws", base + "?token=wrong"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bare, timeout=10)
        assert refused.value.code == 403, bare
    with urllib.request.urlopen(url, timeout=10) as ok:
        assert ok.status == 200
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            screen = Screen(page)
            page.goto(url)
            screen.wait_for("add_ln_kernel")
            note_children()
            print(f"serve: first frame in Chromium {time.perf_counter() - t0:.2f}s after start")
            page.locator("body").click()
            mark = screen.mark()
            page.keyboard.press("f")  # only failing cells: the first one is selected
            screen.wait_for("add_ln_kernel[c,fp32,gpu]", mark)
            screen.settle()
            mark = screen.mark()
            page.keyboard.press("ArrowDown")  # the selection moves to the second
            screen.wait_for("add_ln_kernel[c,fp16,gpu]", mark)
            screen.settle()
            mark = screen.mark()
            page.keyboard.press("Enter")  # its diagnostic opens: the lowering's own words
            screen.wait_for("CPU reduce only supports local src", mark)
            assert "add_ln_kernel[c,fp16,gpu]" in screen.since(mark)
        finally:
            browser.close()


SLOW_LISTEN = """
import asyncio, sys
from aiohttp import web
start = web.TCPSite.start
async def slow_start(self):  # the socket listens a second late: the URL must wait for it
    await asyncio.sleep(1.0)
    await start(self)
web.TCPSite.start = slow_start
from laya_tui.cli.serve import main
sys.exit(main(sys.argv[1:]))
"""


def test_printed_url_is_listening():
    """The URL is printed only once its socket accepts: a client that connects at once
    is not refused, even when aiohttp is slow to listen (printed before listening, the
    first connect here is refused for a second)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SLOW_LISTEN, "--port", str(port), "show",
                             str(REPORT)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if f"open http://127.0.0.1:{port}/" in line:
                break
        else:
            raise AssertionError(f"serve printed no URL (exit {proc.wait(timeout=10)})")
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        stop(proc)


def test_serve_flags_are_checked_and_other_hosts_warn(capsys, monkeypatch):
    from laya_tui.cli import serve

    assert serve.main(["--port", "70000"]) == 2
    assert "not a port" in capsys.readouterr().err
    assert serve.main(["serve"]) == 2
    assert "cannot serve itself" in capsys.readouterr().err
    served: list[tuple[str, str, int]] = []

    class Fake:
        def __init__(self, command: str, host: str, port: int) -> None:
            served.append((command, host, port))

        def serve(self) -> None:
            pass

    monkeypatch.setattr(serve, "make_server", lambda c, h, p, t: Fake(c, h, p))
    monkeypatch.setenv(serve.SERVED_ENV, "0")  # main sets it; undone after the test
    assert serve.main(["--port", "0", "show", "r.json"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert serve.main(["--host", "0.0.0.0", "--port", "8123", "--watch"]) == 0
    assert "warning: binding 0.0.0.0" in capsys.readouterr().err
    (c1, h1, p1), (c2, h2, p2) = served
    assert (h1, h2, p2) == ("127.0.0.1", "0.0.0.0", 8123) and p1 > 0
    assert c1.endswith("-m laya_tui show r.json") and c2.endswith("-m laya_tui --watch")
