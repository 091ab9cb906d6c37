"""The policy server against the project's client and a bare WebSocket: metadata on connect,
one policy instance per connection, /healthz, every failure answered as text + close 1011
without taking the server down, oversized requests refused, and a clean stop."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.policy.client import PolicyClient
from harness_bt.policy.wire import pack, unpack_map
from policies.server import PolicyServer, PolicyServerSettings


class Counter:
    """Counts its requests (per instance, so per connection); fails on ``{"fail": True}``,
    answers a non-map on ``{"odd": True}``."""

    made = 0

    def __init__(self) -> None:
        Counter.made += 1
        self.n = 0
        self.closed = False

    def infer(self, observation: dict[str, Any]) -> Any:
        self.n += 1
        if observation.get("fail"):
            raise RuntimeError("the policy broke")
        if observation.get("odd"):
            return [1, 2]
        return {"actions": np.full((2, 4), self.n, dtype=np.float32), "n": self.n}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def serve() -> Iterator[Callable[..., PolicyServer]]:
    started: list[PolicyServer] = []

    def start(factory: Any = Counter, metadata: dict[str, Any] | None = None,
              **kwargs: Any) -> PolicyServer:
        server = PolicyServer(factory, PolicyServerSettings(**kwargs), metadata=metadata)
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()


def test_metadata_on_connect_then_one_action_map_per_observation(serve: Any) -> None:
    server = serve(metadata={"policy": "counter", "action_horizon": 2})
    with PolicyClient(server.url) as client:
        assert client.metadata == {"policy": "counter", "action_horizon": 2}
        first, second = client.infer({"x": 1}), client.infer({"x": 2})
    assert (first["n"], second["n"]) == (1, 2)
    assert first["actions"].dtype == np.float32 and first["actions"].shape == (2, 4)
    assert set(first) == {"actions", "n", "server_timing"}
    assert set(first["server_timing"]) == {"infer_ms"}


def test_each_connection_gets_its_own_policy_instance(serve: Any) -> None:
    server = serve()
    with PolicyClient(server.url) as a, PolicyClient(server.url) as b:
        seen = [a.infer({})["n"], a.infer({})["n"], b.infer({})["n"], a.infer({})["n"],
                b.infer({})["n"]]
    assert seen == [1, 2, 1, 3, 2]
    assert server.connections == 2 and server.requests == 5


def test_healthz_answers_ok_over_plain_http(serve: Any) -> None:
    server = serve()
    answer = httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=10)
    assert (answer.status_code, answer.text) == (200, "OK\n")


def test_a_bad_request_gets_its_error_as_text_and_close_1011_and_others_are_still_served(
        serve: Any) -> None:
    server = serve()
    with PolicyClient(server.url) as bystander:
        assert bystander.infer({})["n"] == 1
        with connect(server.url, compression=None) as ws:
            unpack_map(ws.recv(timeout=10), "metadata")
            ws.send(b"\xc1 not msgpack")
            text = ws.recv(timeout=10)
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
        assert isinstance(text, str)
        assert text.startswith("BridgeError: POLICY_PROTOCOL: a message is not valid msgpack")
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
        assert bystander.infer({})["n"] == 2
    with PolicyClient(server.url) as newcomer:
        assert newcomer.infer({})["n"] == 1
    assert server.failures == 1


@pytest.mark.parametrize(("frame", "message"), [
    ("a text frame", "POLICY_PROTOCOL: an observation came as a text frame"),
    (pack([1, 2, 3]), "POLICY_PROTOCOL: the observation is a msgpack list, not a map"),
    (pack({"x": {b"__ndarray__": True, b"data": b"\x00" * 3, b"dtype": "<f4",
                 b"shape": [2]}}),
     "POLICY_PROTOCOL: an array of shape [2] and dtype <f4 needs 8 bytes of data, and 3 came"),
    (pack({"x": {b"__ndarray__": True, b"data": b"", b"dtype": "|O", b"shape": [0]}}),
     "an array of dtype '|O' is refused"),
])
def test_a_malformed_observation_is_refused_with_the_reason(serve: Any, frame: Any,
                                                            message: str) -> None:
    server = serve()
    with connect(server.url, compression=None) as ws:
        ws.recv(timeout=10)
        ws.send(frame)
        text = ws.recv(timeout=10)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    assert isinstance(text, str) and message in text
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011


def test_a_failing_policy_sends_its_traceback_and_the_client_says_so(serve: Any) -> None:
    server = serve()
    with PolicyClient(server.url) as client:
        assert client.infer({})["n"] == 1
        with pytest.raises(BridgeError, match=r"(?s)POLICY_SERVER_ERROR: .*Traceback .*"
                           r"RuntimeError: the policy broke") as failed:
            client.infer({"fail": True})
        assert failed.value.code == "POLICY_SERVER_ERROR" and not client.connected
    with PolicyClient(server.url) as client, \
            pytest.raises(BridgeError, match="the policy answered a list, not an action map"):
        client.infer({"odd": True})
    with PolicyClient(server.url) as client:
        assert client.infer({})["n"] == 1


def test_a_policy_that_cannot_be_made_fails_its_connection_only(serve: Any) -> None:
    def broken() -> Counter:
        raise DefinitionError("NO_MODEL", "the weights are missing", fix="download them")

    server = serve(broken)
    with connect(server.url, compression=None) as ws:
        text = ws.recv(timeout=10)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    assert text == ("DefinitionError: NO_MODEL: the weights are missing; download them")
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
    assert server.running


def test_an_observation_over_the_limit_is_refused_and_the_server_stays_up(serve: Any) -> None:
    server = serve(max_message_bytes=64 << 10)
    with PolicyClient(server.url, max_message_bytes=1 << 20) as client, \
            pytest.raises(BridgeError) as refused:
        client.infer({"image": np.zeros((300, 300), dtype=np.uint8)})
    assert refused.value.code == "POLICY_TOO_LARGE"
    with PolicyClient(server.url) as client:
        assert client.infer({"image": np.zeros((100, 100), dtype=np.uint8)})["n"] == 1


def test_a_line_is_logged_per_connection(serve: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="policies.server")
    server = serve()
    with PolicyClient(server.url) as client:
        client.infer({})
        client.infer({})
    server.stop()
    lines = [r.getMessage() for r in caplog.records if "connection" in r.getMessage()]
    assert len(lines) == 2
    assert lines[0].startswith("policy connection 1 from 127.0.0.1:") and \
        lines[0].endswith(" opened")
    assert lines[1].endswith(" ended after 2 requests: closed by the client (code 1000)")


def test_stop_closes_open_connections_the_socket_and_every_thread(serve: Any) -> None:
    made: list[Counter] = []

    def factory() -> Counter:
        made.append(Counter())
        return made[-1]

    server = serve(factory)
    url, port = server.url, server.port
    client = PolicyClient(url, connect_timeout_s=2)
    client.connect()
    assert client.infer({})["n"] == 1
    server.stop()
    server.stop()  # idempotent
    assert not server.running and made[0].closed
    with pytest.raises(BridgeError) as gone:
        client.infer({})
    assert gone.value.code == "POLICY_CLOSED"
    with pytest.raises(BridgeError) as unreachable:
        PolicyClient(url, connect_timeout_s=2).connect()
    assert unreachable.value.code == "POLICY_UNREACHABLE"
    with socket.socket() as probe:  # nothing listens there any more (TIME_WAIT aside)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
        probe.listen()


def test_a_busy_port_is_refused_with_a_fix(serve: Any) -> None:
    first = serve()
    with pytest.raises(BridgeError, match=rf"PORT_IN_USE: --port {first.port}: port "
                       rf"{first.port} on 127.0.0.1 is in use.*pick another port with --port"):
        serve(port=first.port)
    assert first.running


def test_a_server_starts_once(serve: Any) -> None:
    server = serve()
    with pytest.raises(BridgeError, match="POLICY_SERVER_STARTED"):
        server.start()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"port": 70000}, "port 70000 is not 0..65535"),
    ({"max_message_bytes": 10}, "max_message_bytes=10 is too small"),
])
def test_bad_options_are_refused_before_anything_listens(kwargs: dict[str, Any],
                                                         message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        PolicyServer(Counter, PolicyServerSettings(**kwargs))


def test_serve_forever_serves_in_the_foreground_until_stopped_from_another_thread() -> None:
    server = PolicyServer(Counter)
    foreground = threading.Thread(target=server.serve_forever, name="foreground")
    foreground.start()
    try:
        port = server.wait_listening(30)
        with PolicyClient(f"ws://127.0.0.1:{port}") as client:
            assert client.infer({})["n"] == 1
    finally:
        server.stop()
        foreground.join(30)
    assert not foreground.is_alive() and not server.running
