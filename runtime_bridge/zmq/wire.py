"""The harness-bt ZeroMQ wire format, version 1.

A message is a list of frames, parsed by this protocol and never by guessing positions::

    frame 0   header: b"HBT" | version u8 | type u8 | n_arrays u8 | request_id u64 (big
              endian) | service length u8 | service (ASCII) | command id length u16 | command id
    frame 1   body: one JSON object (UTF-8, no NaN / Infinity); ``_arrays`` describes the
              binary frames: ``[{"name", "dtype", "shape"}, ...]``
    frame 2.. one raw C-order buffer per array (``n_arrays`` of them, sizes checked)

The magic, the version byte and the request id never move, so any version can answer an
unknown one with a clear ``UNSUPPORTED_VERSION`` error that echoes the request id. Around a
message, a ROUTER sees an envelope: the peer's routing id and, from REQ peers, one empty
delimiter frame (a header is never empty, so an empty frame is always a delimiter). Worker
messages that carry a client's request (``W_REQUEST`` / ``W_REPLY``) are
``[header, route, <client message frames>]``; telemetry is ``[topic, <message frames>]``.
Nothing here unpickles anything; arrays are only ever plain numeric dtypes.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, cast

import numpy as np

from harness_bt.errors import BridgeError, HarnessError
from runtime_bridge.zmq import jsontext

__all__ = [
    "MAGIC",
    "PROTOCOL_VERSION",
    "Limits",
    "Message",
    "MessageType",
    "WireCode",
    "WireError",
    "decode",
    "decode_route",
    "encode",
    "encode_route",
    "encode_wrapped",
    "error_reply",
    "raise_for_error",
    "split_envelope",
]

PROTOCOL_VERSION = 1
MAGIC = b"HBT"
_FIXED = struct.Struct("!3sBBBQ")
_FIXED_SIZE = _FIXED.size
_U16 = struct.Struct("!H")
_SERVICE_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/")
_DTYPE_KINDS = frozenset("biuf")


class MessageType(IntEnum):
    HELLO = 1  # what a service is: protocol, telemetry endpoint, epoch, boot id
    DISPATCH = 2
    CANCEL = 3
    QUERY = 4
    HEARTBEAT = 5
    EVENTS = 6  # command events after a cursor
    REQUEST = 7  # a call to a non-runtime service (perception, ...): body is the service's
    SERVICES = 8  # asks the broker itself which services it knows
    REPLY = 32
    ERROR = 33
    TELEMETRY = 48
    W_READY = 64  # worker -> broker: I serve ``service``
    W_REQUEST = 65  # broker -> worker: a client's request
    W_REPLY = 66  # worker -> broker: the reply to route back
    W_HEARTBEAT = 67
    W_DISCONNECT = 68


_TYPES = {t.value: t for t in MessageType}
WORKER_TYPES = frozenset({MessageType.W_READY, MessageType.W_REQUEST, MessageType.W_REPLY,
                          MessageType.W_HEARTBEAT, MessageType.W_DISCONNECT})


_WRAPPED = frozenset({MessageType.W_REQUEST, MessageType.W_REPLY})
_REPLY = MessageType.REPLY  # a member looked up on its class costs about 0.1 us each time


class WireCode(StrEnum):
    MALFORMED = "MALFORMED"  # not a harness-bt message, or a field of the wrong kind
    TRUNCATED = "TRUNCATED"  # fewer bytes or frames than the header promises
    OVERSIZED = "OVERSIZED"  # past a configured size limit
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    NO_SUCH_SERVICE = "NO_SUCH_SERVICE"  # the service was never registered
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"  # registered, but no live worker now
    WORKER_LOST = "WORKER_LOST"  # the worker died while handling it: it may or may not have run
    BROKER_BUSY = "BROKER_BUSY"  # the service's queue is full
    SERVICE_TIMEOUT = "SERVICE_TIMEOUT"  # waited in the queue past its time to live
    INVALID_REQUEST = "INVALID_REQUEST"  # well-formed message, unusable content
    INTERNAL = "INTERNAL"
    NO_REPLY = "NO_REPLY"  # client side: every try timed out
    OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"  # client side: a side-effecting call got no answer


class WireError(BridgeError):
    """A message that could not be sent, parsed or served. ``code`` is a :class:`WireCode`
    value (or a service's own code); ``request_id`` the request it answers, when known."""

    def __init__(self, code: str, message: str, *, request_id: int = 0, **kwargs: Any) -> None:
        self.request_id = request_id
        super().__init__(str(code), message, **kwargs)


@dataclass(frozen=True, slots=True)
class Limits:
    """Sizes a receiver accepts; past them a message gets an ``OVERSIZED`` error reply.
    ``hard_cap_bytes`` is set as the socket's MAXMSGSIZE: a single frame past it makes ZeroMQ
    drop the connection (a peer that sends that much is not speaking this protocol)."""

    max_body_bytes: int = 1 << 20
    max_array_bytes: int = 64 << 20
    max_arrays: int = 16
    max_id_bytes: int = 512
    max_ndim: int = 8

    @property
    def hard_cap_bytes(self) -> int:
        return max(self.max_body_bytes, self.max_array_bytes) + (1 << 16)


@dataclass(slots=True, eq=False)
class Message:
    """One decoded message. ``arrays`` are read-only views of the received buffers. Treat a
    message as a value: it is not frozen only because a frozen dataclass's ``__init__`` costs
    four times as much, and a round trip builds four of them."""

    type: MessageType
    request_id: int = 0
    service: str = ""
    command_id: str = ""
    body: Mapping[str, Any] = field(default_factory=dict)
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    version: int = PROTOCOL_VERSION
    #: W_REQUEST / W_REPLY only: the client's envelope and the client message it carries
    route: tuple[bytes, ...] = ()
    inner: Message | None = None
    inner_frames: tuple[bytes, ...] = ()

    def reply(self, body: Mapping[str, Any] | None = None, **arrays: np.ndarray) -> Message:
        return Message(_REPLY, self.request_id, self.service, self.command_id, body or {},
                       arrays)


def encode_wrapped(type_: MessageType, request_id: int, service: str,
                   envelope: Sequence[bytes], inner: Sequence[bytes | memoryview]
                   ) -> list[bytes | memoryview]:
    """A W_REQUEST / W_REPLY: ``[header, route, <inner message frames>]``."""
    header = encode(Message(type_, request_id, service))[0]
    return [header, encode_route(envelope), *inner]


def encode(msg: Message) -> list[bytes | memoryview]:
    service = _SERVICE_BYTES.get(msg.service)
    if service is None:
        service = _service_bytes(msg.service)
    cid = msg.command_id.encode("utf-8")
    if len(cid) > 0xFFFF:
        raise WireError(WireCode.OVERSIZED, f"command id of {len(cid)} bytes is too long",
                        command_id=msg.command_id)
    if len(msg.arrays) > 255:
        raise WireError(WireCode.OVERSIZED, f"{len(msg.arrays)} arrays; at most 255 per message")
    header = b"".join((
        _FIXED.pack(MAGIC, msg.version, int(msg.type), len(msg.arrays), msg.request_id),
        bytes((len(service),)), service, _U16.pack(len(cid)), cid,
    ))
    body: Mapping[str, Any] = msg.body
    blobs: list[bytes | memoryview] = []
    if msg.arrays:
        described = []
        for name, value in msg.arrays.items():
            arr = np.ascontiguousarray(value)
            if arr.dtype.kind not in _DTYPE_KINDS:
                raise WireError(WireCode.INVALID_REQUEST, f"array {name!r} has dtype "
                                f"{arr.dtype}; only bool, int, uint and float travel")
            described.append({"name": name, "dtype": arr.dtype.str, "shape": list(arr.shape)})
            blobs.append(arr.data.cast("B") if arr.ndim else arr.tobytes())
        body = {**body, "_arrays": described}
    try:
        text = jsontext.dumps(body)
    except (TypeError, ValueError) as exc:
        raise WireError(WireCode.INVALID_REQUEST, f"the body cannot travel as JSON: {exc}",
                        command_id=msg.command_id or None,
                        fix="send only str, int, finite float, bool, None, lists and dicts; "
                        "arrays go in `arrays`") from exc
    return [header, text, *blobs]


#: service names already checked for sending, and their header bytes
_SERVICE_BYTES: dict[str, bytes] = {}


def _service_bytes(name: str) -> bytes:
    raw = name.encode("ascii", errors="replace")
    if len(raw) > 255 or not set(raw) <= _SERVICE_CHARS:
        raise WireError(WireCode.INVALID_REQUEST, f"service name {name!r} must be at most "
                        "255 characters of letters, digits and _ . - /")
    if len(_SERVICE_BYTES) < 256:
        _SERVICE_BYTES[name] = raw
    return raw


def decode(frames: Sequence[bytes | memoryview], limits: Limits = Limits()) -> Message:
    """Parse one message; raises :class:`WireError` (MALFORMED, TRUNCATED, OVERSIZED,
    UNSUPPORTED_VERSION, UNKNOWN_TYPE) saying which frame and what was wrong."""
    if not frames:
        raise WireError(WireCode.TRUNCATED, "empty message: no header frame")
    head = bytes(frames[0])
    size = len(head)
    if size == 0 or head[:3] != MAGIC[:size]:
        raise WireError(WireCode.MALFORMED, f"frame 0 is not a harness-bt header: starts with "
                        f"{head[:8]!r}, expected {MAGIC!r}", fix="speak the harness-bt wire "
                        "protocol (runtime_bridge.zmq.wire)")
    if size < _FIXED_SIZE:
        raise WireError(WireCode.TRUNCATED, f"header is {size} bytes, the fixed part alone "
                        f"is {_FIXED_SIZE}")
    _, version, type_, n_arrays, request_id = _FIXED.unpack_from(head)
    if version != PROTOCOL_VERSION:
        raise WireError(WireCode.UNSUPPORTED_VERSION, f"protocol version {version} is not "
                        f"supported; this peer speaks version {PROTOCOL_VERSION}",
                        request_id=request_id, details={"supported": [PROTOCOL_VERSION]},
                        fix="upgrade the older side so both speak the same version")
    mtype = _TYPES.get(type_)
    if mtype is None:
        raise WireError(WireCode.UNKNOWN_TYPE, f"message type {type_} is not one of "
                        f"{sorted(_TYPES)}", request_id=request_id)
    pos = _FIXED_SIZE
    if size < pos + 1:
        raise WireError(WireCode.TRUNCATED, "header ends before the service length",
                        request_id=request_id)
    n = head[pos]
    service_raw = head[pos + 1: pos + 1 + n]
    pos += 1 + n
    if len(service_raw) < n or size < pos + 2:
        raise WireError(WireCode.TRUNCATED, "header ends inside the service name",
                        request_id=request_id)
    service = _SERVICES.get(service_raw)
    if service is None:
        service = _service_name(service_raw, request_id)
    (m,) = _U16.unpack_from(head, pos)
    pos += 2
    if m > limits.max_id_bytes:
        raise WireError(WireCode.OVERSIZED, f"command id of {m} bytes; the limit is "
                        f"{limits.max_id_bytes}", request_id=request_id)
    cid_raw = head[pos: pos + m]
    if len(cid_raw) < m:
        raise WireError(WireCode.TRUNCATED, f"header ends inside the command id ({len(cid_raw)} "
                        f"of {m} bytes)", request_id=request_id)
    if size > pos + m:
        raise WireError(WireCode.MALFORMED, f"{size - pos - m} stray bytes after the "
                        "header", request_id=request_id)
    try:
        command_id = cid_raw.decode("utf-8")
    except UnicodeDecodeError:
        raise WireError(WireCode.MALFORMED, "the command id is not UTF-8",
                        request_id=request_id) from None
    if mtype in _WRAPPED:
        if len(frames) < 3:
            raise WireError(WireCode.TRUNCATED, f"a {mtype.name} is [header, route, message...]; "
                            f"{len(frames)} frames arrived", request_id=request_id)
        inner = decode(frames[2:], limits)
        if inner.type in WORKER_TYPES:
            raise WireError(WireCode.MALFORMED, f"a {mtype.name} cannot carry a {inner.type.name}",
                            request_id=request_id)
        return Message(mtype, request_id, service, command_id, {}, {},
                       version, tuple(decode_route(frames[1])), inner,
                       tuple(bytes(f) for f in frames[2:]))
    want = 2 + n_arrays
    if len(frames) < want:
        raise WireError(WireCode.TRUNCATED, f"the header promises {want} frames (header, body, "
                        f"{n_arrays} arrays); {len(frames)} arrived", request_id=request_id)
    if len(frames) > want:
        raise WireError(WireCode.MALFORMED, f"{len(frames)} frames where the header promises "
                        f"{want}", request_id=request_id)
    if n_arrays > limits.max_arrays:
        raise WireError(WireCode.OVERSIZED, f"{n_arrays} arrays; the limit is "
                        f"{limits.max_arrays}", request_id=request_id)
    body = _decode_body(frames[1], limits, request_id)
    spec = body.pop("_arrays", None)
    arrays = ({} if spec is None and not n_arrays
              else _decode_arrays(spec, frames[2:], limits, request_id))
    return Message(mtype, request_id, service, command_id, body, arrays, version)


#: service names already checked, as the header carries them (a runtime sees a handful)
_SERVICES: dict[bytes, str] = {}


def _service_name(raw: bytes, request_id: int) -> str:
    if not set(raw) <= _SERVICE_CHARS:
        raise WireError(WireCode.MALFORMED, f"service name {raw!r} has characters "
                        "outside letters, digits and _ . - /", request_id=request_id)
    name = raw.decode("ascii")
    if len(_SERVICES) < 256:
        _SERVICES[raw] = name
    return name


def _decode_body(frame: bytes | memoryview, limits: Limits, request_id: int
                 ) -> dict[str, Any]:
    if len(frame) > limits.max_body_bytes:
        raise WireError(WireCode.OVERSIZED, f"body of {len(frame)} bytes; the limit is "
                        f"{limits.max_body_bytes}", request_id=request_id,
                        fix="send large data as array frames, or raise max_body_bytes")
    try:
        body = jsontext.loads(frame)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError(WireCode.MALFORMED, f"frame 1 is not a JSON object: {exc}",
                        request_id=request_id) from None
    if not isinstance(body, dict):
        raise WireError(WireCode.MALFORMED, f"frame 1 is JSON {type(body).__name__}, expected "
                        "an object", request_id=request_id)
    return body


def _decode_arrays(spec: Any, frames: Sequence[bytes | memoryview], limits: Limits,
                   request_id: int) -> dict[str, np.ndarray]:
    if not frames and spec is None:
        return {}
    if not isinstance(spec, list) or len(spec) != len(frames):
        raise WireError(WireCode.MALFORMED, f"_arrays must describe each of the {len(frames)} "
                        f"array frames, got {spec!r:.200}", request_id=request_id)
    out: dict[str, np.ndarray] = {}
    for i, (desc, frame) in enumerate(zip(spec, frames, strict=True)):
        where = f"array frame {i + 2}"
        try:
            name, dtype, shape = str(desc["name"]), np.dtype(str(desc["dtype"])), desc["shape"]
        except (TypeError, KeyError, ValueError) as exc:
            raise WireError(WireCode.MALFORMED, f"{where}: bad descriptor {desc!r:.200} ({exc})",
                            request_id=request_id) from None
        if dtype.kind not in _DTYPE_KINDS or dtype.itemsize > 8:
            raise WireError(WireCode.MALFORMED, f"{where}: dtype {dtype} is not allowed (only "
                            "bool, int, uint, float)", request_id=request_id)
        if (not isinstance(shape, list) or len(shape) > limits.max_ndim
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                           for d in shape)):
            raise WireError(WireCode.MALFORMED, f"{where}: shape {shape!r:.100} must be a list of "
                            f"at most {limits.max_ndim} non-negative ints", request_id=request_id)
        if len(frame) > limits.max_array_bytes:
            raise WireError(WireCode.OVERSIZED, f"{where}: {len(frame)} bytes; the limit is "
                            f"{limits.max_array_bytes}", request_id=request_id)
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if expected != len(frame):
            code = WireCode.TRUNCATED if len(frame) < expected else WireCode.MALFORMED
            raise WireError(code, f"{where}: {name!r} {dtype}{tuple(shape)} needs {expected} "
                            f"bytes, the frame has {len(frame)}", request_id=request_id)
        out[name] = np.frombuffer(frame, dtype=dtype).reshape(shape)
    return out


