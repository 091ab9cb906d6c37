"""A broker with explicit service routing (the ZeroMQ guide's Majordomo idea, own protocol).

One ROUTER socket serves clients and workers. A request names its service in the header:

- a **local** service (the runtime's ``manip``) is answered on the broker's own thread;
- a **remote** service is served by workers that registered it by name (``W_READY``); each
  service has its own pool and queue, so workers of different capabilities never share one;
  a request goes to one idle worker of its service, waits in that service's bounded queue, or
  is answered at once: ``NO_SUCH_SERVICE`` (never registered; the known ones are listed),
  ``SERVICE_UNAVAILABLE`` (no live worker), ``BROKER_BUSY`` (queue full), ``SERVICE_TIMEOUT``
  (queued past its time to live), ``WORKER_LOST`` (the worker died while serving it);
- workers are alive while they talk: heartbeats both ways every ``heartbeat_interval_s``; a
  worker silent for ``liveness`` intervals is dropped.

Every malformed, truncated, oversized or unknown-version message gets an ERROR reply; nothing a
peer sends can stop the broker. The broker's thread owns its socket and those of its plugins
(the telemetry publisher), and closes them with ``linger_ms``. ``guard`` (a context manager
factory, optional) is entered around the handling of each message, e.g. a host's
``answering``, so a step run on another thread steps aside while an answer is made (the runtime
server needs none: its step's bookkeeping runs on the broker's own thread, below).

:meth:`Broker.inline` lets one other thread run work *on the broker's thread*, between two
messages (the runtime server's control thread runs the bookkeeping of its step there; see
:mod:`runtime_bridge.zmq.inline`).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import zmq

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import BridgeError
from harness_bt.plugins import did_you_mean
from runtime_bridge.zmq import wire
from runtime_bridge.zmq.inline import Answerer, InlineCall, InlineCaller
from runtime_bridge.zmq.service import Service, serve_one
from runtime_bridge.zmq.sockets import readable, recv_frames, send_frames
from runtime_bridge.zmq.wire import WORKER_TYPES, Limits, Message, MessageType, WireCode, WireError

__all__ = ["Broker", "BrokerConfig", "BrokerPlugin"]

log = logging.getLogger(__name__)
T = TypeVar("T")
_NOBLOCK = int(zmq.NOBLOCK)
# looked up once: an enum member's lookup on its class costs about 0.1 us per use
_SERVICES = MessageType.SERVICES
_NOT_REQUESTS = frozenset({MessageType.REPLY, MessageType.ERROR, MessageType.TELEMETRY})


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    bind: str = "tcp://127.0.0.1:5555"
    heartbeat_interval_s: float = 1.0
    liveness: int = 3
    queue_size: int = 1000
    request_ttl_s: float = 5.0
    max_workers: int = 1024
    tick_interval_s: float = 0.005
    linger_ms: int = 0  # a reply for a client that went away is not worth waiting for
    backlog: int = 1024  # pending TCP connections; ZeroMQ's 100 makes a burst of clients wait
    limits: Limits = field(default_factory=Limits)


class BrokerPlugin(Protocol):
    """Something that lives on the broker's thread (and owns sockets there)."""

    def open(self, context: zmq.Context) -> None: ...

    def tick(self) -> None: ...

    def close(self) -> None: ...


@dataclass(slots=True, eq=False)
class _Pending:
    envelope: list[bytes]
    frames: list[bytes | memoryview]
    request: Message
    queued_at: float


@dataclass(slots=True, eq=False)
class _Worker:
    identity: bytes
    service: str
    expires: float
    busy: _Pending | None = None


@dataclass(slots=True, eq=False)
class _Pool:
    idle: deque[_Worker] = field(default_factory=deque)
    queue: deque[_Pending] = field(default_factory=deque)
    workers: int = 0


