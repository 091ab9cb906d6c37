"""A remote service worker: serves one named service for a broker (Paranoid-Pirate liveness).

The worker's thread owns a DEALER connected to the broker. It registers with ``W_READY``,
answers ``W_REQUEST`` one at a time with its :class:`Service`, and heartbeats every
``heartbeat_interval_s``. When the broker stays silent for ``liveness`` intervals (or tells it
to), it closes the socket, waits (exponential backoff) and registers again on a new one.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import zmq

from harness_bt.clock import Clock, SystemClock
from runtime_bridge.zmq.broker import BrokerPlugin
from runtime_bridge.zmq.service import Service, serve_one
from runtime_bridge.zmq.sockets import recv_frames
from runtime_bridge.zmq.wire import (
    Limits,
    Message,
    MessageType,
    WireError,
    decode,
    encode,
    encode_wrapped,
)

__all__ = ["ServiceWorker", "WorkerConfig"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    broker: str = "tcp://127.0.0.1:5555"
    heartbeat_interval_s: float = 1.0
    liveness: int = 3
    reconnect_initial_s: float = 0.1
    reconnect_max_s: float = 5.0
    tick_interval_s: float = 0.005
    linger_ms: int = 0
    limits: Limits = field(default_factory=Limits)


class ServiceWorker:
    """See the module docstring. ``plugins`` live on the worker's thread (telemetry);
    ``guard`` is entered around each request's handling (as for :class:`Broker`)."""

    def __init__(self, service: Service, config: WorkerConfig | None = None, *,
                 plugins: Sequence[BrokerPlugin] = (), context: zmq.Context | None = None,
                 clock: Clock | None = None,
                 guard: Callable[[], AbstractContextManager[object]] | None = None) -> None:
        self.service = service
        self._guard = guard or contextlib.nullcontext
        self.config = config or WorkerConfig()
        self.context = context or zmq.Context.instance()
        self.clock: Clock = clock or SystemClock()
        self._plugins = list(plugins)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reconnects = 0
        self.served = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run_logged, name="harness-worker",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run_logged(self) -> None:
        try:
            self.run()
        except Exception:
            log.exception("worker stopped on an error")

    def _connect(self) -> zmq.Socket:
        sock = self.context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, self.config.linger_ms)
        sock.setsockopt(zmq.MAXMSGSIZE, self.config.limits.hard_cap_bytes)
        sock.connect(self.config.broker)
        sock.send_multipart(encode(Message(MessageType.W_READY, service=self.service.name)))
        return sock

    def run(self) -> None:
        cfg = self.config
        opened: list[BrokerPlugin] = []
        sock: zmq.Socket | None = None
        try:
            for plugin in self._plugins:
                plugin.open(self.context)
                opened.append(plugin)
            backoff = cfg.reconnect_initial_s
            while not self._stop.is_set():
                sock = self._connect()
                if self._serve(sock):
                    backoff = cfg.reconnect_initial_s
                # lost broker: drop what is unsent; stopping: give the goodbye 100 ms to leave
                sock.close(100 if self._stop.is_set() else 0)
                sock = None
                if self._stop.wait(backoff):
                    break
                backoff = min(backoff * 2, cfg.reconnect_max_s)
                self.reconnects += 1
        finally:
            if sock is not None:
                sock.close(cfg.linger_ms)
            for plugin in opened:
                with contextlib.suppress(Exception):
                    plugin.close()

    def _serve(self, sock: zmq.Socket) -> bool:
        """Serve on one connection until the broker is lost; True if it ever answered."""
        cfg = self.config
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        now = self.clock.monotonic()
        expires = now + cfg.heartbeat_interval_s * cfg.liveness
        next_beat = now + cfg.heartbeat_interval_s
        heard = False
        timeout_ms = max(1, int(cfg.tick_interval_s * 1000))
        while not self._stop.is_set():
            if poller.poll(timeout_ms):
                try:
                    msg = decode(recv_frames(sock), cfg.limits)
                except WireError as err:
                    log.warning("unreadable message from the broker: %s", err)
                    continue
                heard = True
                expires = self.clock.monotonic() + cfg.heartbeat_interval_s * cfg.liveness
                if msg.type is MessageType.W_REQUEST and msg.inner is not None:
                    with self._guard():
                        reply = serve_one(self.service, msg.inner)
                        self.served += 1
                        sock.send_multipart(encode_wrapped(MessageType.W_REPLY, msg.request_id,
                                                           self.service.name, msg.route,
                                                           encode(reply)), copy=False)
                elif msg.type is MessageType.W_DISCONNECT:
                    log.warning("the broker disconnected this worker: %s", msg.body.get("reason"))
                    return heard
            now = self.clock.monotonic()
            if now >= expires:
                log.warning("the broker at %s is silent; reconnecting", cfg.broker)
                return heard
            if now >= next_beat:
                next_beat = now + cfg.heartbeat_interval_s
                sock.send_multipart(encode(Message(MessageType.W_HEARTBEAT)))
            for plugin in self._plugins:
                plugin.tick()
        with contextlib.suppress(zmq.ZMQError):
            sock.send_multipart(encode(Message(MessageType.W_DISCONNECT)), zmq.NOBLOCK)
        return heard

    def __repr__(self) -> str:
        return f"ServiceWorker({self.service.name!r} -> {self.config.broker})"
