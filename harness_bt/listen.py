"""Listening sockets of the servers, bound before the server starts, and serving until
Ctrl-C: the one contract every ``harness ... serve`` command keeps.

:func:`bind` refuses a port in use at once, as ``PORT_IN_USE`` naming the option the user
set (``--port``, ``--console``), never the server library's own error; :func:`serve` runs
uvicorn on the socket and ends within about ``GRACE_S`` of Ctrl-C (open connections are
given that long to finish, then closed); :func:`wait_until_interrupted` does the same for a
server that runs in threads of its own (the policy server, the ZeroMQ runtime and broker):
it waits for Ctrl-C or SIGTERM, or for the server to end, then stops it.

Either way Ctrl-C ends as :class:`KeyboardInterrupt`, which the command line turns into exit
status 130 (as a shell reports an interrupted program); SIGTERM, an orderly request to stop,
ends normally (status 0).
"""

from __future__ import annotations

import errno
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from harness_bt.errors import DefinitionError

__all__ = ["GRACE_S", "POLL_S", "bind", "serve", "wait_until_interrupted"]

#: how long open connections may take to finish once a server is asked to stop
GRACE_S = 0.25
#: how often :func:`wait_until_interrupted` asks whether the server has ended by itself
POLL_S = 0.05


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
    # uvicorn stops on SIGTERM, then raises it again under the handler it found: ours ends
    # the process normally, as wait_until_interrupted does (the main thread only has one)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda *_: None) if main else None
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        if main:
            signal.signal(signal.SIGTERM, previous)
    # uvicorn re-raises the signal once it has shut down, which can land in asyncio's own
    # handler and vanish: end as an interrupt either way
    if signal.SIGINT in getattr(server, "_captured_signals", ()):
        raise KeyboardInterrupt


def wait_until_interrupted(stop: Callable[[], None], *,
                           ended: Callable[[], bool] = lambda: False,
                           announce: Callable[[], None] = lambda: None) -> None:
    """In the main thread: take Ctrl-C and SIGTERM, ``announce()`` (e.g. print the ready
    line: a signal sent as soon as it is read is then handled), wait until a signal or
    ``ended()`` (the server ended by itself), then call ``stop()`` (also when announcing or
    waiting fails) and put the signal handlers back. Ctrl-C then ends as
    :class:`KeyboardInterrupt`; SIGTERM and ``ended()`` return."""
    received: list[int] = []
    woken = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        received.append(signum)
        woken.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        announce()
        while not woken.wait(POLL_S) and not ended():
            pass
    finally:
        try:
            stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if signal.SIGINT in received:
        raise KeyboardInterrupt
