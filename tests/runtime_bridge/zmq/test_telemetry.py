"""Telemetry: latest value per topic, and a slow subscriber never blocks the publisher."""

from __future__ import annotations

import time

import numpy as np

from harness_bt.clock import FakeClock
from runtime_bridge.zmq import TelemetryPublisher, TelemetrySubscriber
from tests.runtime_bridge.zmq.conftest import LOOPBACK

N = 3000


def test_a_slow_subscriber_never_blocks_and_then_gets_the_latest_values(zctx):
    clock = FakeClock()
    pub = TelemetryPublisher(f"{LOOPBACK}:*", sndhwm=10, republish_s=1.0, clock=clock)
    pub.open(zctx)  # this test's thread owns the PUB socket
    sub = TelemetrySubscriber(pub.endpoint, context=zctx, rcvhwm=10)
    try:
        deadline = time.monotonic() + 5.0
        while not sub.drain(timeout_ms=10):  # wait for the subscription to propagate
            pub.put("state", {"i": -1})
            pub.tick()
            assert time.monotonic() < deadline
        for i in range(N):  # the subscriber reads nothing meanwhile
            pub.put("state", {"i": i}, {"q": np.full(4, i, dtype=np.float64)})
            pub.put(f"progress/c{i % 3}", {"i": i})
            pub.tick()
        assert pub.sent >= 2 * N  # every send returned at once: PUB drops, never waits
        newest = {f"progress/c{j}": max(i for i in range(N) if i % 3 == j) for j in range(3)}
        expected = {"state": N - 1, **newest}
        deadline = time.monotonic() + 5.0
        got: dict[str, int] = {}
        # queued older values may still arrive after a newer one; the periodic republish of
        # every topic's latest value must win within the deadline
        while got != expected:
            clock.advance(1.0)
            pub.tick()  # re-publishes every topic's latest value
            sub.drain(timeout_ms=20)
            got = {t: v.body["i"] for t, v in sub.latest.items()}
            assert time.monotonic() < deadline, got
        assert sub.latest["state"].arrays["q"].tolist() == [float(N - 1)] * 4
    finally:
        sub.close()
        pub.close()


def test_older_values_never_replace_newer_ones_and_last_values_are_forgotten(zctx):
    pub = TelemetryPublisher(f"{LOOPBACK}:*", republish_s=3600.0)
    pub.open(zctx)
    sub = TelemetrySubscriber(pub.endpoint, context=zctx, topics=("progress/",))
    try:
        deadline = time.monotonic() + 5.0
        while not sub.drain(timeout_ms=10):
            pub.put("progress/x", {"v": 0})
            pub.tick()
            assert time.monotonic() < deadline
        pub.put("progress/x", {"v": 1})
        pub.put("state", {"v": 1})  # not subscribed
        pub.put("progress/x", {"v": 2}, last=True)
        pub.tick()
        pub.tick()
        sub.drain(timeout_ms=200)
        assert {t: v.body["v"] for t, v in sub.latest.items()} == {"progress/x": 2}
        assert "progress/x" not in pub._values  # a finished command's topic is dropped
    finally:
        sub.close()
        pub.close()