class Broker:
    """See the module docstring. ``start()`` runs it on its own thread; ``run()`` in the
    caller's (until ``stop()``)."""

    def __init__(
        self,
        config: BrokerConfig | None = None,
        *,
        services: Sequence[Service] = (),
        plugins: Sequence[BrokerPlugin] = (),
        context: zmq.Context | None = None,
        clock: Clock | None = None,
        guard: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.config = config or BrokerConfig()
        self._guard = guard
        self.context = context or zmq.Context.instance()
        self.clock: Clock = clock or SystemClock()
        self._local: dict[str, Service] = {}
        for service in services:
            self.add_service(service)
        self._plugins = list(plugins)
        self._pools: dict[str, _Pool] = {}
        self._workers: dict[bytes, _Worker] = {}
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self.endpoint: str | None = None
        self.handled = 0
        self._inline_token = b"hbt-inline-" + os.urandom(16)
        self._inline_endpoint = f"inproc://harness-broker-inline-{self._inline_token.hex()}"
        self._callers = itertools.count()
        self._calls: dict[bytes, InlineCall] = {}  # by caller token; each caller waits for its own
        self._deferred: deque[bytes] = deque()  # callers that asked while a call ran

    def add_service(self, service: Service) -> None:
        if service.name in self._local:
            raise BridgeError("DUPLICATE_SERVICE", f"service {service.name!r} is already served "
                              "by this broker", fix="give the second service another name")
        self._local[service.name] = service

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout_s: float = 5.0) -> str:
        """Run on a new thread; returns the bound endpoint once the socket is bound."""
        self._thread = threading.Thread(target=self._run_guarded, name="harness-broker",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s) or self._failure is not None:
            self.stop()
            raise BridgeError("BIND_FAILED", f"the broker could not bind {self.config.bind}: "
                              f"{self._failure}", where=self.config.bind,
                              fix="pick a free port (or tcp://127.0.0.1:* for any free one)")
        assert self.endpoint is not None
        return self.endpoint

    @property
    def running(self) -> bool:
        """Started, not stopped, and its thread alive."""
        return (self._thread is not None and self._thread.is_alive()
                and not self._stop.is_set())

    def inline(self) -> InlineCaller:
        """A caller that runs work on this broker's thread (see the module docstring); the
        broker must be started. One per thread, closed by that thread."""
        if not self._ready.is_set() or self.endpoint is None:
            raise BridgeError("BROKER_NOT_STARTED", "inline() needs a started broker",
                              fix="call start() first")
        token = self._inline_token + b"-%d" % next(self._callers)
        return InlineCaller(self.context, lambda: self.running, self._inline_endpoint, token,
                            self._calls)

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run_guarded(self) -> None:
        try:
            self.run()
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            if not isinstance(exc, zmq.ZMQError) or self.endpoint is not None:
                log.exception("broker stopped on an error")

    def run(self) -> None:
        cfg = self.config
        sock = self.context.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, cfg.linger_ms)
        sock.setsockopt(zmq.MAXMSGSIZE, cfg.limits.hard_cap_bytes)
        sock.setsockopt(zmq.RCVHWM, 100_000)
        sock.setsockopt(zmq.SNDHWM, 100_000)
        sock.setsockopt(zmq.BACKLOG, cfg.backlog)  # many clients connecting at once
        opened: list[BrokerPlugin] = []
        try:
            sock.bind(cfg.bind)
            self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
            sock.bind(self._inline_endpoint)
            for plugin in self._plugins:
                plugin.open(self.context)
                opened.append(plugin)
            self._ready.set()
            self._loop(sock)
        finally:
            for plugin in opened:
                with contextlib.suppress(Exception):
                    plugin.close()
            sock.close(cfg.linger_ms)

    def _loop(self, sock: zmq.Socket) -> None:
        cfg = self.config
        sock.setsockopt(zmq.RCVTIMEO, max(1, int(cfg.tick_interval_s * 1000)))
        next_beat = self.clock.monotonic() + cfg.heartbeat_interval_s
        while not self._stop.is_set():
            flags = 0  # the first receive waits one tick at most (RCVTIMEO)
            for _ in range(1000):  # drain what is there, but keep ticking under load
                try:
                    frames = recv_frames(sock, flags)
                except zmq.Again:
                    break
                self._handle(sock, frames)
                if not readable(sock):
                    break
                flags = _NOBLOCK
            now = self.clock.monotonic()
            if now >= next_beat:
                next_beat = now + cfg.heartbeat_interval_s
                self._beat(sock, now)
            for plugin in self._plugins:
                plugin.tick()

    # ------------------------------------------------------------------ messages

    def _handle(self, sock: zmq.Socket, frames: list[bytes | memoryview], *,
                nested: bool = False) -> None:
        head = frames[0]
        if type(head) is bytes and head.startswith(self._inline_token):
            self._deferred.append(head)
            while self._deferred and not nested:  # one call at a time, the next ones after
                self._run_inline(sock, self._deferred.popleft())
            return
        try:
            if self._guard is None:
                self._on_message(sock, frames)
            else:
                with self._guard():
                    self._on_message(sock, frames)
        except Exception:  # a bug in one message's handling must not stop the broker
            log.exception("broker failed on a message")

    def _run_inline(self, sock: zmq.Socket, token: bytes) -> None:
        item = self._calls.pop(token, None)
        if item is None:
            return
        try:
            item.result = item.work(Answerer(self._handle, sock))
        except BaseException as exc:  # handed to the caller, raised there
            item.error = exc
        sock.send_multipart([token, b"done"])

    def _send(self, sock: zmq.Socket, envelope: list[bytes], msg: Message) -> None:
        send_frames(sock, [*envelope, *wire.encode(msg)])

    def _error(self, sock: zmq.Socket, envelope: list[bytes], err: WireError,
               request: Message | None = None) -> None:
        self._send(sock, envelope, wire.error_reply(
            err.request_id if request is None else request.request_id, err,
            service="" if request is None else request.service,
            command_id="" if request is None else request.command_id))

    def _on_message(self, sock: zmq.Socket, raw: list[bytes | memoryview]) -> None:
        envelope, frames = wire.split_envelope(raw)
        if not envelope:
            return
        try:
            msg = wire.decode(frames, self.config.limits)
        except WireError as err:
            self._error(sock, envelope, err)
            return
        if msg.type in WORKER_TYPES:
            self._on_worker(sock, envelope[0], msg)
            return
        self.handled += 1
        if msg.type is _SERVICES:
            self._send(sock, envelope, msg.reply({"services": self.services()}))
        elif msg.type in _NOT_REQUESTS:
            self._error(sock, envelope, WireError(
                WireCode.INVALID_REQUEST, f"a client sends requests; got a {msg.type.name}"), msg)
        else:
            self._route(sock, envelope, frames, msg)

    def _route(self, sock: zmq.Socket, envelope: list[bytes], frames: list[bytes | memoryview],
               msg: Message) -> None:
        local = self._local.get(msg.service)
        if local is not None:
            self._send(sock, envelope, serve_one(local, msg))
            return
        pool = self._pools.get(msg.service)
        if pool is None:
            known = sorted({*self._local, *self._pools})
            self._error(sock, envelope, WireError(
                WireCode.NO_SUCH_SERVICE, f"no such service {msg.service!r}; known: "
                f"{', '.join(known) or '(none)'}{did_you_mean(msg.service, known)}",
                where=self.endpoint, details={"service": msg.service, "known": known},
                fix="name a service that is registered with this broker"), msg)
        elif pool.workers == 0:
            self._error(sock, envelope, WireError(
                WireCode.SERVICE_UNAVAILABLE, f"service {msg.service!r} has no live worker",
                where=self.endpoint, fix="start a worker for it, or retry later"), msg)
        elif len(pool.queue) >= self.config.queue_size:
            self._error(sock, envelope, WireError(
                WireCode.BROKER_BUSY, f"service {msg.service!r} has {len(pool.queue)} requests "
                "queued (the limit)", where=self.endpoint, fix="retry with backoff"), msg)
        else:
            pool.queue.append(_Pending(envelope, frames, msg, self.clock.monotonic()))
            self._assign(sock, pool)

    def _assign(self, sock: zmq.Socket, pool: _Pool) -> None:
        while pool.queue and pool.idle:
            worker = pool.idle.popleft()
            if worker.identity not in self._workers:
                continue
            pending = pool.queue.popleft()
            worker.busy = pending
            sock.send_multipart([worker.identity, *wire.encode_wrapped(
                MessageType.W_REQUEST, pending.request.request_id, worker.service, pending.envelope,
                pending.frames)], copy=False)

    def _on_worker(self, sock: zmq.Socket, identity: bytes, msg: Message) -> None:
        now = self.clock.monotonic()
        worker = self._workers.get(identity)
        if msg.type is MessageType.W_READY:
            refusal = None
            if worker is not None:
                refusal = "registered twice"
            elif msg.service in self._local:
                refusal = f"service {msg.service!r} is served by the broker itself"
            elif not msg.service:
                refusal = "W_READY names no service"
            elif len(self._workers) >= self.config.max_workers:
                refusal = f"{len(self._workers)} workers: the limit"
            if refusal is not None:
                log.warning("refusing worker %r: %s", identity, refusal)
                self._drop(sock, identity, notify=True, why=refusal)
                return
            worker = _Worker(identity, msg.service, self._expiry(now))
            self._workers[identity] = worker
            pool = self._pools.setdefault(msg.service, _Pool())
            pool.workers += 1
            pool.idle.append(worker)
            self._assign(sock, pool)
            return
        if worker is None:
            if msg.type is not MessageType.W_DISCONNECT:
                self._send(sock, [identity], Message(MessageType.W_DISCONNECT, body={
                    "reason": "unknown worker: register with W_READY"}))
            return
        worker.expires = self._expiry(now)
        if msg.type is MessageType.W_REPLY:
            pending = worker.busy
            if pending is None or pending.request.request_id != msg.request_id:
                log.warning("worker %r replied to a request it does not hold", identity)
                return
            worker.busy = None
            sock.send_multipart([*msg.route, *msg.inner_frames], copy=False)
            pool = self._pools[worker.service]
            pool.idle.append(worker)
            self._assign(sock, pool)
        elif msg.type is MessageType.W_DISCONNECT:
            self._drop(sock, identity, notify=False, why="the worker disconnected")

    def _expiry(self, now: float) -> float:
        return now + self.config.heartbeat_interval_s * self.config.liveness

    def _drop(self, sock: zmq.Socket, identity: bytes, *, notify: bool, why: str) -> None:
        worker = self._workers.pop(identity, None)
        if notify:
            self._send(sock, [identity], Message(MessageType.W_DISCONNECT, body={"reason": why}))
        if worker is None:
            return
        pool = self._pools[worker.service]
        pool.workers -= 1
        with contextlib.suppress(ValueError):
            pool.idle.remove(worker)
        if worker.busy is not None:
            p = worker.busy
            self._error(sock, p.envelope, WireError(
                WireCode.WORKER_LOST, f"the {worker.service!r} worker serving this request was "
                f"lost ({why}); it may or may not have been carried out",
                where=self.endpoint, fix="query before repeating anything with side effects"),
                p.request)

    def _beat(self, sock: zmq.Socket, now: float) -> None:
        for identity, worker in list(self._workers.items()):
            if now >= worker.expires:
                log.warning("worker %r of %r missed its heartbeats", identity, worker.service)
                self._drop(sock, identity, notify=True, why="heartbeats missed")
            else:
                self._send(sock, [identity], Message(MessageType.W_HEARTBEAT))
        ttl = self.config.request_ttl_s
        for pool in self._pools.values():
            while pool.queue and now - pool.queue[0].queued_at > ttl:
                p = pool.queue.popleft()
                self._error(sock, p.envelope, WireError(
                    WireCode.SERVICE_TIMEOUT, f"waited {now - p.queued_at:.2f} s for a "
                    f"{p.request.service!r} worker (time to live {ttl} s); it was not carried "
                    "out", where=self.endpoint, fix="retry later or start more workers"),
                    p.request)

    def services(self) -> dict[str, dict[str, object]]:
        out: dict[str, dict[str, object]] = {
            name: {"kind": "local", "workers": 1} for name in self._local}
        for name, pool in self._pools.items():
            out[name] = {"kind": "remote", "workers": pool.workers, "idle": len(pool.idle),
                         "queued": len(pool.queue)}
        return out
