"""Running an ASGI app with uvicorn on a thread, for tests, benchmarks and embedding.

:class:`ServerThread` binds its own socket (port 0 picks a free one), so the URL is known before
the first request, and stops the server (``should_exit``) and joins the thread on exit.

The socket is made with ``proto=IPPROTO_TCP``: asyncio disables Nagle's algorithm only on
sockets that say so, and with Nagle on a small answer (headers and body written apart) waits
for the client's delayed ACK, about 40 ms on Linux.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn

from harness_bt.errors import BridgeError

__all__ = ["ServerThread"]


class ServerThread:
    """``with ServerThread(app) as server: httpx.get(server.url + "/docs")``."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0,
                 log_level: str = "warning", startup_timeout_s: float = 20.0) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.log_level = log_level
        self.startup_timeout_s = startup_timeout_s
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServerThread:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((self.host, self.port))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level=self.log_level, lifespan="on",
                                timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name=f"uvicorn-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise BridgeError("SERVER_NOT_STARTED", f"the server on {self.url} did not "
                                  f"start within {self.startup_timeout_s:g} s",
                                  where=self.url, fix="see its log for why")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._sock is not None:
            self._sock.close()
        self._server = self._thread = self._sock = None

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
