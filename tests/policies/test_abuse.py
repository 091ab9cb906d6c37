"""The abuse suite of the policy server: 16 connections sending maximum frames keep its memory
under a stated bound; connections past the cap are refused at the handshake; an observation
that finds no room is refused 1013 after waiting unread; a slow sender is closed; hostile
frames are answered with their reason; and the server serves on after each.

The memory bound (``RSS_BOUND``): the server's peak resident memory grows by at most one
frame per connection (measured: each connection keeps about its last observation's worth
until its next one, inside the WebSocket library) plus four times ``max_bytes_in_flight`` (the
reader's buffer, the frame, its unmasked payload and the decoded arrays of each observation
in flight) plus 32 MiB of slack for the interpreter.
"""

from __future__ import annotations

import concurrent.futures
import json
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from harness_bt.errors import BridgeError
from harness_bt.policy.wire import pack, unpack, unpack_map
from policies.server import PolicyServer, PolicyServerSettings
from tests.conftest import Processes

MIB = 1 << 20
FRAME = 8 * MIB
IN_FLIGHT = 16 * MIB
CONNECTIONS = 16
RSS_BOUND = CONNECTIONS * FRAME + 4 * IN_FLIGHT + 32 * MIB
TIMEOUT_S = 60.0

SERVER = f"""
import json, os
from policies.server import PolicyServer, PolicyServerSettings

class Echo:
    def infer(self, observation):
        return {{"size": len(observation["image"])}}

server = PolicyServer(Echo, PolicyServerSettings(
    max_message_bytes={FRAME}, max_bytes_in_flight={IN_FLIGHT},
    max_connections={CONNECTIONS}, busy_wait_s=120))
server.start()
print(json.dumps({{"port": server.port, "pid": os.getpid()}}), flush=True)
import threading
threading.Event().wait()  # until killed
"""