def split_envelope(frames: Sequence[bytes | memoryview]
                   ) -> tuple[list[bytes], list[bytes | memoryview]]:
    """A ROUTER's message as (envelope, message): the routing id, plus the empty delimiter a
    REQ peer adds (a header is never empty, so the delimiter cannot be mistaken for one)."""
    if not frames:
        return [], []
    cut = 2 if len(frames) > 1 and len(frames[1]) == 0 else 1
    # a routing id is at most 255 bytes, so it always arrives as bytes (recv_frames)
    return cast(list[bytes], list(frames[:cut])), list(frames[cut:])


def encode_route(envelope: Sequence[bytes]) -> bytes:
    """An envelope packed into one frame (count u8, then u16 length + bytes per frame)."""
    parts = [bytes((len(envelope),))]
    for f in envelope:
        parts.append(_U16.pack(len(f)))
        parts.append(bytes(f))
    return b"".join(parts)


def decode_route(frame: bytes | memoryview) -> list[bytes]:
    frame = bytes(frame)
    if not frame:
        raise WireError(WireCode.MALFORMED, "empty route frame")
    count, pos, out = frame[0], 1, []
    for _ in range(count):
        if pos + 2 > len(frame):
            raise WireError(WireCode.TRUNCATED, "route frame ends inside a length")
        (n,) = _U16.unpack_from(frame, pos)
        pos += 2
        if pos + n > len(frame):
            raise WireError(WireCode.TRUNCATED, "route frame ends inside an id")
        out.append(frame[pos: pos + n])
        pos += n
    if pos != len(frame):
        raise WireError(WireCode.MALFORMED, "stray bytes after the route")
    return out


def error_reply(request_id: int, error: HarnessError, *, service: str = "",
                command_id: str = "") -> Message:
    """The ERROR message that answers ``request_id`` with ``error``'s fields."""
    return Message(MessageType.ERROR, request_id, service, command_id, error.to_dict())


def raise_for_error(msg: Message) -> Message:
    """Return a REPLY; raise the :class:`WireError` an ERROR carries."""
    if msg.type is MessageType.ERROR:
        body = msg.body
        raise WireError(str(body.get("code", WireCode.INTERNAL)),
                        str(body.get("message", "the peer sent an error without a message")),
                        request_id=msg.request_id, where=body.get("where"), fix=body.get("fix"),
                        command_id=body.get("command_id") or msg.command_id or None,
                        details=body.get("details") if isinstance(body.get("details"), dict)
                        else None)
    return msg
