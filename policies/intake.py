"""The policy server's door: a cap on connections and on the bytes of observations in flight
across all of them (the shared :class:`~harness_bt.request_budget.Admission`).

Connections: past ``max_connections`` a new one is refused at its HTTP handshake with ``503
SERVER_BUSY`` and the limit named.

Bytes: a connection reads an observation only under a *reservation* of ``max_message_bytes``
taken from ``max_bytes_in_flight`` when the observation's first bytes arrive, and given back
once its answer is sent; while the observation is decoded and answered, the connection reads
nothing more. A connection whose observation finds no room stops being read (TCP pushes back
on the client) and waits, in arrival order, for up to ``wait_s``; then it is refused with a
``SERVER_BUSY`` text frame and close code 1013 (try again later). Idle connections hold
nothing, and control frames (pings, pongs, closes) need no reservation. An observation
must arrive whole within ``read_s`` of its first bytes, or the connection is closed (1008,
too slow): a slow sender cannot sit on a reservation. So the observations
held at once never exceed ``max_bytes_in_flight``: the server's memory stays under its
baseline plus about twice that (each observation's bytes and its decoded arrays) plus one
read chunk (256 KiB) per connection.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from harness_bt.request_budget import Admission, RequestRefused

__all__ = ["Intake"]

_CONTROL_OPCODES = (0x8, 0x9, 0xA)
_MAX_CONTROL_FRAME = 2 + 4 + 125  # header, mask, the most a control frame carries
_BUSY_CLOSE = 1013


class _Reader:
    """One connection's reading state."""

    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws
        self.reserved = 0
        self.waiting = False
        self.answering = False
        self.refused = False
        self.reads = 0  # reservations taken so far (tells a deadline which read it is for)


