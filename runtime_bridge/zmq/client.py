"""A request/reply client with Lazy-Pirate retries (ZeroMQ guide, chapter 4).

A REQ socket must alternate send and receive, so after a timeout it cannot simply send again:
the client closes it (LINGER 0: the unanswered request is abandoned, not delivered later),
opens a new one, and resends the same message, a bounded number of times. A timeout never
proves the server did nothing: only idempotent requests, or requests the server deduplicates
by id, may be resent. The client belongs to the thread that created it.
"""

from __future__ import annotations

import itertools
import threading

import zmq

from harness_bt.errors import BridgeError
from runtime_bridge.zmq.sockets import recv_frames, send_frames
from runtime_bridge.zmq.wire import Limits, Message, WireCode, WireError, decode, encode

__all__ = ["LazyPirateClient"]


class LazyPirateClient:
    """``request(msg)`` sends and waits ``timeout_s``; on silence it reconnects and resends, up
    to ``retries`` tries in all, then raises ``WireError(NO_REPLY)``."""

    def __init__(self, endpoint: str, *, context: zmq.Context | None = None,
                 timeout_s: float = 0.5, retries: int = 3, linger_ms: int = 0,
                 limits: Limits | None = None) -> None:
        if retries < 1 or not timeout_s > 0:
            raise BridgeError("INVALID_CONFIG", f"retries={retries} must be >= 1 and "
                              f"timeout_s={timeout_s} > 0")
        self.endpoint = endpoint
        self.context = context or zmq.Context.instance()
        self.timeout_s = timeout_s
        self.retries = retries
        self.linger_ms = linger_ms
        self.limits = limits or Limits()
        self.reconnects = 0
        self._ids = itertools.count(1)
        self._owner = threading.get_ident()
        self._sock: zmq.Socket | None = self._open()

    def _open(self) -> zmq.Socket:
        self._rcvtimeo = -1  # what RCVTIMEO is set to on this socket (asking costs a call)
        sock = self.context.socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, self.linger_ms)
        sock.setsockopt(zmq.MAXMSGSIZE, self.limits.hard_cap_bytes)
        sock.connect(self.endpoint)
        return sock

    def reconnect(self) -> None:
        if self._sock is not None:
            self._sock.close(0)
        self._sock = self._open()
        self.reconnects += 1

    def next_id(self) -> int:
        return next(self._ids)

    def request(self, msg: Message, *, timeout_s: float | None = None,
                retries: int | None = None) -> Message:
        """The reply to ``msg`` (an ERROR reply is returned, not raised)."""
        if threading.get_ident() != self._owner:
            raise BridgeError("WRONG_THREAD", "a ZeroMQ client belongs to the thread that "
                              "created it", where=self.endpoint,
                              fix="give each thread its own client")
        if self._sock is None:
            raise BridgeError("CLIENT_CLOSED", "the client is closed", where=self.endpoint)
        if msg.request_id == 0:
            msg = Message(msg.type, self.next_id(), msg.service, msg.command_id, msg.body,
                          msg.arrays)
        frames = encode(msg)
        wait_ms = int(1000 * (self.timeout_s if timeout_s is None else timeout_s))
        tries = self.retries if retries is None else retries
        for _ in range(tries):
            sock = self._sock
            if self._rcvtimeo != wait_ms:
                sock.setsockopt(zmq.RCVTIMEO, wait_ms)
                self._rcvtimeo = wait_ms
            send_frames(sock, frames)
            try:
                raw = recv_frames(sock)
            except zmq.Again:
                raw = None
            if raw is not None:
                try:
                    reply = decode(raw, self.limits)
                except WireError as err:
                    self.reconnect()
                    raise WireError(err.code, f"unreadable reply from {self.endpoint}: "
                                    f"{err.message}", where=self.endpoint,
                                    request_id=msg.request_id) from err
                if reply.request_id in (msg.request_id, 0):
                    return reply
            self.reconnect()  # silent (or answering someone else): start over on a new socket
        raise WireError(WireCode.NO_REPLY, f"no reply to {msg.type.name} "
                        f"{msg.command_id or ''} from {self.endpoint} after {tries} tries of "
                        f"{wait_ms} ms", request_id=msg.request_id, where=self.endpoint,
                        command_id=msg.command_id or None,
                        details={"tries": tries, "timeout_ms": wait_ms})

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close(self.linger_ms)
            self._sock = None
