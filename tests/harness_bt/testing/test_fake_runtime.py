"""FakeRuntime is a real RuntimeBridge: idempotent dispatch, scripts, faults, queries."""

from __future__ import annotations

import pytest

from harness_bt import FakeClock
from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.ledger import Command
from harness_bt.runtime.bridge import RuntimeBridge, RuntimeState
from harness_bt.testing import FakeRuntime, Script


def command(cid: str = "c1", skill: str = "grasp") -> Command:
    return Command(command_id=cid, skill=skill, start_within_ms=500, execution_timeout_ms=5000)


def kinds(events: object) -> list[tuple[str, int]]:
    return [(str(e.kind), e.seq) for e in events]  # type: ignore[attr-defined]


def test_it_implements_the_protocol_and_runs_a_script() -> None:
    clock = FakeClock()
    rt = FakeRuntime(clock)
    assert isinstance(rt, RuntimeBridge)
    rt.script("grasp", Script(duration_s=0.2, progress_every_s=0.1))
    ack = rt.dispatch(command(), start_budget_ms=500)
    assert (ack.accepted, ack.state, ack.duplicate) == (True, RuntimeState.PENDING, False)
    assert rt.dispatch(command()).duplicate is True
    got = rt.poll()
    assert kinds(got.events) == [("started", 1)] and len(got.observations) == 1
    clock.advance(0.25)
    assert kinds(rt.poll().events) == [("progress", 2), ("control_done", 3)]
    assert rt.starts == {"grasp": 1} and rt.dispatch_calls == ["c1", "c1"]
    status = rt.query("c1")
    assert (status.state, status.last_seq) == (RuntimeState.CONTROL_DONE, 3)
    assert rt.query("nope").state is RuntimeState.NOT_FOUND


def test_faults_change_delivery_but_not_the_record() -> None:
    clock = FakeClock()
    rt = FakeRuntime(clock, observe=False)
    rt.script("grasp", Script(duration_s=0.1, progress_every_s=0.05))
    rt.drop(event="started")
    rt.duplicate(event="control_done")
    rt.delay(event="progress", by_s=0.2)
    rt.dispatch(command())
    assert kinds(rt.poll().events) == []
    clock.advance(0.1)
    assert kinds(rt.poll().events) == [("control_done", 3), ("control_done", 3)]
    clock.advance(0.2)
    assert kinds(rt.poll().events) == [("progress", 2)]  # late, after a later event
    assert kinds(rt.query("c1").events) == [("started", 1), ("progress", 2), ("control_done", 3)]


def test_stops_refusals_expiry_and_transport_failures() -> None:
    clock = FakeClock()
    rt = FakeRuntime(clock, observe=False, stop_delay_s=0.1, confirm_stops=False)
    rt.script("grasp", Script(outcome="hang"))
    rt.dispatch(command())
    rt.poll()
    assert rt.cancel("c1").state is RuntimeState.STOPPING
    clock.advance(1.0)
    assert rt.poll().events == () and rt.query("c1").state is RuntimeState.STOPPING
    rt.confirm_stops = True
    assert kinds(rt.poll().events) == [("stopped", 2)]
    assert rt.dispatch(command("c2"), start_budget_ms=0).accepted is False
    rt.script("grasp", Script(start_delay_s=1.0))
    rt.dispatch(command("c3"), start_budget_ms=100)
    clock.advance(1.0)
    assert [(str(e.kind), e.reason) for e in rt.poll().events] == [
        ("rejected", "EXPIRED_COMMAND")]
    rt.fail_transport = 1
    with pytest.raises(BridgeError, match="injected transport failure on poll"):
        rt.poll()
    rt.close()
    with pytest.raises(BridgeError, match="closed"):
        rt.dispatch(command("c4"))
    with pytest.raises(DefinitionError, match="outcome 'explode'"):
        Script(outcome="explode")
