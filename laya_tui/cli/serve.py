"""``laya-tui serve [--host H] [--port P] [ARGS...]``: the dashboard in a browser.

textual-serve runs ``laya-tui ARGS`` (a live run, ``show REPORT``, ``--watch``...) once per
browser tab. The dashboard can start runs and read the workspace, and every local user of
a shared host can reach the loopback: so it binds 127.0.0.1 unless ``--host`` says
otherwise (with a warning), and every page and websocket needs the random token printed in
the URL; a request without it gets 403. Only argparse and the standard library at import
time; textual-serve (the ``[serve]`` extra) is imported when serving.
"""

from __future__ import annotations

import argparse
import hmac
import os
import secrets
import shlex
import socket
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler
    from textual_serve.server import Server

from laya_tui.core.errors import EXIT_OK, EXIT_USAGE

LOOPBACK = "127.0.0.1"
#: Set in the served command's environment: the dashboard runs without a terminal there.
SERVED_ENV = "LAYA_TUI_SERVED"


def served() -> bool:
    """True inside a command ``laya-tui serve`` runs (its terminal is the browser's)."""
    return os.environ.get(SERVED_ENV) == "1"


def free_port(host: str = LOOPBACK) -> int:
    """A port nothing listens on now (for tests and ``--port 0``)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def served_command(args: list[str]) -> str:
    """The shell command textual-serve runs per tab: this Python's laya-tui with ARGS."""
    return shlex.join([sys.executable, "-m", "laya_tui", *args])


def make_server(command: str, host: str, port: int, token: str) -> Server:
    """A textual-serve Server whose pages and websocket need ``?token=TOKEN``."""
    import asyncio
    import signal

    import aiohttp_jinja2
    from aiohttp import web
    from textual_serve.server import Server

    def allowed(request: web.Request) -> bool:
        # pages: ?token=; the websocket: /ws/TOKEN (the page's script appends its own query)
        given = request.query.get("token") or request.match_info.get("token", "")
        return hmac.compare_digest(given.encode(), token.encode())

    class TokenServer(Server):
        async def _make_app(self) -> web.Application:
            @web.middleware
            async def need_token(request: web.Request, handler: Handler) -> web.StreamResponse:
                # static files are textual-serve's own JS/CSS; downloads have random keys
                if request.path.startswith(("/static/", "/download/")) or allowed(request):
                    return await handler(request)
                return web.Response(status=403, text="403: laya-tui serve needs the token "
                                    "of the URL it printed\n")

            app = await super()._make_app()
            app.router.add_get("/ws/{token}", self.handle_websocket)
            app.middlewares.append(need_token)
            return app

        async def handle_index(self, request: web.Request) -> web.Response:
            base = f"{request.scheme}://{request.host}"  # the tab's own host (ssh -L)
            ws = ("wss" if request.scheme == "https" else "ws") + f"://{request.host}/ws"
            context = {
                "font_size": 16, "ping_url": "",
                "app_websocket_url": f"{ws}/{token}",
                "config": {"static": {"url": f"{base}/static/"}},
                "application": {"name": "laya-tui"},
            }
            return aiohttp_jinja2.render_template("app_index.html", request, context)

        async def on_startup(self, app: web.Application) -> None:
            pass  # runs before the socket listens: the address is announced by serve()

        def initialize_logging(self) -> None:  # aiohttp's access log would print the token
            pass

        def serve(self, debug: bool = False) -> None:
            """textual-serve's serve, but the URL is printed by aiohttp's ``print`` hook,
            which runs once every site listens: a client that reads the URL can connect."""
            self.debug = debug
            loop = asyncio.new_event_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            web.run_app(self._make_app(), host=self.host, port=self.port,
                        handle_signals=False, loop=loop, print=lambda *_: announce())

    def announce() -> None:
        print(f"laya-tui serve: open http://{_url_host(host)}:{port}/?token={token}",
              file=sys.stderr, flush=True)
        print("laya-tui serve: Ctrl+C stops it", file=sys.stderr, flush=True)

    return TokenServer(command, host=host, port=port, title="laya-tui")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def build_parser() -> argparse.ArgumentParser:
    from laya_tui.cli.main import SubcommandParser

    ap = SubcommandParser(
        prog="laya-tui serve",
        description="Serve the dashboard to a browser (textual-serve). Further arguments go "
        "to laya-tui: e.g. 'laya-tui serve show report.json', 'laya-tui serve --watch'. From "
        "a laptop: ssh -L 8000:127.0.0.1:8000 HOST, then open the printed URL.")
    ap.add_argument("--host", default=LOOPBACK,
                    help="address to bind (default 127.0.0.1; anything else is reachable by "
                    "others on that network, token or not: prefer ssh -L)")
    ap.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: a free one)")
    return ap


def main(argv: list[str]) -> int:
    """Entry point of ``laya-tui serve``."""
    args, rest = build_parser().parse_known_args(argv)
    if rest and rest[0] == "--":
        rest = rest[1:]
    if rest and rest[0] == "serve":
        print("laya-tui serve: error: serve cannot serve itself", file=sys.stderr)
        return EXIT_USAGE
    if not 0 <= args.port <= 65535:
        print(f"laya-tui serve: error: --port {args.port} is not a port", file=sys.stderr)
        return EXIT_USAGE
    try:
        import textual_serve  # noqa: F401
    except ImportError:
        print("laya-tui serve: error: needs textual-serve: pip install 'laya-tui[serve]'",
              file=sys.stderr)
        return EXIT_USAGE
    if args.host not in (LOOPBACK, "localhost", "::1"):
        print(f"laya-tui serve: warning: binding {args.host}: anyone who can reach it and "
              "learns the token can run probes and read this workspace; prefer the default "
              "127.0.0.1 with ssh -L", file=sys.stderr)
    port = args.port or free_port(args.host)
    token = secrets.token_urlsafe(24)
    os.environ[SERVED_ENV] = "1"
    server = make_server(served_command(rest), args.host, port, token)
    try:
        server.serve()
    except OSError as exc:
        print(f"laya-tui serve: error: cannot listen on {args.host}:{port}: {exc.strerror}",
              file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
