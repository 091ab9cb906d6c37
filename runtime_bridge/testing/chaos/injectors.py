"""Fault injectors of a chaos run that act on their own thread: :class:`Injector` changes a
proxy's faults at seeded random intervals; :class:`HostilePeer` sends malformed, truncated and
oversized frames straight to the runtime."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import zmq

from runtime_bridge.testing.chaos.runtime import LIMITS
from runtime_bridge.zmq.wire import Message, MessageType, decode, encode

__all__ = ["HostilePeer", "Injector"]

class Injector:
    """Calls ``inject(rng)`` at seeded random intervals on its own thread until stopped."""

    def __init__(self, inject: Callable[[random.Random], None], seed: int,
                 every_s: tuple[float, float] = (0.2, 0.6)) -> None:
        self._inject = inject
        self._rng = random.Random(seed)
        self._every = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-injector", daemon=True)
        self.count = 0

    def __enter__(self) -> Injector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stop.wait(self._rng.uniform(*self._every)):
            self._inject(self._rng)
            self.count += 1


class HostilePeer:
    """Sends malformed, truncated, oversized and otherwise wrong frames straight to the
    runtime from raw sockets, on its own thread; counts the answers it gets."""

    def __init__(self, endpoint: str, seed: int, context: zmq.Context) -> None:
        self.endpoint = endpoint
        self.context = context
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-hostile", daemon=True)
        self.sent = 0
        self.error_replies = 0
        self.silent = 0
        self.dropped_connections = 0

    def __enter__(self) -> HostilePeer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10.0)

    def _frames(self) -> tuple[str, list[bytes]]:
        good = [bytes(f) for f in encode(Message(MessageType.QUERY, 7, "manip", "x",
                                                 {"n": 1}))]
        kind = self._rng.choice(["garbage", "truncated", "oversized_body", "bad_version",
                                 "unknown_type", "extra_frames", "empty_body", "bad_json",
                                 "no_such_service"] * 3 + ["huge_frame"])
        if kind == "garbage":
            return kind, [self._rng.randbytes(self._rng.randint(1, 64))]
        if kind == "truncated":
            return kind, [good[0][: self._rng.randint(1, len(good[0]) - 1)]]
        if kind == "oversized_body":
            return kind, [good[0], b'{"a":"' + b"x" * ((1 << 20) + 10) + b'"}']
        if kind == "huge_frame":  # past the socket's hard cap: ZeroMQ drops the connection
            return kind, [good[0], b"x" * (LIMITS.hard_cap_bytes + (1 << 16))]
        if kind == "bad_version":
            return kind, [good[0][:3] + bytes([99]) + good[0][4:], good[1]]
        if kind == "unknown_type":
            return kind, [good[0][:4] + bytes([250]) + good[0][5:], good[1]]
        if kind == "extra_frames":
            return kind, [*good, b"stray", b"more"]
        if kind == "empty_body":
            return kind, [good[0], b""]
        if kind == "bad_json":
            return kind, [good[0], b"{not json"]
        other = [bytes(f) for f in encode(Message(MessageType.QUERY, 9, "nope", "x"))]
        return kind, other

    def _run(self) -> None:
        while not self._stop.wait(self._rng.uniform(0.05, 0.2)):
            sock = self.context.socket(zmq.REQ)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RCVTIMEO, 2000)
            try:
                sock.connect(self.endpoint)
                kind, frames = self._frames()
                sock.send_multipart(frames)
                self.sent += 1
                try:
                    reply = decode(sock.recv_multipart())
                    if reply.type is MessageType.ERROR:
                        self.error_replies += 1
                except zmq.Again:
                    if kind == "huge_frame":
                        self.dropped_connections += 1
                    else:
                        self.silent += 1
            finally:
                sock.close(0)