class Intake:
    """Applies the caps (see the module docstring) to the connections of one server."""

    def __init__(self, admission: Admission, max_message_bytes: int, *,
                 wait_s: float = 10.0, read_s: float = 30.0) -> None:
        self.read_s = read_s
        self.admission = admission
        self.reservation = max_message_bytes
        self.wait_s = wait_s
        self.admitted: set[ServerConnection] = set()
        self.queue: collections.deque[_Reader] = collections.deque()
        self.refused_busy = 0
        self._refusals: set[asyncio.Future[None]] = set()

    # ------------------------------------------------------------ connections

    def admit(self, connection: ServerConnection) -> str | None:
        """None to let the handshake go on, else why it is refused (answered 503)."""
        self.admitted = {c for c in self.admitted if c.state is not State.CLOSED}
        limit = self.admission.budget.max_connections
        if len(self.admitted) >= limit:
            self.refused_busy += 1
            return (f"SERVER_BUSY: the policy server holds {len(self.admitted)} connections, "
                    f"its limit (max_connections={limit}); retry shortly or raise the limit\n")
        self.admitted.add(connection)
        return None

    def watch(self, ws: ServerConnection) -> _Reader:
        """Count what ``ws`` receives from now on (see the module docstring)."""
        reader = _Reader(ws)
        received = ws.data_received

        def data_received(data: bytes) -> None:
            if reader.reserved == 0 and not reader.waiting and not _control_only(data):
                if self.admission.try_take(self.reservation):
                    self._reserved(reader)
                else:
                    self._wait(reader)
            received(data)

        ws.data_received = data_received  # type: ignore[method-assign]
        return reader

    def received(self, reader: _Reader) -> None:
        """An observation arrived whole: read nothing more until it is answered, and let go
        of the read buffer it grew (a bytearray keeps its capacity when its head is deleted,
        so each connection would otherwise hold one observation's worth of memory for
        good)."""
        reader.answering = True
        reader.ws.transport.pause_reading()
        stream = getattr(reader.ws.protocol, "reader", None)
        buffer = getattr(stream, "buffer", None)
        if isinstance(buffer, bytearray) and len(buffer) < (1 << 16):
            stream.buffer = bytearray(buffer)  # type: ignore[union-attr]

    def answered(self, reader: _Reader) -> None:
        """Its answer is sent: give the reservation back, read on, let a waiting one in."""
        reader.answering = False
        self._give(reader)
        if reader.ws.state is State.OPEN:
            reader.ws.transport.resume_reading()
        self._wake()

    def ended(self, reader: _Reader) -> None:
        """The connection ended: whatever it held is given back."""
        if reader.waiting:
            reader.waiting = False
            with contextlib.suppress(ValueError):
                self.queue.remove(reader)
        self._give(reader)
        self.admitted.discard(reader.ws)
        self._wake()

    def release_all(self) -> None:
        """The server is stopping: read every connection again, so each can be closed."""
        for reader in list(self.queue):
            reader.waiting = False
            with contextlib.suppress(Exception):
                reader.ws.transport.resume_reading()
        self.queue.clear()

    # ------------------------------------------------------------ inside

    def _give(self, reader: _Reader) -> None:
        if reader.reserved:
            self.admission.give(reader.reserved)
            reader.reserved = 0

    def _reserved(self, reader: _Reader) -> None:
        reader.reserved = self.reservation
        reader.reads += 1
        asyncio.get_running_loop().call_later(self.read_s, self._too_slow, reader, reader.reads)

    def _too_slow(self, reader: _Reader, read: int) -> None:
        if reader.reads != read or not reader.reserved or reader.answering:
            return  # that observation arrived (or the connection ended)
        self._give(reader)
        self._wake()
        error = RequestRefused(
            "TOO_SLOW", f"an observation did not arrive whole within {self.read_s:g} s of its "
            "first bytes", status=408, where="policy server",
            fix="send each observation at once")
        task = asyncio.ensure_future(_refuse(reader.ws, error, code=1008, reason="too slow"))
        self._refusals.add(task)
        task.add_done_callback(self._refusals.discard)

    def _wait(self, reader: _Reader) -> None:
        reader.waiting = True
        reader.ws.transport.pause_reading()
        self.queue.append(reader)
        asyncio.get_running_loop().call_later(self.wait_s, self._expire, reader)

    def _wake(self) -> None:
        while self.queue and self.admission.try_take(self.reservation):
            reader = self.queue.popleft()
            reader.waiting = False
            self._reserved(reader)
            if reader.ws.state is State.OPEN:
                reader.ws.transport.resume_reading()

    def _expire(self, reader: _Reader) -> None:
        if not reader.waiting:
            return
        reader.waiting = False
        reader.refused = True
        self.refused_busy += 1
        with contextlib.suppress(ValueError):
            self.queue.remove(reader)
        budget = self.admission.budget
        error = RequestRefused(
            "SERVER_BUSY", f"no room for this observation within {self.wait_s:g} s: the policy "
            f"server holds {self.admission.bytes_in_flight} bytes of observations, its limit "
            f"(max_bytes_in_flight={budget.max_bytes_in_flight})", status=503,
            where="policy server", fix="retry shortly, or send smaller observations")
        task = asyncio.ensure_future(_refuse(reader.ws, error))
        self._refusals.add(task)
        task.add_done_callback(self._refusals.discard)


def _control_only(data: bytes) -> bool:
    """A chunk that is one whole control frame (a ping, pong or close from the client)."""
    return len(data) <= _MAX_CONTROL_FRAME and bool(data) and data[0] & 0x0F in _CONTROL_OPCODES


async def _refuse(ws: Any, error: RequestRefused, *, code: int = _BUSY_CLOSE,
                  reason: str = "server busy, try again later") -> None:
    with contextlib.suppress(ConnectionClosed, OSError):
        ws.transport.resume_reading()
        await ws.send(f"{type(error).__name__}: {error}")
        await asyncio.wait_for(ws.close(code=code, reason=reason), 2.0)
