"""Every door bounded: the one request budget of the servers (the simulator's GenManip routes,
the live console, the policy server).

A server hands every request through the same steps before anything else sees it:

1. **Admission** (:class:`Admission`, and :class:`AdmissionMiddleware` for ASGI apps): at most
   ``max_connections`` requests or sockets at once and at most ``max_bytes_in_flight`` bytes of
   bodies held at once; past either the request is refused at once (HTTP 503, WebSocket close
   1013) with a message naming the limit. A body is read within ``body_timeout_s`` (408) and
   at most ``max_body_bytes`` long (413).
2. **Decoding off the event loop** (:func:`off_loop`), so one request being decoded never
   holds up another.
3. **Structure** (:func:`measure`): the decoded value is walked once per distinct object,
   without recursion, and refused (400) when it nests deeper than ``max_depth``, holds more
   than ``max_elements`` values or ``max_text_bytes`` of text *counted as if every shared
   reference were a copy* (a 200-byte pickle of a tuple built from shared references is
   2**depth values when printed), or contains a cycle. Identifiers (worker ids) are short
   strings (:func:`check_id`).
4. **Bounded diagnostics** (:func:`bounded`): an error message quotes at most ``limit``
   characters of an untrusted value and never builds its whole text first (``str(x)[:120]``
   would).

Refusals are :class:`RequestRefused` errors: a code, the offending value (bounded), where, and
what to do, plus the HTTP status the server answers with.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, TypeVar

from harness_bt.errors import BridgeError, DefinitionError

__all__ = ["Admission", "AdmissionMiddleware", "RequestBudget", "RequestRefused", "Shape",
           "bounded", "check_id", "loads_json", "measure", "off_loop"]

T = TypeVar("T")
_SCALARS = (str, bytes, bytearray, int, float, bool, type(None), complex)
_CONTAINERS = (dict, list, tuple, set, frozenset)


@dataclass(frozen=True)
class RequestBudget:
    """The limits of one server's doors (see the module docstring). Defaults suit the
    GenManip routes; the console and the policy server pass their own."""

    max_body_bytes: int = 8 << 20
    max_depth: int = 32
    max_elements: int = 200_000
    max_text_bytes: int = 16 << 20
    max_id_chars: int = 64
    body_timeout_s: float = 10.0
    max_connections: int = 64
    max_bytes_in_flight: int = 64 << 20

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_depth", "max_elements", "max_text_bytes",
                     "max_id_chars", "max_connections", "max_bytes_in_flight"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise DefinitionError("INVALID_OPTION", f"request budget {name}={value!r} is "
                                      "not a positive integer", where=f"RequestBudget.{name}",
                                      fix=f"pass a positive integer {name}")
        if not self.body_timeout_s > 0:
            raise DefinitionError("INVALID_OPTION", f"request budget body_timeout_s="
                                  f"{self.body_timeout_s!r} is not positive",
                                  where="RequestBudget.body_timeout_s",
                                  fix="pass a positive number of seconds")


class RequestRefused(BridgeError):
    """A request was refused at a server's door; ``status`` is the HTTP status answered
    (400 malformed, 408 too slow, 413 too large, 503 server busy)."""

    def __init__(self, code: str, message: str, *, status: int = 400, where: str | None = None,
                 fix: str | None = None, details: MutableMapping[str, Any] | None = None
                 ) -> None:
        self.status = status
        super().__init__(code, message, where=where, fix=fix, details=details)


# ---------------------------------------------------------------- bounded formatting


def bounded(value: Any, limit: int = 120) -> str:
    """A repr-like text of ``value`` of at most about ``limit`` characters, built without
    ever formatting ``value`` whole (shared references, huge strings and ints, deep nesting
    all cost at most ``limit`` steps)."""
    out: list[str] = []
    size = 0
    # an explicit stack of pending pieces: a str is literal text, anything else a value
    stack: list[Any] = [_Value(value)]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, str):
            piece = item
        else:
            piece, children = _piece(item.value, limit - size)
            stack.extend(reversed(children))
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    if stack or len(text) > limit:
        return text[:limit] + "..."
    return text


class _Value:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _piece(value: Any, room: int) -> tuple[str, list[Any]]:
    """The text of ``value`` up to its first child, and what follows (values and text)."""
    room = max(room, 8)
    if isinstance(value, str | bytes | bytearray):
        head = repr(value[:room])
        return (head if len(value) <= room else head + f"...({len(value)} long)"), []
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return repr(value), []
    if isinstance(value, int):
        return (repr(value) if value.bit_length() <= 128
                else f"<int of {value.bit_length()} bits>"), []
    if isinstance(value, dict):
        items: list[Any] = []
        for i, (k, v) in enumerate(value.items()):
            if i >= room:
                items.append(", ...")
                break
            items += [", "] if i else []
            items += [_Value(k), ": ", _Value(v)]
        return "{", [*items, "}"]
    if isinstance(value, list | tuple | set | frozenset):
        opening, closing = {list: ("[", "]"), tuple: ("(", ")")}.get(type(value), ("{", "}"))
        items = []
        for i, v in enumerate(value):
            if i >= room:
                items.append(", ...")
                break
            items += [", "] if i else []
            items.append(_Value(v))
        if isinstance(value, tuple) and len(value) == 1:
            items.append(",")
        return opening, [*items, closing]
    return f"<{type(value).__name__}>", []


# ---------------------------------------------------------------- structure


@dataclass(frozen=True)
class Shape:
    """What :func:`measure` found: the deepest nesting, the values and the text bytes as if
    every shared reference were a copy, and how many distinct objects that took."""

    depth: int
    elements: int
    text_bytes: int
    distinct: int


def measure(value: Any, budget: RequestBudget, *, where: str = "body") -> Shape:
    """Walk ``value`` once per distinct object (no recursion) and refuse it (400) when it
    nests deeper than the budget, expands to too many values or too much text, contains a
    cycle, or holds anything but builtin containers and scalars."""
    # post-order over the object graph; id -> (depth, elements, text) once an object is done
    done: dict[int, tuple[int, int, int]] = {}
    open_: set[int] = set()
    keep: list[Any] = []  # keeps every visited object alive, so no id is reused meanwhile
    stack: list[tuple[Any, bool]] = [(value, False)]
    cap_e, cap_t = budget.max_elements, budget.max_text_bytes
    while stack:
        obj, expanded = stack.pop()
        key = id(obj)
        if not expanded:
            if key in done:
                continue
            if isinstance(obj, _SCALARS):
                text = len(obj) if isinstance(obj, str | bytes | bytearray) else 0
                done[key] = (0, 1, text)
                keep.append(obj)
                continue
            if not isinstance(obj, _CONTAINERS):
                raise RequestRefused("BAD_VALUE", f"{where} holds a {type(obj).__name__}; only "
                                     "dict, list, tuple, set, str, bytes, numbers, booleans "
                                     "and None are read", where=where,
                                     fix="send plain builtin values")
            if key in open_:
                raise RequestRefused("CYCLE", f"{where} contains a container that holds "
                                     "itself", where=where, fix="send a tree, not a cycle")
            if len(open_) >= budget.max_depth:
                raise _too_deep(where, budget)
            open_.add(key)
            keep.append(obj)
            stack.append((obj, True))
            for child in _children(obj):
                if id(child) not in done:
                    stack.append((child, False))
            continue
        open_.discard(key)
        depth, elements, text = 0, 1, 0
        for child in _children(obj):
            d, e, t = done[id(child)]
            depth = max(depth, d)
            elements = min(elements + e, cap_e + 1)
            text = min(text + t, cap_t + 1)
        depth += 1
        if depth > budget.max_depth:
            raise _too_deep(where, budget)
        if elements > cap_e:
            raise RequestRefused("TOO_MANY_VALUES", f"{where} expands to more than {cap_e} "
                                 "values (shared references count once per use)", where=where,
                                 fix="send each value once; do not repeat references",
                                 details={"limit": cap_e})
        if text > cap_t:
            raise RequestRefused("TOO_MUCH_TEXT", f"{where} expands to more than {cap_t} "
                                 "bytes of text (shared references count once per use)",
                                 where=where, fix="send each string once",
                                 details={"limit": cap_t})
        done[key] = (depth, elements, text)
    depth, elements, text = done[id(value)]
    return Shape(depth, elements, text, len(done))


def _children(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [x for kv in obj.items() for x in kv]
    return list(obj)


def _too_deep(where: str, budget: RequestBudget) -> RequestRefused:
    return RequestRefused("TOO_DEEP", f"{where} nests containers deeper than "
                          f"{budget.max_depth} levels", where=where,
                          fix="send a flatter structure", details={"limit": budget.max_depth})


def check_id(value: Any, budget: RequestBudget, *, where: str, what: str = "worker id") -> str:
    """``value`` when it is a non-empty printable string of at most ``max_id_chars``."""
    if not isinstance(value, str) or not value or len(value) > budget.max_id_chars \
            or not value.isprintable():
        raise RequestRefused("BAD_ID", f"{where}: {what} {bounded(value, 60)} is not a "
                             f"printable string of 1 to {budget.max_id_chars} characters",
                             where=where, fix=f"send each {what} as a short string, e.g. '0'")
    return value


def loads_json(data: bytes | str, budget: RequestBudget, *, where: str = "body") -> Any:
    """JSON of at most ``max_body_bytes``, measured (see :func:`measure`)."""
    if len(data) > budget.max_body_bytes:
        raise RequestRefused("BODY_TOO_LARGE", f"{where} is {len(data)} bytes, over the limit "
                             f"of {budget.max_body_bytes}", status=413, where=where,
                             fix="send a smaller message")
    try:
        value = json.loads(data)
    except RecursionError:
        raise _too_deep(where, budget) from None
    except ValueError as exc:
        raise RequestRefused("BAD_JSON", f"{where} is not JSON ({bounded(str(exc), 160)})",
                             where=where, fix="send a JSON document") from None
    measure(value, budget, where=where)
    return value


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the event loop's worker threads (decoding never holds up the loop)."""
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


