"""The telemetry fault proxy: messages and subscriptions pass through, and each fault (drop,
delay, duplicate, reorder, silence) is applied and counted; stopping it closes its sockets."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import zmq

from harness_bt.errors import BridgeError
from runtime_bridge.testing.telemetry_faults import TelemetryFaultProxy
from runtime_bridge.zmq import TelemetryPublisher, TelemetrySubscriber
from tests.runtime_bridge.zmq.conftest import LOOPBACK


@pytest.fixture
def link(zctx: zmq.Context, raw_socket, closing) -> Callable[..., tuple]:
    """An upstream PUB (this test's thread), a telemetry proxy, and a SUB on the proxy."""

    def make(*topics: bytes) -> tuple[zmq.Socket, TelemetryFaultProxy, zmq.Socket]:
        pub = raw_socket(zmq.PUB)
        pub.bind(f"{LOOPBACK}:*")
        faults = TelemetryFaultProxy(pub.getsockopt_string(zmq.LAST_ENDPOINT), context=zctx,
                                     seed=3)
        closing(faults, faults.stop)
        sub = raw_socket(zmq.SUB, faults.start())
        for topic in topics or (b"",):
            sub.setsockopt(zmq.SUBSCRIBE, topic)
        return pub, faults, sub

    return make


def _connected(pub: zmq.Socket, sub: zmq.Socket) -> None:
    """Publish probes until one arrives (subscriptions travel through the proxy first), then
    drain the rest."""
    deadline = time.monotonic() + 5.0
    while not sub.poll(20):
        pub.send_multipart([b"state", b"probe"])
        assert time.monotonic() < deadline, "no probe came through the proxy"
    time.sleep(0.05)
    while sub.poll(20):
        sub.recv_multipart()


def _read(sub: zmq.Socket, wait_s: float = 0.3) -> list[list[bytes]]:
    out = []
    while sub.poll(int(wait_s * 1000)):
        out.append(sub.recv_multipart())
    return out


def test_messages_pass_through_and_subscriptions_still_filter_topics(link):
    pub, faults, sub = link(b"state")
    _connected(pub, sub)
    for i in range(5):
        pub.send_multipart([b"state", str(i).encode()])
        pub.send_multipart([b"progress/c1", str(i).encode()])
    got = _read(sub)
    assert got == [[b"state", str(i).encode()] for i in range(5)]
    # the runtime filters: unsubscribed topics never reach the proxy at all
    assert faults.counts.subscriptions >= 1
    assert faults.counts.forwarded == faults.counts.messages


def test_dropped_messages_are_counted_and_never_arrive(link):
    pub, faults, sub = link()
    _connected(pub, sub)
    faults.set_rates(drop=1.0)
    for i in range(10):
        pub.send_multipart([b"state", str(i).encode()])
    assert _read(sub) == []
    assert faults.counts.dropped == 10
    faults.set_rates(drop=0.0)
    pub.send_multipart([b"state", b"after"])
    assert _read(sub) == [[b"state", b"after"]]


def test_duplicated_messages_arrive_twice(link):
    pub, faults, sub = link()
    _connected(pub, sub)
    faults.set_rates(duplicate=1.0)
    pub.send_multipart([b"state", b"x"])
    assert _read(sub) == [[b"state", b"x"]] * 2
    assert faults.counts.duplicated == 1


def test_a_reordered_message_arrives_after_the_next_one(link):
    pub, faults, sub = link()
    _connected(pub, sub)
    faults.reorder_hold(5.0)
    faults.set_rates(reorder=1.0)
    pub.send_multipart([b"state", b"old"])
    deadline = time.monotonic() + 5.0
    while faults.counts.reordered < 1:  # held before the next one is sent
        assert time.monotonic() < deadline
        time.sleep(0.01)
    faults.set_rates(reorder=0.0)
    pub.send_multipart([b"state", b"new"])
    assert _read(sub) == [[b"state", b"new"], [b"state", b"old"]]


def test_delayed_messages_are_held_then_released(link):
    pub, faults, sub = link()
    _connected(pub, sub)
    faults.delay_messages(0.4)
    faults.set_rates(delay=1.0)
    for i in range(20):
        pub.send_multipart([b"state", str(i).encode()])
    got = _read(sub, wait_s=1.0)
    assert sorted(int(m[1]) for m in got) == list(range(20))
    assert faults.counts.delayed == 20
    assert [int(m[1]) for m in got] != list(range(20))  # seeded: some overtook older ones


def test_silence_cuts_telemetry_until_switched_off(link):
    pub, faults, sub = link()
    _connected(pub, sub)
    faults.silence(True)
    for _ in range(4):
        pub.send_multipart([b"state", b"lost"])
    assert _read(sub) == []
    assert faults.counts.silenced == 4
    faults.silence(False)
    pub.send_multipart([b"state", b"back"])
    assert _read(sub) == [[b"state", b"back"]]


def test_the_subscriber_keeps_the_newest_value_through_delays_and_reorders(zctx):
    pub = TelemetryPublisher(f"{LOOPBACK}:*", republish_s=60.0)
    pub.open(zctx)
    faults = TelemetryFaultProxy(pub.endpoint or "", context=zctx, seed=5)
    sub = TelemetrySubscriber(faults.start(), topics=("state",), context=zctx)
    try:
        deadline = time.monotonic() + 5.0
        while not sub.drain(timeout_ms=20):
            pub.put("state", {"i": -1})
            pub.tick()
            assert time.monotonic() < deadline
        faults.delay_messages(0.3)
        faults.set_rates(delay=0.5, reorder=0.3, duplicate=0.3)
        for i in range(50):
            pub.put("state", {"i": i})
            pub.tick()
        deadline = time.monotonic() + 2.0  # past every delay and reorder hold
        while time.monotonic() < deadline:
            sub.drain(timeout_ms=50)
        assert sub.latest["state"].body["i"] == 49
        assert faults.counts.delayed and faults.counts.reordered and faults.counts.duplicated
    finally:
        sub.close()
        faults.stop()
        pub.close()


def test_stop_ends_the_thread_and_closes_its_sockets(zctx, raw_socket):
    pub = raw_socket(zmq.PUB)
    pub.bind(f"{LOOPBACK}:*")
    faults = TelemetryFaultProxy(pub.getsockopt_string(zmq.LAST_ENDPOINT), context=zctx)
    faults.start()
    assert faults.running
    faults.stop()
    assert not faults.running  # and zctx terminates at teardown: no socket left open


def test_an_unknown_fault_rate_is_a_config_error(zctx):
    faults = TelemetryFaultProxy(f"{LOOPBACK}:1", context=zctx)
    with pytest.raises(BridgeError, match=r"telemetry fault rate lag=0\.5: the name must be one "
                       r"of drop, delay, duplicate, reorder"):
        faults.set_rates(lag=0.5)
    with pytest.raises(BridgeError, match=r"drop=2\.0"):
        faults.set_rates(drop=2.0)
