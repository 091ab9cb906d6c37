"""A policy server written for the tests from openpi's documented WebSocket protocol alone (not
with the project's own wire module), with scripted misbehaviour.

The protocol as documented: on connect the server sends its metadata as one binary msgpack
frame; each binary frame received is an observation (msgpack; NumPy arrays as maps with the
bin-string keys ``__ndarray__``, ``data``, ``dtype``, ``shape``), answered by one binary
msgpack frame of actions; on an error the server sends the traceback as a text frame and closes
with code 1011.

``respond(observation, n)`` decides each answer (``n`` counts requests from 1): a dict of
actions (arrays allowed), or one of the misbehaviours below.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed


@dataclass(frozen=True)
class Raw:
    """Send these bytes as the answer, as they are (garbage, truncated msgpack ...)."""

    data: bytes


@dataclass(frozen=True)
class Fail:
    """Send ``text`` as a text frame and close with 1011, as openpi's server does on error."""

    text: str


@dataclass(frozen=True)
class Silent:
    """Never answer (the connection stays open)."""


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return {b"__ndarray__": True, b"data": obj.tobytes(), b"dtype": obj.dtype.str,
                b"shape": obj.shape}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise TypeError(type(obj).__name__)


def _hook(obj: dict[Any, Any]) -> Any:
    if b"__ndarray__" in obj:
        return np.ndarray(buffer=obj[b"data"], dtype=np.dtype(obj[b"dtype"]),
                          shape=obj[b"shape"])
    if b"__npgeneric__" in obj:
        return np.dtype(obj[b"dtype"]).type(obj[b"data"])
    return obj


def packb(value: Any) -> bytes:
    return msgpack.packb(value, default=_default)


def unpackb(data: bytes) -> Any:
    return msgpack.unpackb(data, object_hook=_hook)


Answer = dict[str, Any] | Raw | Fail | Silent


class OpenpiPeer:
    """Serves on a free loopback port in a thread of its own; ``url`` once started.
    ``observations`` keeps what each request carried (decoded)."""

    def __init__(self, respond: Callable[[dict[str, Any], int], Answer],
                 metadata: dict[str, Any] | None = None) -> None:
        self.respond = respond
        self.metadata = metadata if metadata is not None else {"policy": "peer"}
        self.observations: list[dict[str, Any]] = []
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="openpi-peer",
                                        daemon=True)
        self.url = ""

    def start(self) -> OpenpiPeer:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._open(), self._loop).result(10)
        port = next(iter(self._server.sockets)).getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}"
        return self

    async def _open(self) -> Server:
        return await serve(self._handle, "127.0.0.1", 0, compression=None, max_size=None)

    async def _handle(self, ws: ServerConnection) -> None:
        self.connections += 1
        await ws.send(packb(self.metadata))
        try:
            while True:
                obs = unpackb(await ws.recv())
                self.observations.append(obs)
                answer = self.respond(obs, len(self.observations))
                if isinstance(answer, Raw):
                    await ws.send(answer.data)
                elif isinstance(answer, Fail):
                    await ws.send(answer.text)
                    await ws.close(code=1011, reason="Internal server error")
                    return
                elif isinstance(answer, Silent):
                    await ws.wait_closed()
                    return
                else:
                    await ws.send(packb(answer))
        except ConnectionClosed:
            return

    def stop(self) -> None:
        async def shut() -> None:
            assert self._server is not None
            self._server.close()
            await self._server.wait_closed()

        if self._server is not None:
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
            self._server = None
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> OpenpiPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
