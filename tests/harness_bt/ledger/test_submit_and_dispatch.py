"""Submitting and dispatching: dedup, conflicts, stale premises, budgets, resources."""

from __future__ import annotations

import math

import pytest

from harness_bt.ledger import CommandEvent, CommandState, Ledger, LedgerError


def codes(excinfo: pytest.ExceptionInfo[LedgerError]) -> str:
    return excinfo.value.code


def test_submit_accepts_and_records_history_with_both_times(ledger, cmd):
    rec = ledger.submit(cmd(), now=0.0)
    assert rec.state is CommandState.ACCEPTED
    assert rec.command.command_id == "nav-1"
    assert [(h.op, h.state_after, h.mono, h.wall) for h in rec.events] == [
        ("submit", CommandState.ACCEPTED, 0.0, 1_700_000_000.0)
    ]
    assert ledger.get("nav-1") is rec
    assert ledger.holder("base") is rec


def test_resend_with_same_content_returns_original_record_without_refreshing_budget(ledger, cmd):
    original = ledger.submit(cmd(), now=0.0)
    again = ledger.submit(cmd(), now=0.4)
    assert again is original
    assert again.start_deadline == pytest.approx(0.5)
    assert len(again.events) == 1
    rec = ledger.dispatch("nav-1", now=0.6)
    assert (rec.state, rec.reason) == (CommandState.REJECTED, "EXPIRED_COMMAND")


def test_resend_of_a_running_command_returns_it_running(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    ledger.dispatch("nav-1", now=0.1)
    ledger.apply(CommandEvent("nav-1", 1, "started"), now=0.2)
    assert ledger.submit(cmd(), now=0.3).state is CommandState.RUNNING


def test_same_id_with_different_content_is_a_conflict(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    with pytest.raises(LedgerError, match="already used by a command with different content") as e:
        ledger.submit(cmd(params={"x_m": 2.0, "y_m": 0.5, "frame_id": "map"}), now=0.1)
    assert codes(e) == "COMMAND_ID_CONFLICT"
    assert e.value.command_id == "nav-1"


def test_command_planned_on_an_older_world_is_stale(ledger, cmd):
    with pytest.raises(LedgerError, match="world version 6, the world is now at 7") as e:
        ledger.submit(cmd(world_version=6), now=0.0)
    assert codes(e) == "STALE_WORLD"
    assert "nav-1" not in ledger


def test_command_from_an_older_epoch_is_refused(ledger, cmd):
    ledger.epoch = 3
    with pytest.raises(LedgerError, match="epoch 2 is older than the ledger's epoch 3") as e:
        ledger.submit(cmd(epoch=2), now=0.0)
    assert codes(e) == "STALE_EPOCH"
    assert ledger.submit(cmd(epoch=3), now=0.0).state is CommandState.ACCEPTED


def test_command_without_start_budget_is_expired(ledger, cmd):
    with pytest.raises(LedgerError, match="no start budget left") as e:
        ledger.submit(cmd(start_within_ms=0), now=0.0)
    assert codes(e) == "EXPIRED_COMMAND"
    assert e.value.field == "start_within_ms"


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"command_id": ""}, "command_id", "is empty"),
        ({"skill": " "}, "skill", "is empty"),
        ({"params": {"x_m": math.nan}}, "params.x_m", "is nan; every number must be finite"),
        ({"params": {"goal": {"xy": [0.0, math.inf]}}}, "params.goal.xy[1]", "is inf"),
        ({"start_within_ms": math.nan}, "start_within_ms", "budgets must be finite"),
        ({"start_within_ms": -5.0}, "start_within_ms", "must not be negative"),
        ({"execution_timeout_ms": math.inf}, "execution_timeout_ms", "must be finite"),
        ({"execution_timeout_ms": 0}, "execution_timeout_ms", "positive timeout"),
        ({"resources": ("arm", "arm")}, "resources", "names a resource twice"),
        ({"resources": ("",)}, "resources[0]", "is empty"),
        ({"schema_version": 9}, "schema_version", "expected 1"),
    ],
)
def test_malformed_commands_are_invalid_with_the_field_named(ledger, cmd, overrides, field,
                                                             message):
    with pytest.raises(LedgerError, match=message) as e:
        ledger.submit(cmd(**overrides), now=0.0)
    assert codes(e) == "INVALID_COMMAND"
    assert e.value.field == field
    assert len(ledger) == 0


