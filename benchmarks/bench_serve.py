"""``laya-tui serve``: time from start to the first dashboard frame in Chromium, beside the
terminal dashboard's first paint (bench_tui.first_paint), interleaved, same workspace.

Usage: .venv/bin/python benchmarks/bench_serve.py [--runs N]   (figures: results/serve-46.txt)

Serve's clock starts at exec of ``laya-tui serve``; it includes the server's start, a
headless Chromium's launch (Playwright driving Debian's chromium), the page and its
script, and the dashboard process textual-serve starts for the tab; the frame counts
when the websocket delivered "all probes" and "Re-run" (the same marks as the pty's).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_tui import DEMO_WS, first_paint  # noqa: E402
from laya_tui.cli.serve import free_port  # noqa: E402
from tests._browser import find_chromium  # noqa: E402


def serve_first_frame(ws: Path, chromium: str) -> tuple[float, float]:
    """(seconds to the printed URL, seconds to the first frame in the browser)."""
    from playwright.sync_api import sync_playwright

    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "laya_tui", "serve", "--port",
                             str(free_port()), "--workspace", str(ws), "--no-cache",
                             "--cache-dir", str(ws / ".cache")], cwd=ws,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        url = next(m.group(1) for line in proc.stderr
                   if (m := re.search(r"open (http\S+)", line)))
        t_url = time.perf_counter() - t0
        seen: list[str] = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("websocket", lambda ws_: ws_.on("framereceived", lambda p: seen.append(
                p.decode("utf-8", "replace") if isinstance(p, bytes) else p)))
            page.goto(url)
            while not ("all probes" in "".join(seen) and "Re-run" in "".join(seen)):
                page.wait_for_timeout(5)
                if time.perf_counter() - t0 > 60:
                    raise RuntimeError("no frame within 60 s")
            frame = time.perf_counter() - t0
            browser.close()
        return t_url, frame
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    chromium = find_chromium()
    if chromium is None:
        sys.exit("needs chromium (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(DEMO_WS, ws)
        pty, urls, frames = [], [], []
        for _ in range(args.runs):  # interleaved: both see the same machine load
            pty.append(first_paint(ws)[0])
            u, f = serve_first_frame(ws, chromium)
            urls.append(u)
            frames.append(f)
    print(f"terminal first paint (pty 160x45), median of {args.runs}: "
          f"{statistics.median(pty):.3f} s (runs {', '.join(f'{x:.3f}' for x in pty)})")
    print(f"serve: URL printed, median {statistics.median(urls):.3f} s; first frame in "
          f"Chromium, median {statistics.median(frames):.3f} s "
          f"(runs {', '.join(f'{x:.3f}' for x in frames)}), "
          f"{statistics.median(frames) / statistics.median(pty):.1f}x the terminal's")


if __name__ == "__main__":
    main()
