"""The abuse suite of the ZeroMQ runtime (a live RuntimeServer on loopback, raw sockets as the
hostile peer): each hostile message gets an ERROR reply naming what was wrong within
``ANSWER_BUDGET_MS``, the runtime's memory grows by less than ``MEMORY_BUDGET`` per message,
and a HELLO is answered afterwards. ZeroMQ delivers whole messages only, so a slow sender is
one that stops inside the ZMTP greeting: it must not hold up anyone else."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Callable
from typing import Any

import pytest
import zmq
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime_bridge.zmq.wire import (
    MAGIC,
    Limits,
    Message,
    MessageType,
    WireCode,
    WireError,
    decode,
    encode,
)
from tests import hostile

ANSWER_BUDGET_MS = 5000
MEMORY_BUDGET = 20 << 20


def header(type_: int = MessageType.DISPATCH, n_arrays: int = 0, rid: int = 9,
           service: bytes = b"manip", cid: bytes = b"c1") -> bytes:
    return (struct.pack("!3sBBBQ", MAGIC, 1, type_, n_arrays, rid) + bytes([len(service)])
            + service + struct.pack("!H", len(cid)) + cid)


def nested(depth: int) -> bytes:
    return b'{"skill": "grasp", "params": ' + b"[" * depth + b"]" * depth + b"}"


HOSTILE = [
    ("JSON nested 400k deep", [header(), b"[" * 400_000 + b"]" * 400_000],
     WireCode.MALFORMED, "frame 1 is not a JSON object"),
    ("params nested 5000 deep", [header(), nested(5000)], WireCode.MALFORMED, ""),
    ("a body over the limit", [header(), b"{" + b" " * (2 << 20) + b"}"], WireCode.OVERSIZED,
     "the limit is 1048576"),
    ("an array announcing 2**40 elements", [header(n_arrays=1), json.dumps({"_arrays": [
        {"name": "a", "dtype": "<f8", "shape": [2**20, 2**20]}]}).encode(), b"\0" * 8],
     WireCode.TRUNCATED, "needs 8796093022208 bytes"),
    ("255 arrays announced", [header(n_arrays=255), b"{}"], WireCode.TRUNCATED,
     "the header promises"),
    ("a command id of 60k bytes", [header(cid=b"x" * 60_000), b"{}"], WireCode.OVERSIZED,
     "command id of 60000 bytes"),
    ("a dispatch of garbage fields", [header(), json.dumps({"skill": [1] * 10_000}).encode()],
     WireCode.INVALID_REQUEST, ""),
    ("an HTTP request", [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"], WireCode.MALFORMED,
     "frame 0 is not a harness-bt header"),
]


@pytest.fixture
def runtime(start_server: Callable[..., Any]) -> Any:
    return start_server(journal=None, lease_s=None)


def hello_answered(raw_socket: Callable[..., zmq.Socket], endpoint: str) -> bool:
    sock = raw_socket(zmq.DEALER, endpoint)
    sock.send_multipart(encode(Message(MessageType.HELLO, 1, "manip")))
    return bool(sock.poll(ANSWER_BUDGET_MS)) and decode(
        sock.recv_multipart()).type is MessageType.REPLY


@pytest.mark.parametrize("name, frames, code, text", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_each_hostile_message_gets_an_error_reply_and_the_runtime_serves_on(
        runtime: Any, raw_socket: Callable[..., zmq.Socket], name: str, frames: list[bytes],
        code: WireCode, text: str) -> None:
    endpoint = runtime.endpoints["bind"]
    assert hello_answered(raw_socket, endpoint)  # warmed up
    sock = raw_socket(zmq.DEALER, endpoint)
    before = hostile.rss_bytes()
    sock.send_multipart(frames)
    assert sock.poll(ANSWER_BUDGET_MS), f"{name}: no reply"
    error = decode(sock.recv_multipart())
    grown = hostile.rss_bytes() - before
    assert error.type is MessageType.ERROR
    assert error.body["code"] in (code, WireCode.INVALID_REQUEST), error.body
    assert text in error.body["message"] and len(error.body["message"]) < 2000, error.body
    assert grown < MEMORY_BUDGET, f"{name}: memory grew {grown >> 20} MB"
    assert hello_answered(raw_socket, endpoint)


def test_a_flood_of_garbage_is_answered_message_by_message_and_the_runtime_serves_on(
        runtime: Any, raw_socket: Callable[..., zmq.Socket]) -> None:
    endpoint = runtime.endpoints["bind"]
    sock = raw_socket(zmq.DEALER, endpoint)
    for n in range(2000):
        sock.send_multipart([b"garbage %d" % n])
    answers = 0
    while sock.poll(ANSWER_BUDGET_MS) and answers < 2000:
        assert decode(sock.recv_multipart()).type is MessageType.ERROR
        answers += 1
    assert answers == 2000
    assert hello_answered(raw_socket, endpoint)


def test_a_peer_stalled_inside_the_greeting_holds_up_nobody(
        runtime: Any, raw_socket: Callable[..., zmq.Socket]) -> None:
    endpoint = runtime.endpoints["bind"]
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as stalled:
        stalled.sendall(b"\xff\x00\x00\x00")  # the first bytes of a ZMTP signature, no more
        assert hello_answered(raw_socket, endpoint)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(body=st.binary(max_size=300), n_arrays=st.integers(0, 8),
       arrays=st.lists(st.binary(max_size=64), max_size=8))
def test_any_frames_after_a_valid_header_decode_or_get_a_wire_error(
        body: bytes, n_arrays: int, arrays: list[bytes]) -> None:
    try:
        decode([header(n_arrays=n_arrays), body, *arrays], Limits(max_body_bytes=4096))
    except WireError as exc:
        assert exc.code in set(WireCode) and len(exc.message) < 2000
