"""The fault proxy's reorder and corruption faults, and what the bridge and server make of
them: a stale reply never answers a newer request; a corrupted message gets an error (or is
dropped) and the server keeps serving."""

from __future__ import annotations

import time

import pytest

from harness_bt.errors import BridgeError
from harness_bt.ledger import EventKind
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.testing.fault_proxy import CORRUPTIONS, corrupt
from runtime_bridge.zmq import Message, MessageType, WireCode, WireError, decode, encode
from tests.runtime_bridge.executors import STARTS, command


def _frames() -> list[bytes]:
    return [bytes(f) for f in encode(Message(MessageType.QUERY, 3, "manip", "c1", {"a": 1}))]


def test_each_corruption_is_refused_by_the_decoder_with_its_own_code():
    codes = {}
    for how in CORRUPTIONS:
        with pytest.raises(WireError) as info:
            decode(corrupt(_frames(), how))
        codes[how] = info.value.code
    assert codes == {"malformed": WireCode.MALFORMED, "truncated": WireCode.TRUNCATED,
                     "oversized": WireCode.OVERSIZED}


def test_an_unknown_corruption_is_a_config_error():
    with pytest.raises(BridgeError, match="unknown corruption 'scrambled'; known: malformed"):
        corrupt(_frames(), "scrambled")


def test_a_reordered_dispatch_reply_never_answers_the_resend_and_nothing_runs_twice(
        faulty_link):
    _, faults, bridge = faulty_link(timeout_s=0.2, retries=3)
    bridge.hello()
    # held past the client's timeout: the resend's reply overtakes it, the stale one is lost
    faults.reorder_replies(1, hold_s=5.0)
    ack = bridge.dispatch(command("r1", "wait", steps=1))
    assert (ack.accepted, ack.duplicate) == (True, True)
    assert faults.counts.reordered_replies == 1
    assert bridge.query("r1").command_id == "r1"  # the next reply is this request's own
    assert bridge.client.reconnects == 1
    deadline = time.monotonic() + 5.0
    while bridge.query("r1").state is not RuntimeState.CONTROL_DONE:
        assert time.monotonic() < deadline, "r1 never finished"
        time.sleep(0.02)
    assert STARTS["r1"] == 1


def test_a_reply_held_for_less_than_the_timeout_is_just_late(faulty_link):
    _, faults, bridge = faulty_link(timeout_s=2.0, retries=1)
    faults.reorder_replies(1, hold_s=0.05)
    assert bridge.query("nobody").state is RuntimeState.NOT_FOUND
    assert (faults.counts.reordered_replies, bridge.client.reconnects) == (1, 0)


def test_corrupted_requests_get_error_replies_and_the_server_keeps_serving(faulty_link):
    _, faults, bridge = faulty_link(timeout_s=1.0, retries=1)
    codes = []
    for _ in CORRUPTIONS:
        faults.corrupt_requests(1)
        with pytest.raises(WireError) as info:
            bridge.query("q")
        codes.append(info.value.code)
    assert codes == [WireCode.MALFORMED, WireCode.TRUNCATED, WireCode.OVERSIZED]
    assert bridge.query("q").state is RuntimeState.NOT_FOUND


def test_a_corrupted_dispatch_reply_is_an_error_and_the_resend_is_deduplicated(faulty_link):
    _, faults, bridge = faulty_link(timeout_s=1.0, retries=2)
    bridge.hello()
    faults.corrupt_replies(1)
    with pytest.raises(WireError, match="unreadable reply") as info:
        bridge.dispatch(command("c1", "wait", steps=1))
    assert info.value.code == WireCode.MALFORMED
    again = bridge.dispatch(command("c1", "wait", steps=1))
    assert (again.accepted, again.duplicate) == (True, True)
    deadline = time.monotonic() + 5.0
    while bridge.query("c1").state is not RuntimeState.CONTROL_DONE:
        assert time.monotonic() < deadline, "c1 never finished"
        time.sleep(0.02)
    assert STARTS["c1"] == 1


def test_poll_keeps_observing_while_the_control_channel_is_silent(
        start_server, make_bridge, proxy):
    server = start_server()
    faults = proxy(server.endpoints["bind"])
    bridge = make_bridge(faults.endpoint, telemetry=server.endpoints["telemetry"],
                         timeout_s=0.05, retries=1, poll_timeout_s=0.05)
    faults.partition(True)  # no hello ever answered; telemetry travels on its own socket
    deadline = time.monotonic() + 5.0
    while True:
        result = bridge.poll()
        assert {n.kind for n in result.notices} == {"runtime_silent"}
        if result.observations:
            break
        assert time.monotonic() < deadline, "no observation while the control channel was cut"
    assert result.observations[0].extras["source"] == "telemetry"


def test_fault_rates_are_checked_and_never_pile_up(start_server, make_bridge, proxy):
    server = start_server()
    faults = proxy(server.endpoints["bind"])
    with pytest.raises(BridgeError, match=r"fault rate drop_replys=0\.5: the name must be one of"):
        faults.set_rates(drop_replys=0.5)
    with pytest.raises(BridgeError, match=r"fault rate drop_replies=1\.5"):
        faults.set_rates(drop_replies=1.5)
    bridge = make_bridge(faults.endpoint, telemetry="", timeout_s=0.1, retries=2)
    faults.set_rates(drop_replies=1.0)
    with pytest.raises(WireError, match="NO_REPLY"):
        bridge.query("q")
    faults.set_rates(drop_replies=0.0)  # a rate, not a count: nothing left over
    assert bridge.query("q").state is RuntimeState.NOT_FOUND
    assert faults.counts.dropped_replies == 2


def test_poll_waits_longer_on_a_slow_link_until_events_get_through(faulty_link):
    _, faults, bridge = faulty_link(timeout_s=0.8, retries=2, poll_timeout_s=0.1)
    bridge.hello()
    bridge.dispatch(command("slow", "wait", steps=1))
    faults.delay_replies(0.3)  # every reply comes after the first poll wait
    seen, polls = [], 0
    while not any(e.kind is EventKind.CONTROL_DONE for e in seen):
        polls += 1
        assert polls <= 12, f"no event got through a 0.3 s link in {polls} polls"
        seen.extend(e for e in bridge.poll().events if e.command_id == "slow")
    assert [e.kind for e in seen][-1] is EventKind.CONTROL_DONE
    faults.delay_replies(0.0)
    for _ in range(6):  # answers bring the wait back down
        bridge.poll()
    assert bridge._poll_wait == pytest.approx(0.1)