def test_non_finite_now_is_refused(ledger, cmd):
    with pytest.raises(LedgerError, match="now=nan must be a finite") as e:
        ledger.submit(cmd(), now=math.nan)
    assert codes(e) == "INVALID_COMMAND"


def test_busy_resource_is_refused_with_the_holder_named(ledger, cmd):
    ledger.submit(cmd("nav-1"), now=0.0)
    with pytest.raises(LedgerError, match="resource 'base' is held by command 'nav-1'") as e:
        ledger.submit(cmd("nav-2"), now=0.1)
    assert codes(e) == "RESOURCE_BUSY"
    assert e.value.details["holder"] == "nav-1"
    assert "nav-2" not in ledger


def test_other_resources_are_independent(ledger, cmd):
    ledger.submit(cmd("nav-1"), now=0.0)
    rec = ledger.submit(cmd("grip-1", skill="grasp", resources=("gripper",)), now=0.0)
    assert rec.state is CommandState.ACCEPTED
    assert ledger.held_resources() == {"base": "nav-1", "gripper": "grip-1"}


def test_resource_is_free_once_the_holder_is_terminal(ledger, cmd):
    ledger.submit(cmd("nav-1"), now=0.0)
    ledger.cancel("nav-1", now=0.1)
    assert ledger.get("nav-1").state is CommandState.CANCELED
    assert ledger.submit(cmd("nav-2"), now=0.2).state is CommandState.ACCEPTED


def test_dispatch_marks_once_and_a_second_dispatch_changes_nothing(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    rec = ledger.dispatch("nav-1", now=0.05)
    assert (rec.state, rec.dispatched_at) == (CommandState.ACCEPTED, 0.05)
    ledger.dispatch("nav-1", now=0.07)
    assert rec.dispatched_at == 0.05
    assert [h.op for h in rec.events] == ["submit", "dispatch"]


def test_dispatch_after_the_start_deadline_rejects_and_frees_the_resource(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    rec = ledger.dispatch("nav-1", now=0.5)
    assert (rec.state, rec.reason) == (CommandState.REJECTED, "EXPIRED_COMMAND")
    assert ledger.holder("base") is None


def test_dispatch_rejects_when_the_world_changed_since_planning(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    ledger.world_version = 8
    rec = ledger.dispatch("nav-1", now=0.1)
    assert (rec.state, rec.reason) == (CommandState.REJECTED, "STALE_WORLD")
    assert "now at 8" in rec.events[-1].detail


def test_dispatch_rejects_when_a_newer_epoch_took_over(ledger, cmd):
    ledger.submit(cmd(), now=0.0)
    ledger.epoch = 1
    rec = ledger.dispatch("nav-1", now=0.1)
    assert (rec.state, rec.reason) == (CommandState.REJECTED, "STALE_EPOCH")


def test_dispatch_rejects_when_an_object_premise_no_longer_holds(ledger, cmd):
    ledger.premise_check = lambda c: "cube moved (version 3 -> 4)" if c.premises else None
    ledger.submit(cmd(premises={"cube": 3}), now=0.0)
    rec = ledger.dispatch("nav-1", now=0.1)
    assert (rec.state, rec.reason) == (CommandState.REJECTED, "STALE_PREMISE")
    assert rec.events[-1].detail == "cube moved (version 3 -> 4)"


def test_unknown_command_id_is_reported(ledger):
    with pytest.raises(LedgerError, match="no command 'ghost' in the ledger") as e:
        ledger.dispatch("ghost", now=0.0)
    assert codes(e) == "UNKNOWN_COMMAND"


def test_closed_ledger_refuses_calls(cmd):
    led = Ledger()
    led.close()
    with pytest.raises(LedgerError, match="closed") as e:
        led.submit(cmd(world_version=0), now=0.0)
    assert codes(e) == "LEDGER_CLOSED"
