"""A real headless Chromium driven over the DevTools protocol on a pipe (no websocket, no
Playwright): open a page, evaluate script, click like a user (mouse events at an element's
centre), take a screenshot. Standard library only.

Chromium is found as ``chromium``/``chromium-browser``/``google-chrome`` or ``$LAYA_CHROMIUM``;
on Debian/Ubuntu: ``apt-get install -y chromium``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

INSTALL_HINT = "apt-get install -y chromium (or set LAYA_CHROMIUM to a Chrome binary)"


def find_chromium() -> str | None:
    """The browser binary, or None."""
    env = os.environ.get("LAYA_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _pipe_fds(read_end: int, write_end: int) -> None:
    """In the child: its command pipe on fd 3, its reply pipe on fd 4."""
    a, b = os.dup(read_end), os.dup(write_end)
    os.dup2(a, 3)
    os.dup2(b, 4)


class Browser:
    """One headless Chromium with one page, spoken to over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str, width: int = 1400, height: int = 1000) -> None:
        self._profile = tempfile.mkdtemp(prefix="laya-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The browser reads commands on fd 3 and writes replies on fd 4.
        self.proc = subprocess.Popen(
            [binary, "--headless", "--remote-debugging-pipe", "--no-sandbox",
             "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: _pipe_fds(to_child_r, from_child_w))
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    def _read(self, timeout: float) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while b"\0" not in self._buf:
            if time.monotonic() > end:
                raise TimeoutError("no reply from Chromium")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method: str, *, session: bool = False, timeout: float = 30.0,
             **params: Any) -> dict[str, Any]:
        """Send one command; return its result (events seen meanwhile are kept)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read(timeout)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, url: str, timeout: float = 30.0) -> float:
        """Navigate and wait for the load event; returns the seconds it took."""
        self.events.clear()
        t0 = time.perf_counter()
        self.call("Page.navigate", session=True, url=url)
        end = time.monotonic() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > end:
                raise TimeoutError(f"{url} did not load")
            self.events.append(self._read(timeout))
        return time.perf_counter() - t0

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (thrown errors raise)."""
        res = self.call("Runtime.evaluate", session=True, expression=expression,
                        returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"page script error: {res['exceptionDetails']}")
        return res["result"].get("value")

    def console_errors(self) -> list[str]:
        """Uncaught exceptions the page threw so far."""
        return [json.dumps(e["params"])[:500] for e in self.events
                if e.get("method") == "Runtime.exceptionThrown"]

    def click(self, selector: str) -> None:
        """Scroll ``selector`` into view and click its centre with the mouse."""
        box = self.eval(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; e.scrollIntoView({{block: "center"}});
            const r = e.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
        if box is None:
            raise LookupError(f"no element matches {selector}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1],
                      button="left" if kind != "mouseMoved" else "none", clickCount=1)

    def screenshot(self, path: Path, full_page: bool = False) -> None:
        """A PNG of the viewport (or the whole page)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5.0)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
