"""A server of the openpi WebSocket policy protocol, for any policy with an ``infer`` method.

The protocol (openpi's ``WebsocketPolicyServer``): a client opens a WebSocket; the server at
once sends its metadata (one binary msgpack map); each binary frame it then receives is an
observation map, answered by one binary action map. When the policy (or the request) fails,
the server sends the error as one *text* frame and closes the connection with code 1011; a
request over ``max_message_bytes`` is refused by the WebSocket layer (close code 1009). An
HTTP ``GET /healthz`` answers ``200 OK``. Every other connection is unaffected by a failing
one.

Each connection gets its own policy instance (``policy_factory()``), so a policy may keep
state across the requests of one connection; the server calls its ``close()`` (when it has
one) once the connection ends. ``infer`` runs in a worker thread, so a slow policy never
holds up the other connections' frames. Decoding is strict (:func:`~harness_bt.policy.wire.
unpack_map`): nothing is ever unpickled.

Connections and the bytes of observations in flight are capped (:mod:`policies.intake`):
past ``max_connections`` a connection is refused at its handshake (503); an observation that
finds no room within ``max_bytes_in_flight`` waits unread, then is refused with close 1013.

:class:`PolicyServer` runs in the foreground (:meth:`~PolicyServer.serve_forever`) or in a
thread of its own (:meth:`~PolicyServer.start`); :meth:`~PolicyServer.stop` closes every
connection, the listening socket, the worker threads and the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import http
import itertools
import logging
import math
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from harness_bt.errors import BridgeError, DefinitionError, HarnessError
from harness_bt.policy.wire import DEFAULT_MAX_BYTES, pack, unpack_map
from harness_bt.request_budget import Admission, RequestBudget
from policies.intake import Intake

__all__ = ["Policy", "PolicyFactory", "PolicyServer", "PolicyServerSettings"]

log = logging.getLogger(__name__)

#: how long a stopping server waits for each client to answer its close (Ctrl-C ends the
#: server within about this long, whatever the clients do)
CLOSE_TIMEOUT_S = 0.5
#: close code and reason after an error frame (as openpi's server sends them)
_INTERNAL_ERROR = 1011
_ERROR_REASON = "Internal server error. Traceback included in previous frame."


@runtime_checkable
class Policy(Protocol):
    """What the server serves: one observation map in, one action map out. A policy may
    raise; the client then gets the error as text and the connection closes."""

    def infer(self, observation: dict[str, Any]) -> Mapping[str, Any]: ...


#: Makes the policy instance of one connection.
PolicyFactory = Callable[[], Policy]


@dataclass(frozen=True)
class PolicyServerSettings:
    """Where a policy server listens and what it admits: ``host`` / ``port`` (0: any free
    port); ``max_message_bytes``: the largest observation frame; ``workers``: threads running
    ``infer``; ``max_connections``; ``max_bytes_in_flight``: observation bytes held at once
    (None: 4x ``max_message_bytes``); ``busy_wait_s``: how long an observation waits for room
    before it is refused; ``read_s``: how long a started frame may take to arrive."""

    host: str = "127.0.0.1"
    port: int = 0
    max_message_bytes: int = DEFAULT_MAX_BYTES
    workers: int = 4
    max_connections: int = 16
    max_bytes_in_flight: int | None = None
    busy_wait_s: float = 10.0
    read_s: float = 30.0

    def __post_init__(self) -> None:
        if not (isinstance(self.port, int) and 0 <= self.port <= 65535):
            raise DefinitionError("INVALID_OPTION", f"port {self.port!r} is not 0..65535",
                                  fix="use 0 for a free port, or e.g. 8000")
        if self.max_message_bytes < 1024:
            raise DefinitionError("INVALID_OPTION", f"max_message_bytes={self.max_message_bytes}"
                                  " is too small for any observation", fix="use e.g. 64 MiB")
        if self.bytes_in_flight < self.max_message_bytes:
            raise DefinitionError("INVALID_OPTION", f"max_bytes_in_flight="
                                  f"{self.bytes_in_flight} is less than one observation "
                                  f"(max_message_bytes={self.max_message_bytes})",
                                  fix="allow at least one observation in flight, e.g. 4x "
                                  "max_message_bytes")
        for name in ("workers", "max_connections"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise DefinitionError("INVALID_OPTION", f"{name}={value!r} is not a positive "
                                      "whole number", fix=f"use e.g. {name}="
                                      f"{getattr(PolicyServerSettings, name)}")
        for name in ("busy_wait_s", "read_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise DefinitionError("INVALID_OPTION", f"{name}={value!r} is not a positive "
                                      "number of seconds", fix=f"use e.g. {name}="
                                      f"{getattr(PolicyServerSettings, name)}")

    @property
    def bytes_in_flight(self) -> int:
        """The cap on observation bytes held at once."""
        return 4 * self.max_message_bytes if self.max_bytes_in_flight is None \
            else self.max_bytes_in_flight


class PolicyServer:
    """Serves ``policy_factory``'s policies on ``ws://host:port`` (``settings``: where and
    what it admits; port 0: a free port, see :attr:`port` once started). ``metadata`` is
    sent to every client on connect."""

    def __init__(self, policy_factory: PolicyFactory,
                 settings: PolicyServerSettings | None = None, *,
                 metadata: Mapping[str, Any] | None = None) -> None:
        if not callable(policy_factory):
            raise DefinitionError("INVALID_POLICY", f"policy_factory {policy_factory!r} is not "
                                  "callable", fix="pass a function or class making a policy")
        s = self.settings = settings or PolicyServerSettings()
        self.budget = RequestBudget(max_body_bytes=s.max_message_bytes,
                                    max_connections=s.max_connections,
                                    max_bytes_in_flight=s.bytes_in_flight)
        self.admission = Admission(self.budget, server="the policy server")
        self.busy_wait_s = s.busy_wait_s
        self.read_s = s.read_s
        self.intake: Intake | None = None
        self.policy_factory = policy_factory
        self.host = s.host
        self.requested_port = s.port
        self.metadata = dict(metadata or {})
        self._metadata_frame = pack(self.metadata)
        self.max_message_bytes = s.max_message_bytes
        self.workers = s.workers
        self.port: int | None = None
        self.connections = 0
        self.requests = 0
        self.failures = 0
        self._ids = itertools.count(1)
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = False
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """``ws://host:port`` once started."""
        if self.port is None:
            raise BridgeError("POLICY_SERVER_NOT_STARTED", "the policy server has no port yet",
                              fix="call start() (or serve_forever()) first")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server listens (started and not stopped, nor failed)."""
        thread = self._thread
        return self._ready.is_set() and self.port is not None and not self._stop_requested \
            and (thread is None or thread.is_alive())

    # ------------------------------------------------------------------ life cycle

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`stop` is called (from another thread or a
        signal handler)."""
        asyncio.run(self._main())
        if self._failure is not None:
            self.wait_listening(0)  # raises, naming the failure

    def start(self, timeout_s: float = 30.0) -> int:
        """Serve in a thread of its own; returns the bound port once it listens."""
        with self._lock:
            if self._thread is not None:
                raise BridgeError("POLICY_SERVER_STARTED", "the policy server is already "
                                  "started", fix="make a new PolicyServer for a second one")
            self._thread = threading.Thread(target=self._run_in_thread, name="policy-server",
                                            daemon=True)
            self._thread.start()
        try:
            return self.wait_listening(timeout_s)
        except BridgeError:
            self.stop()
            raise

    def wait_listening(self, timeout_s: float = 30.0) -> int:
        """Wait until the server listens (started by :meth:`start`, or by
        :meth:`serve_forever` in another thread); returns its port."""
        if not self._ready.wait(timeout_s) or self.port is None:
            failure = self._failure
            if isinstance(failure, OSError) and failure.errno == errno.EADDRINUSE:
                port = self.requested_port
                raise BridgeError("PORT_IN_USE", f"--port {port}: port {port} on {self.host} "
                                  "is in use by another program", where="--port",
                                  fix="pick another port with --port, or 0 for any free one"
                                  ) from failure
            raise BridgeError("POLICY_SERVER_FAILED", f"the policy server could not listen on "
                              f"{self.host}:{self.requested_port}: "
                              f"{failure or f'not listening after {timeout_s:g} s'}",
                              fix="choose another port (--port 0 picks a free one), or stop "
                                  "what listens there") from failure
        return self.port

    def _run_in_thread(self) -> None:
        with contextlib.suppress(BaseException):
            asyncio.run(self._main())

    def stop(self) -> None:
        """Close every connection and the listening socket, and wait for the server's
        threads to end. Idempotent."""
        with self._lock:
            self._stop_requested = True
            loop, stopping = self._loop, self._stopping
            if loop is not None and stopping is not None:
                with contextlib.suppress(RuntimeError):  # the loop has already ended
                    loop.call_soon_threadsafe(stopping.set)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(30)

    def __enter__(self) -> PolicyServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _main(self) -> None:
        executor = concurrent.futures.ThreadPoolExecutor(self.workers,
                                                         thread_name_prefix="policy-infer")
        try:
            with self._lock:
                self._loop = asyncio.get_running_loop()
                self._stopping = asyncio.Event()
                if self._stop_requested:
                    return
            self.intake = intake = Intake(self.admission, self.max_message_bytes,
                                          wait_s=self.busy_wait_s, read_s=self.read_s)
            try:
                server = await serve(
                    lambda ws: self._handle(ws, executor), self.host, self.requested_port,
                    compression=None, max_size=self.max_message_bytes, max_queue=4,
                    process_request=self._door, close_timeout=CLOSE_TIMEOUT_S)
            except OSError as exc:
                self._failure = exc
                return
            self.port = int(next(iter(server.sockets)).getsockname()[1])
            log.info("policy server listening on %s", self.url)
            self._ready.set()
            await self._stopping.wait()
            intake.release_all()
            await self._close(server)
        finally:
            self._ready.set()
            executor.shutdown(wait=True, cancel_futures=True)
            with self._lock:
                self._loop = None
                self._stopping = None

    @staticmethod
    async def _close(server: Server) -> None:
        server.close(close_connections=True)
        await server.wait_closed()

    # ------------------------------------------------------------------ one connection

    async def _handle(self, ws: ServerConnection,
                      executor: concurrent.futures.Executor) -> None:
        cid = next(self._ids)
        self.connections += 1
        peer = _address(ws)
        loop = asyncio.get_running_loop()
        requests = 0
        outcome = "ended"
        try:
            policy = await loop.run_in_executor(executor, self.policy_factory)
        except Exception as exc:
            log.exception("policy connection %d from %s: the policy could not be made", cid,
                          peer)
            await self._fail(ws, exc)
            return
        log.info("policy connection %d from %s opened", cid, peer)
        intake = self.intake
        assert intake is not None  # set before serving starts
        reader = intake.watch(ws)
        try:
            await ws.send(self._metadata_frame)
            while True:
                message = await ws.recv()
                intake.received(reader)
                try:
                    frame = await loop.run_in_executor(executor, self._answer, policy, message)
                    del message  # not held while this connection waits for its next one
                except Exception as exc:
                    self.failures += 1
                    outcome = f"failed on request {requests + 1}: {exc}"
                    log.warning("policy connection %d from %s %s", cid, peer, outcome,
                                exc_info=not isinstance(exc, HarnessError))
                    intake.answered(reader)  # read again: the client's close must get in
                    await self._fail(ws, exc)
                    return
                await ws.send(frame)
                intake.answered(reader)
                requests += 1
                self.requests += 1
        except ConnectionClosed as exc:
            if reader.refused:
                outcome = "refused an observation: no room in flight (1013)"
            elif exc.sent is not None and exc.sent.code == 1008:
                outcome = "closed: an observation did not arrive in time (1008)"
            elif (exc.rcvd is not None and exc.rcvd.code == 1009) or (
                    exc.sent is not None and exc.sent.code == 1009):
                outcome = f"refused an observation over {self.max_message_bytes} bytes (1009)"
            elif exc.rcvd is not None and exc.rcvd_then_sent is not False:
                outcome = f"closed by the client (code {exc.rcvd.code})"
            elif self._stop_requested:
                outcome = "closed by the server stopping"
            else:
                outcome = f"connection lost ({exc})"
        finally:
            intake.ended(reader)
            close = getattr(policy, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    log.exception("policy connection %d: the policy's close() failed", cid)
            log.info("policy connection %d from %s ended after %d requests: %s", cid, peer,
                     requests, outcome)

    def _answer(self, policy: Policy, message: str | bytes) -> bytes:
        """One request to its reply frame (in a worker thread: decoding, inference and
        encoding never hold up the event loop)."""
        started = time.monotonic()
        if isinstance(message, str):
            raise BridgeError("POLICY_PROTOCOL", "an observation came as a text frame, not "
                              "binary msgpack", fix="send each observation as one binary "
                              "msgpack frame (openpi_client's msgpack_numpy)")
        observation = unpack_map(message, "observation", max_bytes=self.max_message_bytes)
        action = policy.infer(observation)
        if not isinstance(action, Mapping):
            raise BridgeError("POLICY_PROTOCOL", f"the policy answered a "
                              f"{type(action).__name__}, not an action map",
                              fix="return a dict such as {'actions': array}")
        return pack({**action, "server_timing": {
            "infer_ms": (time.monotonic() - started) * 1000.0}})

    @staticmethod
    async def _fail(ws: ServerConnection, exc: BaseException) -> None:
        if isinstance(exc, HarnessError):  # a deliberate error says all in one line
            text = f"{type(exc).__name__}: {exc}"
        else:
            text = "".join(traceback.format_exception(exc))
        with contextlib.suppress(ConnectionClosed):
            await ws.send(text)
            await ws.close(code=_INTERNAL_ERROR, reason=_ERROR_REASON)


    def _door(self, connection: ServerConnection, request: Request) -> Response | None:
        """``/healthz`` answered; a connection past ``max_connections`` refused (503)."""
        if request.path == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        assert self.intake is not None
        refusal = self.intake.admit(connection)
        if refusal is not None:
            return connection.respond(http.HTTPStatus.SERVICE_UNAVAILABLE, refusal)
        return None


def _address(ws: ServerConnection) -> str:
    address = ws.remote_address
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)
