"""Work run on a broker's thread, between two messages (:meth:`Broker.inline
<runtime_bridge.zmq.broker.Broker.inline>`): how the runtime server's control thread has the
broker's I/O thread run the bookkeeping of its step.

The work is handed an :class:`Answerer`, the :class:`~runtime_bridge.host.giveway.GiveWay` of
the broker's socket: between two pieces of work it may answer the requests that arrived
meanwhile, on the same thread, with no lock or interpreter changing hands. The calling thread
wakes the broker with a message over an ``inproc`` endpoint of the broker's own socket, from a
socket of its own whose routing id is a random token no network peer can claim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import zmq

from harness_bt.errors import BridgeError
from runtime_bridge.host.giveway import GiveWay
from runtime_bridge.zmq.sockets import readable, recv_frames

__all__ = ["Answerer", "InlineCall", "InlineCaller"]

T = TypeVar("T")
_NOBLOCK = int(zmq.NOBLOCK)


@dataclass(slots=True, eq=False)
class InlineCall:
    """One piece of work handed to the broker, and what came of it."""

    work: Callable[[GiveWay], Any]
    result: Any = None
    error: BaseException | None = None


class Answerer:
    """The :class:`~runtime_bridge.host.giveway.GiveWay` of a broker's socket (on its thread):
    ``handle`` answers one message's frames."""

    __slots__ = ("_handle", "_sock")

    def __init__(self, handle: Callable[..., None], sock: zmq.Socket) -> None:
        self._handle = handle
        self._sock = sock

    def pending(self) -> bool:
        return readable(self._sock)

    def answer(self) -> None:
        try:
            frames = recv_frames(self._sock, _NOBLOCK)
        except zmq.Again:
            return
        self._handle(self._sock, frames, nested=True)


class InlineCaller:
    """Runs work on a broker's thread; made by :meth:`Broker.inline
    <runtime_bridge.zmq.broker.Broker.inline>`. Its socket belongs to the thread that calls
    :meth:`call`: make, use and close it there."""

    #: how often a caller waiting for its work looks whether the broker still runs
    CHECK_S = 0.05

    def __init__(self, context: zmq.Context, running: Callable[[], bool], endpoint: str,
                 token: bytes, calls: dict[bytes, InlineCall]) -> None:
        self._running = running
        self._calls = calls
        self._token = token
        self._sock = context.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.ROUTING_ID, token)
        self._sock.connect(endpoint)

    def call(self, work: Callable[[GiveWay], T]) -> T:
        """``work(give_way)`` on the broker's thread, between two messages; its result, or its
        exception raised here. Raises ``BridgeError`` ``BROKER_STOPPED`` when the broker stops
        (or died) before it ran the work."""
        item = InlineCall(work)
        self._calls[self._token] = item
        timeout_ms = int(self.CHECK_S * 1000)
        while True:  # a DEALER would block for good once the broker's socket is gone
            try:
                self._sock.send(b"run", zmq.NOBLOCK)
                break
            except zmq.Again:
                self._check_running()
                self._sock.poll(timeout_ms, zmq.POLLOUT)
        while not self._sock.poll(timeout_ms):
            self._check_running()
        self._sock.recv()
        if item.error is not None:
            raise item.error
        return cast(T, item.result)

    def _check_running(self) -> None:
        if not self._running():
            self._calls.pop(self._token, None)
            raise BridgeError("BROKER_STOPPED", "the broker stopped before it ran the work "
                              "handed to it", fix="see the broker's log for why")

    def close(self) -> None:
        self._sock.close(0)
