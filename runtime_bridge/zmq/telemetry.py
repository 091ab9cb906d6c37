"""Telemetry over PUB/SUB with latest-value semantics per topic.

Robot state and progress are state, not history: a reader wants the newest value of each
topic. ZeroMQ's high-water mark bounds queues but keeps the *oldest* messages, and CONFLATE
keeps one message for all topics and breaks multipart, so neither gives that. Instead:

- the :class:`TelemetryPublisher` keeps the latest value per topic (any thread may ``put``),
  and its owning thread sends changed topics on ``tick`` and every topic again each
  ``republish_s``; sends never block (a PUB drops for a subscriber whose queue is full), so a
  slow subscriber never holds up the publisher, and once it catches up it gets fresh values;
- the :class:`TelemetrySubscriber` drains whatever has arrived and keeps, per topic, the value
  with the highest sequence number (per publisher boot).

Telemetry is never the only path for anything that matters: command results are read by
request (``EVENTS`` / ``QUERY``) and survive a lost PUB message.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import zmq

from harness_bt.clock import Clock, SystemClock
from runtime_bridge.zmq.wire import Limits, Message, MessageType, WireError, decode, encode

__all__ = ["TelemetryPublisher", "TelemetrySubscriber", "TopicValue"]


@dataclass(frozen=True, slots=True, eq=False)
class TopicValue:
    topic: str
    seq: int
    body: Mapping[str, Any]
    arrays: Mapping[str, np.ndarray]


class TelemetryPublisher:
    """Latest value per topic; ``open``/``tick``/``close`` run on the socket's owning thread
    (it is a broker / worker plugin)."""

    def __init__(self, bind: str = "tcp://127.0.0.1:5556", *, sndhwm: int = 100,
                 republish_s: float = 0.5, linger_ms: int = 0,
                 clock: Clock | None = None) -> None:
        self.bind = bind
        self.sndhwm = sndhwm
        self.republish_s = republish_s
        self.linger_ms = linger_ms
        self.clock: Clock = clock or SystemClock()
        self.boot = uuid.uuid4().hex[:8]
        self.endpoint: str | None = None
        self.sent = 0
        self._lock = threading.Lock()
        self._values: dict[str, TopicValue] = {}
        self._dirty: set[str] = set()
        self._last_only: set[str] = set()
        self._seq = 0
        self._sock: zmq.Socket | None = None
        self._next_all = 0.0
        self._bound = threading.Event()

    def put(self, topic: str, body: Mapping[str, Any],
            arrays: Mapping[str, np.ndarray] | None = None, *, last: bool = False) -> None:
        """Set ``topic``'s value (thread-safe). ``last``: publish it once more, then forget the
        topic (a finished command's progress)."""
        with self._lock:
            self._seq += 1
            self._values[topic] = TopicValue(topic, self._seq, dict(body), dict(arrays or {}))
            self._dirty.add(topic)
            if last:
                self._last_only.add(topic)

    def open(self, context: zmq.Context) -> None:
        sock = context.socket(zmq.PUB)
        sock.setsockopt(zmq.LINGER, self.linger_ms)
        sock.setsockopt(zmq.SNDHWM, self.sndhwm)
        sock.bind(self.bind)
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._sock = sock
        self._bound.set()

    def wait_bound(self, timeout_s: float = 5.0) -> str | None:
        self._bound.wait(timeout_s)
        return self.endpoint

    def tick(self) -> None:
        sock = self._sock
        if sock is None:
            return
        now = self.clock.monotonic()
        with self._lock:
            if now >= self._next_all:
                self._next_all = now + self.republish_s
                names = list(self._values)
            else:
                names = list(self._dirty)
            out = [self._values[n] for n in names if n in self._values]
            self._dirty.clear()
            for name in self._last_only:
                self._values.pop(name, None)
            self._last_only.clear()
        for value in out:
            body = {**value.body, "seq": value.seq, "boot": self.boot}
            frames = encode(Message(MessageType.TELEMETRY, body=body, arrays=value.arrays))
            try:
                sock.send_multipart([value.topic.encode(), *frames], zmq.NOBLOCK, copy=False)
                self.sent += 1
            except zmq.Again:  # never wait for a subscriber
                pass

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close(self.linger_ms)
            self._sock = None


class TelemetrySubscriber:
    """Subscribes to ``topics`` (prefixes; "" for all) and keeps the newest value of each.
    Owned by the thread that calls it."""

    def __init__(self, endpoint: str, *, topics: tuple[str, ...] = ("",),
                 context: zmq.Context | None = None, rcvhwm: int = 1000,
                 limits: Limits | None = None) -> None:
        self.endpoint = endpoint
        self.limits = limits or Limits()
        self.latest: dict[str, TopicValue] = {}
        self.received = 0
        self.rejected = 0
        self._boot: dict[str, str] = {}
        ctx = context or zmq.Context.instance()
        self._sock = ctx.socket(zmq.SUB)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.RCVHWM, rcvhwm)
        self._sock.setsockopt(zmq.MAXMSGSIZE, self.limits.hard_cap_bytes)
        for topic in topics:
            self._sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self._sock.connect(endpoint)

    def drain(self, max_messages: int = 10_000, timeout_ms: int = 0) -> dict[str, TopicValue]:
        """Read what has arrived (waiting up to ``timeout_ms`` for the first message); returns
        the topics that got a newer value."""
        updated: dict[str, TopicValue] = {}
        if timeout_ms and not self._sock.poll(timeout_ms):
            return updated
        for _ in range(max_messages):
            try:
                frames = self._sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            self.received += 1
            try:
                topic = bytes(frames[0]).decode()
                msg = decode(frames[1:], self.limits)
                seq, boot = int(msg.body["seq"]), str(msg.body["boot"])
            except (WireError, KeyError, ValueError, TypeError, IndexError):
                self.rejected += 1
                continue
            old = self.latest.get(topic)
            if old is not None and self._boot.get(topic) == boot and old.seq >= seq:
                continue
            body = {k: v for k, v in msg.body.items() if k not in ("seq", "boot")}
            value = TopicValue(topic, seq, body, msg.arrays)
            self.latest[topic] = updated[topic] = value
            self._boot[topic] = boot
        return updated

    def forget(self, topic: str) -> None:
        self.latest.pop(topic, None)
        self._boot.pop(topic, None)

    def close(self) -> None:
        self._sock.close(0)