def _status(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def test_sixteen_connections_sending_maximum_frames_keep_the_server_under_its_memory_bound(
        processes: Processes) -> None:
    proc = processes.start(sys.executable, "-c", SERVER)
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    base = _status(ready["pid"])["VmRSS"]
    frame = pack({"image": b"\x01" * (FRAME - 64)})
    assert FRAME - 1024 < len(frame) <= FRAME

    def client(_: int) -> list[int]:
        with connect(f"ws://127.0.0.1:{ready['port']}", max_size=None,
                     open_timeout=TIMEOUT_S) as ws:
            ws.recv(timeout=TIMEOUT_S)  # metadata
            sizes = []
            for _ in range(2):
                ws.send(frame)
                sizes.append(unpack_map(ws.recv(timeout=TIMEOUT_S), "action")["size"])
            return sizes

    with concurrent.futures.ThreadPoolExecutor(CONNECTIONS) as pool:
        answers = list(pool.map(client, range(CONNECTIONS)))
    peak = _status(ready["pid"])["VmHWM"]
    assert answers == [[FRAME - 64] * 2] * CONNECTIONS  # every frame answered, none refused
    assert peak - base < RSS_BOUND, (
        f"peak RSS grew {(peak - base) / MIB:.0f} MiB, bound {RSS_BOUND / MIB:.0f} MiB")
    proc.kill()
    proc.wait(TIMEOUT_S)


class Gated:
    """Blocks every inference until ``gate`` is set."""

    gate = threading.Event()

    def infer(self, observation: dict[str, Any]) -> dict[str, Any]:
        Gated.gate.wait(TIMEOUT_S)
        return {"ok": True}


@pytest.fixture
def serve() -> Iterator[Callable[..., PolicyServer]]:
    started: list[PolicyServer] = []

    def start(factory: Any = Gated, **kwargs: Any) -> PolicyServer:
        server = PolicyServer(factory, PolicyServerSettings(**kwargs))
        started.append(server)
        server.start()
        return server

    Gated.gate.set()
    yield start
    Gated.gate.set()
    for server in started:
        server.stop()


def test_connections_past_the_cap_are_refused_at_the_handshake_with_the_limit(
        serve: Callable[..., PolicyServer]) -> None:
    server = serve(max_connections=2)
    first, second = connect(server.url), connect(server.url)
    try:
        with pytest.raises(InvalidStatus) as refused:
            connect(server.url, open_timeout=TIMEOUT_S)
        assert refused.value.response.status_code == 503
        assert b"max_connections=2" in refused.value.response.body
    finally:
        first.close()
    third = connect(server.url, open_timeout=TIMEOUT_S)  # room again once one closed
    try:
        third.recv(timeout=TIMEOUT_S)
        third.send(pack({"x": 1}))
        assert unpack_map(third.recv(timeout=TIMEOUT_S), "action")["ok"] is True
    finally:
        third.close()
        second.close()


def test_an_observation_without_room_waits_unread_then_is_refused_1013(
        serve: Callable[..., PolicyServer]) -> None:
    server = serve(max_message_bytes=MIB, max_bytes_in_flight=MIB, busy_wait_s=0.3)
    Gated.gate.clear()
    holder, late = connect(server.url), connect(server.url)
    try:
        holder.recv(timeout=TIMEOUT_S)
        late.recv(timeout=TIMEOUT_S)
        holder.send(pack({"x": np.zeros(1000)}))  # held by the gated policy: room taken
        late.send(pack({"x": np.zeros(1000)}))
        refusal = late.recv(timeout=TIMEOUT_S)
        assert isinstance(refusal, str) and "SERVER_BUSY" in refusal
        assert "max_bytes_in_flight=1048576" in refusal
        with pytest.raises(ConnectionClosed) as closed:
            late.recv(timeout=TIMEOUT_S)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        Gated.gate.set()
        assert unpack_map(holder.recv(timeout=TIMEOUT_S), "action")["ok"] is True
        holder.send(pack({"x": 2}))  # the room is given back after each answer
        assert unpack_map(holder.recv(timeout=TIMEOUT_S), "action")["ok"] is True
    finally:
        holder.close()
        late.close()


def test_a_sender_that_stops_mid_observation_is_closed_and_gives_its_room_back(
        serve: Callable[..., PolicyServer]) -> None:
    server = serve(max_message_bytes=MIB, max_bytes_in_flight=MIB, read_s=0.3)
    slow = connect(server.url)
    try:
        slow.recv(timeout=TIMEOUT_S)
        # a binary frame header announcing 1000 bytes, then only 10 of them (masked)
        slow.socket.sendall(b"\x82\xfe\x03\xe8" + b"\x00" * 4 + b"\x00" * 10)
        text = slow.recv(timeout=TIMEOUT_S)
        assert isinstance(text, str) and "TOO_SLOW" in text
    finally:
        slow.close()
    other = connect(server.url, open_timeout=TIMEOUT_S)
    try:
        other.recv(timeout=TIMEOUT_S)
        other.send(pack({"x": 1}))
        assert unpack_map(other.recv(timeout=TIMEOUT_S), "action")["ok"] is True
    finally:
        other.close()


HOSTILE = [
    (b"\xc1", "FormatError: a byte that starts no msgpack value"),
    (b"\x91" * 5000, "StackError: over 1024 levels"),
    (b"\xc6\xff\xff\xff\xff" + b"x" * 10, "incomplete input"),  # bin32 announcing 4 GiB
    (b"\xdd\xff\xff\xff\xff", "4294967295 exceeds max_array_len"),  # 4 billion items
    (pack({"x": {"__ndarray__": True, "data": b"1234", "dtype": "<f8",
                 "shape": [10**9, 10**9]}}), "needs 8000000000000000000 bytes of data"),
    (pack({"x": {"__ndarray__": True, "data": b"", "dtype": ["<f8"] * 10**5, "shape": []}}),
     "not a NumPy dtype string"),
    (b"\xd4\x01\x00", "msgpack extension value (type 1"),
]


@pytest.mark.parametrize("frame, reason", HOSTILE, ids=[h[1][:30] for h in HOSTILE])
def test_each_hostile_frame_is_answered_with_its_reason_and_others_are_served(
        serve: Callable[..., PolicyServer], frame: bytes, reason: str) -> None:
    server = serve()
    with connect(server.url) as bad, connect(server.url) as good:
        bad.recv(timeout=TIMEOUT_S)
        good.recv(timeout=TIMEOUT_S)
        bad.send(frame)
        text = bad.recv(timeout=TIMEOUT_S)
        assert isinstance(text, str) and reason in text and len(text) < 2000, text[:300]
        good.send(pack({"x": 1}))
        assert unpack_map(good.recv(timeout=TIMEOUT_S), "action")["ok"] is True


msgpack_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), st.floats(),
              st.text(max_size=10), st.binary(max_size=10)),
    lambda kids: st.one_of(st.lists(kids, max_size=4),
                           st.dictionaries(st.text(max_size=6), kids, max_size=4)),
    max_leaves=30)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(value=msgpack_values, cut=st.integers(0, 200), flip=st.integers(0, 200),
       byte=st.integers(0, 255))
def test_any_damaged_message_is_read_or_refused_as_a_protocol_error_with_a_reason(
        value: Any, cut: int, flip: int, byte: int) -> None:
    data = bytearray(pack({"v": value}))
    data[flip % len(data)] = byte
    try:
        unpack(bytes(data[:max(cut, 1)]))
    except BridgeError as exc:
        assert exc.code == "POLICY_PROTOCOL" and "()" not in str(exc) and exc.fix
        assert len(str(exc)) < 1000


def test_the_cap_numbers_are_checked_before_anything_listens() -> None:
    from harness_bt.errors import DefinitionError

    with pytest.raises(DefinitionError, match="max_bytes_in_flight=1024 is less than one "
                       "observation"):
        PolicyServerSettings(max_message_bytes=4096, max_bytes_in_flight=1024)


def test_ctrl_c_ends_the_policy_server_while_a_client_ignores_the_close(
        processes: Processes) -> None:
    import signal
    import socket

    proc = processes.start(sys.executable, "-m", "harness_bt.cli", "policy", "serve",
                           "--policy", "pick", "--port", "0")
    assert proc.stdout is not None
    port = int(json.loads(proc.stdout.readline())["url"].rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as deaf:
        deaf.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     b"Sec-WebSocket-Version: 13\r\n\r\n")
        assert deaf.recv(4096).startswith(b"HTTP/1.1 101")  # open, and never reads again
        proc.send_signal(signal.SIGINT)
        assert proc.wait(TIMEOUT_S) == 130  # Ctrl-C, as a shell reports it
