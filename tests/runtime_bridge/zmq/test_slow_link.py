"""ZmqBridge on a link whose replies come later than its timeouts but sooner than the lease:
waits learned from the round trip (within the lease), heartbeats first, and telemetry as the
evidence that a command runs. A scripted transport on a fake clock: deterministic, no sleeps."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
import zmq

from harness_bt.clock import FakeClock
from harness_bt.ledger import CommandEvent, EventKind
from harness_bt.runtime.bridge import Ack, RuntimeState
from runtime_bridge.host.types import EventBatch, HeartbeatResult
from runtime_bridge.zmq import WireCode, WireError
from runtime_bridge.zmq.bridge import ZmqBridge, ZmqBridgeConfig
from runtime_bridge.zmq.codec import ack_to_wire, batch_to_wire, heartbeat_to_wire
from runtime_bridge.zmq.telemetry import TopicValue
from runtime_bridge.zmq.wire import Message, MessageType
from tests.runtime_bridge.executors import command

LEASE_S = 1.0
INF = float("inf")


class SlowLink:
    """Stands in for the Lazy-Pirate client: every reply takes ``delay_s`` of fake time; a try
    that waits less gets nothing (its wait passes on the clock) and the next try starts over."""

    def __init__(self, clock: FakeClock, *, delay_s: float = 0.0) -> None:
        self.clock = clock
        self.delay_s = delay_s
        self.sent: list[tuple[float, MessageType, str]] = []
        self.events: list[CommandEvent] = []

    def request(self, msg: Message, *, timeout_s: float | None = None,
                retries: int | None = None) -> Message:
        wait = 0.5 if timeout_s is None else timeout_s
        for _ in range(3 if retries is None else retries):
            self.sent.append((self.clock.monotonic(), msg.type, msg.command_id))
            if self.delay_s <= wait:
                self.clock.advance(self.delay_s)
                return msg.reply(self._answer(msg))
            self.clock.advance(wait)
        raise WireError(WireCode.NO_REPLY, f"no reply to {msg.type.name}")

    def _answer(self, msg: Message) -> dict[str, Any]:
        if msg.type is MessageType.HELLO:
            return {"protocol": 1, "epoch": 0, "boot_id": "b1", "cursor": 0, "lease_s": LEASE_S,
                    "telemetry": ""}
        if msg.type is MessageType.HEARTBEAT:
            return heartbeat_to_wire(HeartbeatResult(0, True))
        if msg.type is MessageType.EVENTS:
            events, self.events = self.events, []
            return batch_to_wire(EventBatch("b1", tuple(events), 0))
        if msg.type is MessageType.DISPATCH:
            return ack_to_wire(Ack(msg.command_id, True, RuntimeState.PENDING, "ACCEPTED"))
        raise AssertionError(f"unexpected {msg.type.name}")

    def beats(self) -> list[float]:
        return [t for t, mtype, _ in self.sent if mtype is MessageType.HEARTBEAT]

    def close(self) -> None:
        pass


class FakeTelemetry:
    """Stands in for the telemetry subscriber: ``publish`` what the runtime would."""

    def __init__(self) -> None:
        self.latest: dict[str, TopicValue] = {}
        self._new: dict[str, TopicValue] = {}
        self._seq = 0

    def publish(self, cid: str, kind: str, event_seq: int, progress: float | None = None) -> None:
        self._seq += 1
        topic = f"progress/{cid}"
        value = TopicValue(topic, self._seq, {"command_id": cid, "kind": kind,
                                              "progress": progress, "event_seq": event_seq}, {})
        self.latest[topic] = self._new[topic] = value

    def drain(self) -> dict[str, TopicValue]:
        new, self._new = self._new, {}
        return new

    def close(self) -> None:
        pass


@pytest.fixture
def slow(zctx: zmq.Context, clock: FakeClock) -> Iterator[tuple[ZmqBridge, SlowLink, FakeClock]]:
    bridge = ZmqBridge(ZmqBridgeConfig(endpoint="tcp://127.0.0.1:9", telemetry="",
                                       timeout_s=0.5, retries=3, poll_timeout_s=0.25),
                       context=zctx, clock=clock)
    bridge.client.close()
    link = SlowLink(clock)
    bridge.client = link  # type: ignore[assignment]
    yield bridge, link, clock
    bridge.close()


def silent_calls(results) -> list[str]:
    return [n.data["call"] for r in results for n in r.notices if n.kind == "runtime_silent"]


def test_heartbeats_get_through_a_link_slower_than_timeout_s_and_never_leave_a_lease_gap(slow):
    bridge, link, _ = slow
    bridge.hello()
    bridge.dispatch(command("c1", "wait", steps=99))  # a lease to keep
    link.delay_s = 0.7  # later than timeout_s (0.5), sooner than the lease (1.0)
    results = [bridge.poll() for _ in range(12)]
    assert silent_calls(results[4:]) == []  # once the wait is learned, every poll is answered
    beats = link.beats()
    assert max(b - a for a, b in pairwise(beats)) <= 0.8 * LEASE_S + 1e-9  # float sums
    assert bridge._poll_wait <= 0.8 * LEASE_S


def test_events_get_through_a_link_slower_than_timeout_s_when_the_lease_leaves_room(slow):
    bridge, link, _ = slow
    link.delay_s = 0.3
    bridge.hello()
    bridge.dispatch(command("c1", "wait", steps=1))
    link.delay_s = 0.6  # later than timeout_s (0.5); lease 1.0 is too short for 2 round trips
    link.events = [CommandEvent("c1", 0, "started")]
    first = [bridge.poll() for _ in range(6)]
    assert not any(r.events for r in first)  # heartbeats only: the lease comes first
    link.delay_s = 0.2
    got = [e for r in (bridge.poll() for _ in range(6)) for e in r.events]
    assert [(e.command_id, e.kind) for e in got] == [("c1", EventKind.STARTED)]


def _following(slow, steps: int):  # type: ignore[no-untyped-def]
    """The bridge dispatched ``c1`` and follows it; its telemetry is a FakeTelemetry."""
    bridge, link, _ = slow
    bridge.hello()
    bridge.dispatch(command("c1", "wait", steps=steps))
    tele = FakeTelemetry()
    bridge._subscriber = tele  # type: ignore[assignment]
    return bridge, link, tele


def test_a_telemetry_start_and_progress_of_a_followed_command_are_reported_as_its_events(slow):
    bridge, link, tele = _following(slow, 9)
    link.delay_s = 0.7  # the request path is slow; telemetry is not
    tele.publish("c1", "started", 0)
    first = bridge.poll()
    tele.publish("c1", "progress", 3, progress=0.4)
    tele.publish("other", "progress", 5)  # not followed: not ours
    second = bridge.poll()
    got = [(e.command_id, e.kind, e.seq, e.progress) for r in (first, second) for e in r.events]
    assert got == [("c1", EventKind.STARTED, 0, None), ("c1", EventKind.PROGRESS, 3, 0.4)]
    assert {e.data["source"] for r in (first, second) for e in r.events} == {"telemetry"}


def test_telemetry_never_reports_a_result_nor_an_event_twice(slow):
    bridge, link, tele = _following(slow, 2)
    link.events = [CommandEvent("c1", 0, "started"), CommandEvent("c1", 1, "progress")]
    tele.publish("c1", "progress", 1)  # already read by request: not again
    assert [(e.kind, e.seq) for e in bridge.poll().events] == [
        (EventKind.STARTED, 0), (EventKind.PROGRESS, 1)]
    tele.publish("c1", "control_done", 2)  # results only by EVENTS / QUERY
    assert bridge.poll().events == ()
    link.events = [CommandEvent("c1", 2, "control_done")]
    assert [e.kind for e in bridge.poll().events] == [EventKind.CONTROL_DONE]


def test_a_dispatch_rides_out_a_reply_slower_than_timeout_s_under_the_same_id(slow):
    bridge, link, _ = slow
    bridge.hello()
    link.delay_s = 0.7
    ack = bridge.dispatch(command("d1", "wait", steps=1))
    assert (ack.command_id, ack.accepted) == ("d1", True)
    assert {cid for _, mtype, cid in link.sent if mtype is MessageType.DISPATCH} == {"d1"}


def test_a_silent_runtime_still_makes_a_dispatch_outcome_unknown_never_a_new_id(slow):
    bridge, link, clock = slow
    bridge.hello()
    link.delay_s = INF
    with pytest.raises(WireError) as info:
        bridge.dispatch(command("d1", "wait", steps=1))
    assert info.value.code == WireCode.OUTCOME_UNKNOWN
    assert info.value.details["outcome"] == "unknown"
    assert [cid for _, mtype, cid in link.sent if mtype is MessageType.DISPATCH] == ["d1"] * 3
    sends = [t for t, mtype, _ in link.sent if mtype is MessageType.DISPATCH] + [clock.monotonic()]
    assert [round(b - a, 3) for a, b in pairwise(sends)] == [0.5, 0.8, 0.8]


def test_a_silent_runtime_is_reported_on_every_poll_and_waits_stay_within_the_lease(slow):
    bridge, link, _ = slow
    bridge.hello()
    bridge.dispatch(command("c1", "wait", steps=99))
    link.delay_s = INF
    results = [bridge.poll() for _ in range(8)]
    assert all(silent_calls([r]) for r in results)
    assert bridge._poll_wait == pytest.approx(0.8 * LEASE_S)
    beats = link.beats()
    assert max(b - a for a, b in pairwise(beats)) <= 0.8 * LEASE_S + 1e-9  # float sums


def test_the_epoch_heartbeat_gets_through_a_link_slower_than_the_poll_wait(slow):
    bridge, link, _ = slow
    bridge.hello()
    link.delay_s = 0.7  # the first tries (0.25 s, 0.5 s) are too short; the third is not
    assert bridge.heartbeat([]).accepted


def test_once_telemetry_says_every_followed_command_ended_its_result_is_read_first(slow):
    bridge, link, _ = slow
    bridge.hello()
    bridge.dispatch(command("c1", "wait", steps=2))
    tele = FakeTelemetry()
    bridge._subscriber = tele  # type: ignore[assignment]
    link.delay_s = 0.7  # too slow for a heartbeat and an events read within the lease
    link.events = [CommandEvent("c1", 0, "started"), CommandEvent("c1", 1, "control_done")]
    assert [bridge.poll().events for _ in range(4)] == [()] * 4  # heartbeats only
    tele.publish("c1", "control_done", 1)  # no lease to keep now: the events read goes out
    got = [e for r in (bridge.poll(), bridge.poll()) for e in r.events]
    assert [(e.kind, e.data.get("source")) for e in got] == [
        (EventKind.STARTED, None), (EventKind.CONTROL_DONE, None)]
    assert bridge.followed == set()
