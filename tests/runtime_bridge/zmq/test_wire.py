"""The wire format: round trips, and a clear error for every way a message can be wrong."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from runtime_bridge.zmq.wire import (
    MAGIC,
    Limits,
    Message,
    MessageType,
    WireCode,
    WireError,
    decode,
    decode_route,
    encode,
    encode_route,
    encode_wrapped,
    split_envelope,
)


def frames_of(msg: Message) -> list[bytes]:
    return [bytes(f) for f in encode(msg)]


def test_round_trip_with_arrays_keeps_every_field():
    rgb = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    depth = np.linspace(0, 1, 8, dtype=np.float32).reshape(2, 4)
    msg = Message(MessageType.DISPATCH, 7, "manip", "run/0/grasp#1", {"a": [1, 2.5, None]},
                  {"rgb": rgb, "depth": depth})
    out = decode(frames_of(msg))
    assert (out.type, out.request_id, out.service, out.command_id, dict(out.body)) == (
        MessageType.DISPATCH, 7, "manip", "run/0/grasp#1", {"a": [1, 2.5, None]})
    np.testing.assert_array_equal(out.arrays["rgb"], rgb)
    np.testing.assert_array_equal(out.arrays["depth"], depth)
    assert out.arrays["rgb"].dtype == np.uint8 and not out.arrays["rgb"].flags.writeable


def test_wrapped_messages_carry_the_envelope_and_the_client_message():
    inner = frames_of(Message(MessageType.QUERY, 3, "manip", "c1"))
    out = decode([bytes(f) for f in encode_wrapped(MessageType.W_REQUEST, 3, "manip",
                                                   [b"\x00id", b""], inner)])
    assert out.route == (b"\x00id", b"") and out.inner is not None
    assert (out.inner.type, out.inner.command_id) == (MessageType.QUERY, "c1")
    assert decode_route(encode_route([b"a", b""])) == [b"a", b""]


def test_envelope_split_recognises_the_req_delimiter():
    head = frames_of(Message(MessageType.HELLO))
    assert split_envelope([b"id", b"", *head]) == ([b"id", b""], head)
    assert split_envelope([b"id", *head]) == ([b"id"], head)


def header(version: int = 1, type_: int = 4, n_arrays: int = 0, rid: int = 9,
           service: bytes = b"manip", cid: bytes = b"c") -> bytes:
    return (struct.pack("!3sBBBQ", MAGIC, version, type_, n_arrays, rid) + bytes([len(service)])
            + service + struct.pack("!H", len(cid)) + cid)


@pytest.mark.parametrize(("frames", "code", "text"), [
    ([], WireCode.TRUNCATED, "empty message: no header frame"),
    ([b"GET / HTTP/1.1", b"{}"], WireCode.MALFORMED, "frame 0 is not a harness-bt header"),
    ([MAGIC + b"\x01", b"{}"], WireCode.TRUNCATED, "header is 4 bytes, the fixed part alone is 14"),
    ([header(version=9), b"{}"], WireCode.UNSUPPORTED_VERSION,
     "protocol version 9 is not supported; this peer speaks version 1"),
    ([header(type_=99), b"{}"], WireCode.UNKNOWN_TYPE, "message type 99 is not one of"),
    ([header()[:-3], b"{}"], WireCode.TRUNCATED, "header ends inside the"),
    ([header() + b"xx", b"{}"], WireCode.MALFORMED, "2 stray bytes after the header"),
    ([header(service=b"ma nip"), b"{}"], WireCode.MALFORMED, "has characters outside"),
    ([header()], WireCode.TRUNCATED, "the header promises 2 frames (header, body, 0 arrays); 1"),
    ([header(), b"{}", b"extra"], WireCode.MALFORMED, "3 frames where the header promises 2"),
    ([header(), b"[1, 2]"], WireCode.MALFORMED, "frame 1 is JSON list, expected an object"),
    ([header(), b'{"a": NaN}'], WireCode.MALFORMED, "NaN is not a JSON number"),
    ([header(), b'{"a": '], WireCode.MALFORMED, "frame 1 is not a JSON object"),
    ([header(), b"\xff\xfe"], WireCode.MALFORMED, "frame 1 is not a JSON object"),
    ([header(), b"[" * 100_000 + b"]" * 100_000], WireCode.OVERSIZED, "body of 200000 bytes"),
    ([header(cid=b"x" * 600), b"{}"], WireCode.OVERSIZED, "command id of 600 bytes; the limit"),
    ([header(n_arrays=1), json.dumps({"_arrays": [{"name": "a", "dtype": "<f8",
                                                   "shape": [4]}]}).encode(), b"\0" * 16],
     WireCode.TRUNCATED, "'a' float64(4,) needs 32 bytes, the frame has 16"),
    ([header(n_arrays=1), json.dumps({"_arrays": [{"name": "a", "dtype": "|O",
                                                   "shape": [1]}]}).encode(), b"\0" * 8],
     WireCode.MALFORMED, "dtype object is not allowed"),
    ([header(n_arrays=1), b"{}", b"\0"], WireCode.MALFORMED, "_arrays must describe each"),
    ([header(n_arrays=40), b"{}", *([b""] * 40)], WireCode.OVERSIZED, "40 arrays; the limit"),
])
def test_bad_messages_get_a_clear_error(frames, code, text):
    with pytest.raises(WireError) as info:
        decode(frames, Limits(max_body_bytes=100_000))
    assert info.value.code == code
    assert text in info.value.message
    if len(frames) and frames[0].startswith(MAGIC) and len(frames[0]) >= 14:
        assert info.value.request_id == 9


def test_bodies_that_cannot_travel_are_refused_when_encoding():
    with pytest.raises(WireError, match="INVALID_REQUEST: the body cannot travel as JSON"):
        encode(Message(MessageType.REQUEST, body={"x": float("nan")}))
    with pytest.raises(WireError, match="only bool, int, uint and float travel"):
        encode(Message(MessageType.REQUEST, arrays={"o": np.array([object()])}))
