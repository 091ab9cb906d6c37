"""A resent dispatch renews its command's lease (a harness blocked in its dispatch retries
sends no heartbeats); a resend from an older epoch renews nothing. Found by the chaos runs:
three dropped dispatch replies (1.5 s of retries) outlasted a 1 s lease, and the runtime held
a command its harness was busy confirming."""

from __future__ import annotations

from harness_bt.clock import FakeClock
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.host import ExecutorHost
from tests.runtime_bridge.conftest import DT
from tests.runtime_bridge.executors import command


def run(host: ExecutorHost, clock: FakeClock, steps: int) -> None:
    for _ in range(steps):
        clock.advance(DT)
        host.step()


def test_a_resent_dispatch_renews_the_lease_of_its_running_command(make_host, clock):
    host = make_host(lease_s=0.2)
    host.submit(command("r", "never_stops", epoch=1))
    for _ in range(10):  # 0.6 s in all, no heartbeat: only resends
        run(host, clock, 2)
        ack = host.submit(command("r", "never_stops", epoch=1))
        assert (ack.duplicate, ack.state) == (True, RuntimeState.RUNNING)
    assert host.query("r").state is RuntimeState.RUNNING
    run(host, clock, 8)  # resends stop: the lease runs out and the runtime holds
    assert (host.query("r").state, host.query("r").reason) == (
        RuntimeState.STOPPED, "LEASE_EXPIRED")


def test_a_resend_from_an_older_epoch_renews_nothing(make_host, clock):
    host = make_host(lease_s=0.2)
    host.submit(command("old", "never_stops", epoch=1))
    assert host.heartbeat([], epoch=2).accepted  # a newer harness took over
    for _ in range(5):
        run(host, clock, 2)
        assert host.submit(command("old", "never_stops", epoch=1)).duplicate
    assert (host.query("old").state, host.query("old").reason) == (
        RuntimeState.STOPPED, "LEASE_EXPIRED")