# ---------------------------------------------------------------- admission


class Admission:
    """Counts the connections and the body bytes a server holds at once (thread-safe)."""

    def __init__(self, budget: RequestBudget, *, server: str = "server") -> None:
        self.budget = budget
        self.server = server
        self.connections = 0
        self.bytes_in_flight = 0
        self.refused = 0
        self._lock = threading.Lock()

    def enter(self, where: str) -> None:
        """One more connection, or :class:`RequestRefused` (503) past ``max_connections``."""
        with self._lock:
            if self.connections >= self.budget.max_connections:
                self.refused += 1
                raise RequestRefused(
                    "SERVER_BUSY", f"{self.server} holds {self.connections} connections, its "
                    f"limit (max_connections={self.budget.max_connections})", status=503,
                    where=where, fix="retry shortly, close idle connections, or raise the "
                    "server's connection limit")
            self.connections += 1

    def leave(self) -> None:
        with self._lock:
            self.connections -= 1

    def take(self, nbytes: int, where: str) -> None:
        """Hold ``nbytes`` more, or :class:`RequestRefused` (503) past
        ``max_bytes_in_flight``."""
        with self._lock:
            if self.bytes_in_flight + nbytes > self.budget.max_bytes_in_flight:
                self.refused += 1
                raise RequestRefused(
                    "SERVER_BUSY", f"{self.server} holds {self.bytes_in_flight} bytes of "
                    f"requests; {nbytes} more would pass its limit (max_bytes_in_flight="
                    f"{self.budget.max_bytes_in_flight})", status=503, where=where,
                    fix="retry shortly, or send smaller requests")
            self.bytes_in_flight += nbytes

    def try_take(self, nbytes: int) -> bool:
        """Hold ``nbytes`` more when that stays within the limit (True), else nothing."""
        with self._lock:
            if self.bytes_in_flight + nbytes > self.budget.max_bytes_in_flight:
                return False
            self.bytes_in_flight += nbytes
            return True

    def give(self, nbytes: int) -> None:
        with self._lock:
            self.bytes_in_flight -= nbytes


Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class AdmissionMiddleware:
    """ASGI middleware applying :class:`Admission` to every HTTP request and WebSocket, and
    the body limits (size, ``body_timeout_s``) to every HTTP body. A :class:`RequestRefused`
    raised by the app before it answered is answered as JSON ``{"detail", "error"}`` with the
    error's status."""

    def __init__(self, app: Any, admission: Admission) -> None:
        self.app = app
        self.admission = admission

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive,
                       send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        where = str(scope.get("path", "/"))[:200]
        try:
            self.admission.enter(where)
        except RequestRefused as exc:
            await _refuse(scope, send, exc)
            return
        held = 0
        started = False
        budget = self.admission.budget
        deadline = asyncio.get_running_loop().time() + budget.body_timeout_s
        body = 0

        async def receive_bounded() -> MutableMapping[str, Any]:
            nonlocal held, body
            if scope["type"] != "http":
                return await receive()
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                message = await asyncio.wait_for(receive(), max(remaining, 0.001))
            except TimeoutError:
                raise RequestRefused("BODY_TIMEOUT", f"{where}: the body did not arrive within "
                                     f"{budget.body_timeout_s:g} s ({body} bytes came)",
                                     status=408, where=where,
                                     fix="send the whole request at once") from None
            chunk = len(message.get("body", b"")) if message["type"] == "http.request" else 0
            if chunk:
                body += chunk
                if body > budget.max_body_bytes:
                    raise RequestRefused("BODY_TOO_LARGE", f"{where}: the body is over the "
                                         f"limit of {budget.max_body_bytes} bytes", status=413,
                                         where=where, fix="send a smaller request")
                self.admission.take(chunk, where)
                held += chunk
            return message

        async def send_marking(message: MutableMapping[str, Any]) -> None:
            nonlocal started
            if message["type"] in ("http.response.start", "websocket.accept",
                                   "websocket.close"):
                started = True
            await send(message)

        try:
            declared = _declared_length(scope)
            if declared is not None and declared > budget.max_body_bytes:
                raise RequestRefused("BODY_TOO_LARGE", f"{where}: a body of {declared} bytes "
                                     f"is over the limit of {budget.max_body_bytes} bytes",
                                     status=413, where=where, fix="send a smaller request")
            await self.app(scope, receive_bounded, send_marking)
        except RequestRefused as exc:
            if started:
                raise
            await _refuse(scope, send, exc)
        finally:
            self.admission.give(held)
            self.admission.leave()


def _declared_length(scope: MutableMapping[str, Any]) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() and len(text) < 19 else None
    return None


async def _refuse(scope: MutableMapping[str, Any], send: Send, exc: RequestRefused) -> None:
    if scope["type"] == "websocket":
        # before the handshake: answered as HTTP (ASGI websocket.http.response is optional),
        # else a close with "try again later" and the reason
        await send({"type": "websocket.close", "code": 1013 if exc.status == 503 else 1008,
                    "reason": str(exc)[:120]})
        return
    body = json.dumps({"detail": str(exc), "error": exc.to_dict()}).encode()
    await send({"type": "http.response.start", "status": exc.status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
