"""Ledger deadlines: a dispatched command with no start seen is stopped, not forgotten."""

from __future__ import annotations

from harness_bt.ledger import Command, CommandEvent, CommandState, Ledger


def command(cid: str = "g1") -> Command:
    return Command(command_id=cid, skill="grasp", resources=("arm",), start_within_ms=500,
                   execution_timeout_ms=5000)


def test_undispatched_command_past_its_start_deadline_is_rejected() -> None:
    ledger = Ledger()
    ledger.submit(command(), now=0.0)
    (h,) = ledger.tick(now=0.6)
    assert (h.state_after, h.reason) == (CommandState.REJECTED, "EXPIRED_COMMAND")
    assert ledger.held_resources() == {}


def test_dispatched_command_with_no_start_seen_is_stopped_and_keeps_its_resource() -> None:
    ledger = Ledger(default_stop_timeout_s=1.0)
    ledger.submit(command(), now=0.0)
    ledger.dispatch("g1", now=0.1)
    (h,) = ledger.tick(now=0.6)
    assert (h.state_after, h.reason) == (CommandState.CANCELING, "START_UNCONFIRMED")
    assert ledger.held_resources() == {"arm": "g1"}
    ledger.apply(CommandEvent("g1", 1, "started"), now=0.7)  # it had started after all
    assert ledger.get("g1").state is CommandState.CANCELING
    ledger.apply(CommandEvent("g1", 2, "stopped"), now=0.8)
    assert ledger.get("g1").state is CommandState.CANCELED and ledger.held_resources() == {}


def test_no_stop_confirmation_after_start_unconfirmed_becomes_unknown() -> None:
    ledger = Ledger(default_stop_timeout_s=1.0)
    ledger.submit(command(), now=0.0)
    ledger.dispatch("g1", now=0.1)
    ledger.tick(now=0.6)
    (h,) = ledger.tick(now=1.6)
    assert (h.state_after, h.reason) == (CommandState.UNKNOWN, "STOP_UNCONFIRMED")
    assert ledger.held_resources() == {"arm": "g1"}
