"""A newer control epoch's command preempts an older epoch's command that holds a resource it
needs (that command has lost its controller: its heartbeats and cancels are refused). Found by
the chaos runs: a second harness that took over while the first one's approach was running was
refused RESOURCE_BUSY until the lease ran out, and its task gave up."""

from __future__ import annotations

from harness_bt.clock import FakeClock
from harness_bt.ledger import EventKind
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.host import ExecutorHost
from tests.runtime_bridge.conftest import DT
from tests.runtime_bridge.executors import STARTS, command


def run(host: ExecutorHost, clock: FakeClock, steps: int) -> None:
    for _ in range(steps):
        clock.advance(DT)
        host.step()


def test_a_newer_epoch_command_preempts_an_older_epoch_holder(make_host, clock):
    host = make_host(lease_s=5.0)
    host.submit(command("old", "never_stops", resources=("arm",), epoch=1))
    run(host, clock, 2)
    ack = host.submit(command("new", "wait", resources=("arm",), epoch=2, steps=3))
    assert (ack.accepted, ack.state) == (True, RuntimeState.PENDING)
    old = host.query("old")
    assert (old.state, old.reason) == (
        RuntimeState.STOPPED, "EPOCH_PREEMPTED: epoch 2 command 'new' needs 'arm'")
    assert old.events[-1].kind is EventKind.STOPPED
    assert old.events[-1].data == {"held": True, "preempted_by": "new"}
    run(host, clock, 6)
    assert host.query("new").state is RuntimeState.CONTROL_DONE
    assert (STARTS["old"], STARTS["new"]) == (1, 1)


def test_the_same_epoch_still_waits_for_a_busy_resource(make_host, clock):
    host = make_host()
    host.submit(command("first", "never_stops", resources=("arm",), epoch=1))
    ack = host.submit(command("second", "wait", resources=("arm",), epoch=1))
    assert (ack.accepted, ack.state) == (False, RuntimeState.REJECTED)
    assert ack.reason.startswith("RESOURCE_BUSY: resource 'arm' is held by command 'first'")
    assert host.query("first").state is RuntimeState.PENDING


def test_a_stale_epoch_command_never_preempts(make_host, clock):
    host = make_host()
    host.submit(command("newer", "never_stops", resources=("arm",), epoch=2))
    ack = host.submit(command("older", "wait", resources=("arm",), epoch=1))
    assert (ack.accepted, ack.reason[:11]) == (False, "STALE_EPOCH")
    assert host.query("newer").state is RuntimeState.PENDING
