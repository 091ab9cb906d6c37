"""Listening sockets of the servers, bound before the server starts, and serving an ASGI app
on one until Ctrl-C.

:func:`bind` refuses a port in use at once, as ``PORT_IN_USE`` naming the option the user
set (``--port``, ``--console``), never the server library's own error; :func:`serve` runs
uvicorn on the socket and ends within about ``GRACE_S`` of Ctrl-C (open connections are
given that long to finish, then closed).
"""

from __future__ import annotations

import errno
import signal
import socket
from typing import Any

from harness_bt.errors import DefinitionError

__all__ = ["GRACE_S", "bind", "serve"]

#: how long open connections may take to finish once a server is asked to stop
GRACE_S = 0.25


def bind(host: str, port: int, *, option: str) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free one); a port in use or an
    address that cannot be bound is a :class:`DefinitionError` naming ``option``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise DefinitionError("PORT_IN_USE", f"{option} {port}: port {port} on {host} is "
                                  "in use by another program", where=option,
                                  fix=f"pick another port with {option}, or 0 for any free "
                                  "one") from None
        raise DefinitionError("CANNOT_SERVE", f"{option} {port}: cannot listen on {host}:{port} "
                              f"({exc.strerror})", where=option,
                              fix="pick another port or address") from None
    return sock


def serve(app: Any, sock: socket.socket, *, log_level: str = "warning", **config: Any) -> None:
    """Serve ``app`` on ``sock`` until Ctrl-C (then close the socket and end as an
    interrupt: :class:`KeyboardInterrupt`)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, access_log=False,
                                           timeout_graceful_shutdown=GRACE_S,  # type: ignore[arg-type]
                                           **config))  # (uvicorn waits a float of seconds)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    # uvicorn re-raises the signal once it has shut down, which can land in asyncio's own
    # handler and vanish: end as an interrupt either way
    if signal.SIGINT in getattr(server, "_captured_signals", ()):
        raise KeyboardInterrupt
