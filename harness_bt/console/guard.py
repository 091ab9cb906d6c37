"""The console's door: it serves only its own page.

Every request (the page, ``/state.json``, the WebSocket) must name the console in its
``Host`` header: a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``) or the address it
listens on, with its port, or a name allowed on purpose (``allowed_hosts``, for a deliberate
remote bind, e.g. behind a known DNS name). That refuses DNS rebinding: a foreign site whose
name resolves to this machine sends its own name as ``Host``. A request carrying an ``Origin``
(every browser WebSocket does, and every cross-site fetch) must come from such an address too,
so a page on another site (another host or another port) can neither open the feed nor read
the state. Bound beyond loopback, the run's token is needed to read as well as to steer:
``?token=`` on the page, the WebSocket and ``/state.json`` (or ``Authorization: Bearer``).

A refusal is HTTP 403 (401 for a missing or wrong token) with a line saying what was refused
and what to do; a refused WebSocket is closed before its handshake completes (the browser
sees the handshake fail).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import urllib.parse
from collections.abc import Iterable, MutableMapping
from typing import Any

__all__ = ["LOOPBACK_NAMES", "ConsoleDoor", "Doorman"]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def _split_host(value: str) -> tuple[str, int | None]:
    """``name:port`` / ``[v6]:port`` -> (lower-case name without brackets, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port = value.rpartition(":") if value.count(":") == 1 else (value, "", "")
    return name, (int(port) if port.isdigit() and len(port) <= 5 else None)


def _loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Doorman:
    """Decides whether a request may reach the console (see the module docstring)."""

    def __init__(self, host: str, port: int, token: str, *,
                 allowed_hosts: Iterable[str] = ()) -> None:
        self.port = port
        self.token = token
        self.names = set(LOOPBACK_NAMES) | {host.lower().strip("[]")} | {
            h.lower().strip("[]") for h in allowed_hosts}
        self.remote = not _loopback(host.lower().strip("[]"))

    def _ours(self, name: str, port: int | None) -> bool:
        return name in self.names and port == self.port

    def refusal(self, scope: MutableMapping[str, Any]) -> tuple[int, str, str] | None:
        """None when the request may pass, else (status, code, message)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", ())}
        host = headers.get("host", "")
        if not self._ours(*_split_host(host)):
            return (403, "FOREIGN_HOST", f"Host {host[:80]!r} is not this console "
                    f"(it answers to {', '.join(sorted(self.names))} on port {self.port}); "
                    "open the address harness run printed, or allow the name with "
                    "HARNESS_CONSOLE_HOSTS")
        origin = headers.get("origin")
        if origin is not None:
            parsed = urllib.parse.urlsplit(origin)
            try:
                port = parsed.port or {"http": 80, "https": 443}.get(parsed.scheme)
            except ValueError:
                port = None
            if parsed.scheme not in ("http", "https") or not self._ours(
                    (parsed.hostname or "").lower(), port):
                return (403, "FOREIGN_ORIGIN", f"a page from {origin[:80]!r} may not read or "
                        "steer this console; only its own page may")
        if self.remote:
            query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0]
            auth = headers.get("authorization", "")
            if auth.startswith("Bearer "):
                given = given or auth[7:]
            if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
                return (401, "BAD_TOKEN", ("no token" if not given else "wrong token")
                        + ": this console listens beyond loopback, so reading it needs the "
                        "run's token too (open the address harness run printed, with ?token=)")
        return None


class ConsoleDoor:
    """ASGI middleware applying a :class:`Doorman` to every HTTP request and WebSocket."""

    def __init__(self, app: Any, doorman: Doorman) -> None:
        self.app = app
        self.doorman = doorman
        self.refused = 0

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = self.doorman.refusal(scope)
            if refusal is not None:
                self.refused += 1
                status, code, message = refusal
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008,
                                "reason": code})
                    return
                body = json.dumps({"error": code, "message": message}).encode()
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
