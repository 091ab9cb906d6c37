"""The policy client against a server written from openpi's documented protocol: metadata,
requests, and every way a server can misbehave ending in one clear error."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from harness_bt.errors import BridgeError
from harness_bt.policy.client import PolicyClient
from tests.harness_bt.policy.peer import Answer, Fail, OpenpiPeer, Raw, Silent


def chunk(obs: dict[Any, Any], n: int) -> Answer:
    state = obs[b"observation/state"] if b"observation/state" in obs else obs["observation/state"]
    return {"actions": np.tile(state, (4, 1)).astype(np.float32), "n": n}


@pytest.fixture
def peer_with() -> Iterator[Any]:
    started: list[OpenpiPeer] = []

    def start(respond: Any, **kwargs: Any) -> OpenpiPeer:
        started.append(OpenpiPeer(respond, **kwargs).start())
        return started[-1]

    yield start
    for p in started:
        p.stop()


def test_metadata_on_connect_then_one_action_map_per_observation(peer_with: Any) -> None:
    served = peer_with(chunk, metadata={"action_horizon": 4, "policy": "echo"})
    with PolicyClient(served.url) as client:
        assert client.metadata == {"action_horizon": 4, "policy": "echo"}
        for n in (1, 2):
            state = np.array([n, 0.5, -1.0], dtype=np.float32)
            reply = client.infer({"observation/state": state, "prompt": "pick"})
            assert reply["n"] == n and reply["actions"].shape == (4, 3)
            np.testing.assert_array_equal(reply["actions"][3], state)
        assert client.requests == 2
    assert served.observations[1]["prompt"] == "pick"  # the reference reads what we send
    assert served.connections == 1


@pytest.mark.parametrize(("answer", "code", "words"), [
    (Raw(b"\xc1\xc1"), "POLICY_PROTOCOL", "not valid msgpack"),
    (Raw(b"\x93\x01\x02\x03"), "POLICY_PROTOCOL", "the action chunk is a msgpack list"),
    (Fail("Traceback ...\nValueError: bad image"), "POLICY_SERVER_ERROR",
     "ValueError: bad image"),
    (Raw(b"\xc4\x00" + b"\0" * 2048), "POLICY_PROTOCOL", "not valid msgpack"),
])
def test_a_misbehaving_server_ends_the_request_with_a_clear_error(
        peer_with: Any, answer: Answer, code: str, words: str) -> None:
    served = peer_with(lambda obs, n: answer)
    client = PolicyClient(served.url, reply_timeout_s=5)
    client.connect()
    with pytest.raises(BridgeError) as caught:
        client.infer({"observation/state": np.zeros(3)})
    assert caught.value.code == code and words in caught.value.message, caught.value
    assert not client.connected  # closed: a late answer can never be taken for the next one


def test_a_silent_server_times_out_and_an_oversized_answer_is_refused(peer_with: Any) -> None:
    served = peer_with(lambda obs, n: Silent() if n == 1 else {"actions": np.zeros((512, 512))})
    client = PolicyClient(served.url, reply_timeout_s=0.3, max_message_bytes=100_000)
    with pytest.raises(BridgeError) as caught:
        client.infer({"x": 1})
    assert caught.value.code == "POLICY_SILENT" and "within 0.3 s" in caught.value.message
    with pytest.raises(BridgeError) as caught:
        client.infer({"x": 2})  # reconnects; the 2 MiB answer is over the 100 kB limit
    assert caught.value.code == "POLICY_TOO_LARGE", caught.value
    assert served.connections == 2


def test_no_server_is_unreachable_with_the_command_to_start_one() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused
        with pytest.raises(BridgeError) as caught:
            PolicyClient(f"127.0.0.1:{port}", connect_timeout_s=2).connect()
    assert caught.value.code == "POLICY_UNREACHABLE"
    assert "harness policy serve" in (caught.value.fix or "")


def test_metadata_that_is_not_a_map_is_refused(peer_with: Any) -> None:
    served = peer_with(chunk, metadata=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(BridgeError, match="the metadata is a msgpack list, not a map"):
        PolicyClient(served.url).connect()
