"""Runtime events, verdicts, cancel, tick and reconcile."""

from __future__ import annotations

import pytest

from harness_bt.ledger import CommandEvent, CommandState, Ledger, LedgerError


@pytest.fixture
def running(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    ledger.dispatch("nav-1", now=0.05)
    ledger.apply(CommandEvent("nav-1", 1, "started"), now=0.1)
    return ledger.get("nav-1")


def test_started_progress_control_done_and_verdict(ledger, running):
    assert running.state is CommandState.RUNNING and running.started_at == 0.1
    ledger.apply(CommandEvent("nav-1", 2, "progress", progress=0.8), now=0.5)
    assert (running.state, running.progress, running.last_progress_at) == (
        CommandState.RUNNING, 0.8, 0.5)
    ledger.apply(CommandEvent("nav-1", 3, "control_done"), now=1.0)
    assert running.state is CommandState.EVALUATING
    ledger.verdict("nav-1", "SUCCEEDED", evidence=["pose error 0.02 m", {"frame": 41}], now=1.2)
    assert (running.state, running.reason) == (CommandState.SUCCEEDED, "POSTCONDITION_CONFIRMED")
    assert running.evidence == ("pose error 0.02 m", {"frame": 41})
    assert ledger.holder("base") is None


def test_duplicate_and_older_seqs_are_recorded_and_ignored(ledger, running):
    ledger.apply(CommandEvent("nav-1", 3, "progress", progress=0.5), now=0.2)
    ledger.apply(CommandEvent("nav-1", 3, "progress", progress=0.1), now=0.3)
    ledger.apply(CommandEvent("nav-1", 2, "control_done"), now=0.4)
    assert running.state is CommandState.RUNNING
    assert running.progress == 0.5
    tail = [(h.runtime_seq, h.applied, h.reason) for h in running.events[-3:]]
    assert tail == [
        (3, True, "PROGRESS"),
        (3, False, "DUPLICATE_OR_STALE_SEQ"),
        (2, False, "DUPLICATE_OR_STALE_SEQ"),
    ]


def test_aborted_fails_with_the_runtime_reason(ledger, running):
    ledger.apply(CommandEvent("nav-1", 2, "aborted", reason="IK_FAILED"), now=0.3)
    assert (running.state, running.reason) == (CommandState.FAILED, "IK_FAILED")


def test_terminal_state_never_regresses_on_late_events(ledger, running):
    ledger.apply(CommandEvent("nav-1", 2, "control_done"), now=0.3)
    ledger.verdict("nav-1", "FAILED", evidence=["cube still on table"], now=0.4)
    for seq, kind in enumerate(["started", "progress", "control_done", "stopped"], start=3):
        ledger.apply(CommandEvent("nav-1", seq, kind), now=0.5)
    assert running.state is CommandState.FAILED
    assert all(not h.applied for h in running.events[-4:])
    assert running.events[-1].reason == "LATE_AFTER_FAILED"


def test_unsolicited_stop_while_running_fails_with_reason(ledger, running):
    ledger.apply(CommandEvent("nav-1", 2, "stopped", reason="LEASE_EXPIRED"), now=0.3)
    assert (running.state, running.reason) == (
        CommandState.FAILED, "STOPPED_BY_RUNTIME: LEASE_EXPIRED")


def test_runtime_rejection_before_start_rejects(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    ledger.dispatch("nav-1", now=0.05)
    rec = ledger.apply(CommandEvent("nav-1", 1, "rejected", reason="STALE_EPOCH"), now=0.1)
    assert (rec.state, rec.reason) == (CommandState.REJECTED, "RUNTIME_REJECTED: STALE_EPOCH")


def test_a_malformed_event_is_refused():
    with pytest.raises(LedgerError, match="event kind 'exploded' is not one of") as e:
        CommandEvent("nav-1", 1, "exploded")
    assert e.value.code == "INVALID_EVENT"
    with pytest.raises(LedgerError, match="seq -1 must be a non-negative integer"):
        CommandEvent("nav-1", -1, "started")
    with pytest.raises(LedgerError, match="progress nan is not finite"):
        CommandEvent("nav-1", 1, "progress", progress=float("nan"))


def test_event_round_trips_through_the_wire_form():
    ev = CommandEvent("nav-1", 4, "progress", reason="", progress=0.25, timestep=12,
                      data={"distance_m": 0.1})
    assert CommandEvent.from_wire(ev.to_wire()) == ev
    with pytest.raises(LedgerError, match="event is missing 'seq'"):
        CommandEvent.from_wire({"command_id": "x", "kind": "started"})


def test_event_for_an_unknown_command_is_reported(ledger):
    with pytest.raises(LedgerError) as e:
        ledger.apply(CommandEvent("ghost", 1, "started"), now=0.0)
    assert e.value.code == "UNKNOWN_COMMAND"


def test_verdict_for_a_running_command_is_an_invalid_transition(ledger, running):
    with pytest.raises(LedgerError, match="cannot settle command 'nav-1': it is RUNNING") as e:
        ledger.verdict("nav-1", "SUCCEEDED", now=0.2)
    assert e.value.code == "INVALID_TRANSITION"
    assert running.state is CommandState.RUNNING


def test_verdict_must_be_a_known_word(ledger, running):
    ledger.apply(CommandEvent("nav-1", 2, "control_done"), now=0.3)
    with pytest.raises(LedgerError, match="verdict 'MAYBE' is not one of") as e:
        ledger.verdict("nav-1", "MAYBE", now=0.4)
    assert e.value.code == "INVALID_TRANSITION"
    with pytest.raises(LedgerError, match="CANCELED verdict cannot settle"):
        ledger.verdict("nav-1", "CANCELED", now=0.4)


def test_unknown_verdict_holds_the_resource_until_reconciled(ledger, cmd, running):
    ledger.apply(CommandEvent("nav-1", 2, "control_done"), now=0.3)
    ledger.verdict("nav-1", "UNKNOWN", evidence=["cube occluded"], now=0.4)
    assert (running.state, running.reason) == (CommandState.UNKNOWN, "EVIDENCE_INSUFFICIENT")
    with pytest.raises(LedgerError) as e:
        ledger.submit(cmd("nav-2"), now=0.5)
    assert e.value.code == "RESOURCE_BUSY"
    ledger.reconcile("nav-1", now=0.6, note="re-observe")
    assert running.state is CommandState.RECONCILING
    ledger.verdict("nav-1", "SUCCEEDED", evidence=["cube seen on tray"], now=0.7)
    assert running.state is CommandState.SUCCEEDED
    assert ledger.submit(cmd("nav-2"), now=0.8).state is CommandState.ACCEPTED


def test_reconcile_only_from_unknown(ledger, running):
    with pytest.raises(LedgerError, match="only an UNKNOWN command can be reconciled") as e:
        ledger.reconcile("nav-1", now=0.2)
    assert e.value.code == "INVALID_TRANSITION"


def test_cancel_before_dispatch_cancels_at_once(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    rec = ledger.cancel("nav-1", now=0.1)
    assert (rec.state, rec.reason) == (CommandState.CANCELED, "NEVER_DISPATCHED")


def test_cancel_after_dispatch_waits_for_stop_confirmation(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    ledger.dispatch("nav-1", now=0.05)
    rec = ledger.cancel("nav-1", now=0.1, stop_timeout_s=1.0)
    assert (rec.state, rec.stop_deadline) == (CommandState.CANCELING, 1.1)
    ledger.apply(CommandEvent("nav-1", 1, "stopped"), now=0.2)
    assert (rec.state, rec.reason) == (CommandState.CANCELED, "STOP_CONFIRMED")


def test_repeated_cancel_never_extends_the_stop_deadline(ledger, running):
    ledger.cancel("nav-1", now=2.0, stop_timeout_s=1.0)
    ledger.cancel("nav-1", now=2.5, stop_timeout_s=1.0)
    assert running.stop_deadline == 3.0
    assert ledger.tick(now=2.99) == []
    moved = ledger.tick(now=3.0)
    assert [(h.state_before, h.state_after, h.reason) for h in moved] == [
        (CommandState.CANCELING, CommandState.UNKNOWN, "STOP_UNCONFIRMED")
    ]


def test_late_control_done_never_overrides_canceling(ledger, running):
    ledger.cancel("nav-1", now=0.5)
    ledger.apply(CommandEvent("nav-1", 2, "control_done"), now=0.6)
    assert running.state is CommandState.CANCELING
    assert running.events[-1].reason == "LATE_CONTROL_DONE_WHILE_CANCELING"
    assert not running.events[-1].applied


def test_stop_confirmed_after_the_deadline_settles_unknown_as_canceled(ledger, cmd, running):
    ledger.cancel("nav-1", now=0.5, stop_timeout_s=1.0)
    ledger.tick(now=1.6)
    assert (running.state, running.reason) == (CommandState.UNKNOWN, "STOP_UNCONFIRMED")
    with pytest.raises(LedgerError):
        ledger.submit(cmd("nav-2"), now=1.7)
    ledger.apply(CommandEvent("nav-1", 2, "stopped"), now=1.8)
    assert (running.state, running.reason) == (CommandState.CANCELED, "STOP_CONFIRMED")


def test_cancel_while_evaluating_cancels_and_frees(ledger, running):
    ledger.apply(CommandEvent("nav-1", 2, "control_done"), now=0.3)
    rec = ledger.cancel("nav-1", now=0.4)
    assert (rec.state, rec.reason) == (CommandState.CANCELED, "CANCELED_AFTER_CONTROL_DONE")


def test_cancel_of_a_terminal_command_changes_nothing(ledger, running):
    ledger.apply(CommandEvent("nav-1", 2, "aborted"), now=0.3)
    n = len(running.events)
    assert ledger.cancel("nav-1", now=0.4).state is CommandState.FAILED
    assert len(running.events) == n


def test_cancel_with_a_bad_stop_timeout_is_refused(ledger, running):
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(LedgerError) as e:
            ledger.cancel("nav-1", now=0.4, stop_timeout_s=bad)
        assert e.value.code == "INVALID_COMMAND"
        assert e.value.field == "stop_timeout_s"
    assert running.state is CommandState.RUNNING


def test_cancel_of_unknown_remembers_the_stop_request(ledger, running):
    ledger.apply(CommandEvent("nav-1", 2, "control_done"), now=0.3)
    ledger.verdict("nav-1", "UNKNOWN", now=0.4)
    ledger.cancel("nav-1", now=0.5)
    assert (running.state, running.stop_requested) == (CommandState.UNKNOWN, True)
    ledger.apply(CommandEvent("nav-1", 3, "stopped"), now=0.6)
    assert running.state is CommandState.CANCELED


def test_tick_rejects_accepted_commands_past_their_start_deadline(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    assert ledger.tick(now=0.49) == []
    moved = ledger.tick(now=0.5)
    assert [(h.state_after, h.reason) for h in moved] == [
        (CommandState.REJECTED, "EXPIRED_COMMAND")]


def test_tick_cancels_running_commands_past_their_execution_timeout(ledger, running):
    assert ledger.tick(now=10.09) == []
    moved = ledger.tick(now=10.1)
    assert [(h.state_after, h.reason) for h in moved] == [
        (CommandState.CANCELING, "EXECUTION_TIMEOUT")]
    assert running.stop_deadline == pytest.approx(10.1 + ledger.default_stop_timeout_s)


def test_retention_drops_old_terminal_records(cmd):
    led = Ledger(retention_s=5.0)
    led.submit(cmd(world_version=0), now=0.0)
    led.cancel("nav-1", now=1.0)
    led.tick(now=5.9)
    assert "nav-1" in led
    led.tick(now=6.0)
    assert "nav-1" not in led


def test_listeners_see_every_history_entry(ledger, cmd):
    seen = []
    ledger.add_listener(lambda rec, h: seen.append((rec.command_id, h.op, h.state_after.value)))
    ledger.submit(cmd(), now=0.0)
    ledger.dispatch("nav-1", now=0.1)
    ledger.apply(CommandEvent("nav-1", 1, "started"), now=0.2)
    assert seen == [
        ("nav-1", "submit", "ACCEPTED"),
        ("nav-1", "dispatch", "ACCEPTED"),
        ("nav-1", "event:started", "RUNNING"),
    ]
