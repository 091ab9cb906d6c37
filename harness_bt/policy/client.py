"""A client of the openpi WebSocket policy protocol.

The protocol: the client opens a WebSocket (``ws://host:port``); the server at once sends its
metadata (one msgpack map); then each request is an observation (a msgpack map of images,
state and prompt, arrays packed as in :mod:`harness_bt.policy.wire`) answered by one action
map (an action chunk, ``actions`` of shape (horizon, action_dim) by convention). A server that
fails sends the error as one *text* frame and closes the connection with code 1011.

:class:`PolicyClient` is synchronous and bounded in time: connecting, the metadata and each
reply have their timeouts, and every way a server can misbehave ends in a
:class:`~harness_bt.errors.BridgeError` whose code says which (``POLICY_UNREACHABLE``,
``POLICY_SILENT``, ``POLICY_SERVER_ERROR``, ``POLICY_CLOSED``, ``POLICY_TOO_LARGE``,
``POLICY_PROTOCOL``). After any error the connection is closed: a late reply can never be
taken for the answer to a later request.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI, PayloadTooBig
from websockets.sync.client import ClientConnection, connect

from harness_bt.errors import BridgeError
from harness_bt.policy.wire import DEFAULT_MAX_BYTES, pack, unpack_map

__all__ = ["PolicyClient"]

#: the server's text shown in an error, at most
_TEXT_SHOWN = 2000
_CLOSE_TOO_BIG = 1009


class PolicyClient:
    """One connection to a policy server. ``url``: ``ws://host:port`` (or ``host:port``);
    ``api_key``: sent as ``Authorization: Api-Key KEY`` when given, as openpi's client does."""

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0,
                 reply_timeout_s: float = 30.0, max_message_bytes: int = DEFAULT_MAX_BYTES,
                 api_key: str | None = None) -> None:
        self.url = url if url.startswith(("ws://", "wss://")) else f"ws://{url}"
        self.connect_timeout_s = connect_timeout_s
        self.reply_timeout_s = reply_timeout_s
        self.max_message_bytes = max_message_bytes
        self.api_key = api_key
        self.metadata: dict[str, Any] = {}
        self.requests = 0
        self._conn: ClientConnection | None = None
        self._stack: contextlib.ExitStack | None = None
        self._lock = threading.Lock()
        self._shut = False

    # ------------------------------------------------------------------ connection

    def connect(self) -> dict[str, Any]:
        """Open the connection and read the server's metadata (returned, and kept)."""
        self.close()
        headers = {"Authorization": f"Api-Key {self.api_key}"} if self.api_key else None
        stack = contextlib.ExitStack()
        try:
            if self._shut:
                raise self._shut_down()
            conn = stack.enter_context(connect(
                self.url, open_timeout=self.connect_timeout_s, close_timeout=1.0,
                max_size=self.max_message_bytes, compression=None,
                additional_headers=headers))
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise BridgeError(
                "POLICY_UNREACHABLE", f"no policy server answered at {self.url}: "
                f"{type(exc).__name__}: {exc}", where=self.url,
                fix="start one (harness policy serve --policy NAME --port P) or check the "
                    "skill's policy_url") from exc
        with self._lock:
            shut = self._shut
            if not shut:
                self._conn, self._stack = conn, stack
        if shut:  # shut down from another thread while connecting
            with contextlib.suppress(Exception):
                stack.close()
            raise self._shut_down()
        self.metadata = self._receive(conn, "metadata", self.connect_timeout_s)
        return self.metadata

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        """Close the connection (a later request connects again)."""
        with self._lock:
            stack, self._stack, self._conn = self._stack, None, None
        if stack is not None:
            with contextlib.suppress(Exception):
                stack.close()

    def shutdown(self) -> None:
        """Close for good, from any thread: a request waiting in another thread ends at once
        (``POLICY_CLOSED``), and so does any later one."""
        with self._lock:
            self._shut = True
        self.close()

    def _shut_down(self) -> BridgeError:
        return BridgeError("POLICY_CLOSED", f"the client of {self.url} was shut down",
                           where=self.url, fix="a stopped command asks nothing more")

    def __enter__(self) -> PolicyClient:
        if self._conn is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def infer(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """Send one observation; the server's action map."""
        if self._conn is None:
            self.connect()
        conn = self._conn
        if conn is None:
            raise self._shut_down()
        data = pack(dict(observation))
        try:
            conn.send(data)
        except ConnectionClosed as exc:
            self.close()
            raise self._closed(exc, "while the observation was sent") from exc
        self.requests += 1
        return self._receive(conn, "action chunk", self.reply_timeout_s)

    def _receive(self, conn: ClientConnection, what: str, timeout_s: float) -> dict[str, Any]:
        try:
            message = conn.recv(timeout=timeout_s)
        except TimeoutError as exc:
            self.close()
            raise BridgeError(
                "POLICY_SILENT", f"the policy server at {self.url} sent no {what} within "
                f"{timeout_s:g} s", where=self.url,
                fix="check that the server is alive and not overloaded, or raise the "
                    "timeout (reply_timeout_s)") from exc
        except ConnectionClosed as exc:
            self.close()
            raise self._closed(exc, f"before its {what}") from exc
        if isinstance(message, str):
            self.close()
            raise BridgeError(
                "POLICY_SERVER_ERROR", f"the policy server at {self.url} failed instead of "
                f"sending its {what}: {message[-_TEXT_SHOWN:]}", where=self.url,
                fix="read the server's error above; the server closed the connection")
        try:
            return unpack_map(message, what, max_bytes=self.max_message_bytes)
        except BridgeError:
            self.close()
            raise

    def _closed(self, exc: ConnectionClosed, when: str) -> BridgeError:
        code = exc.rcvd.code if exc.rcvd is not None else None
        sent = exc.sent.code if exc.sent is not None else None
        if _CLOSE_TOO_BIG in (code, sent) or isinstance(exc.__cause__, PayloadTooBig):
            return BridgeError(
                "POLICY_TOO_LARGE", f"the policy server at {self.url} sent a message over "
                f"the limit of {self.max_message_bytes} bytes {when}", where=self.url,
                fix="send smaller chunks, or raise max_message_bytes")
        reason = (f" (code {code}: {exc.rcvd.reason or 'no reason given'})"
                  if exc.rcvd is not None else "")
        return BridgeError(
            "POLICY_CLOSED", f"the policy server at {self.url} closed the connection "
            f"{when}{reason}", where=self.url,
            fix="see the server's log; a server error is sent as text before it closes")
