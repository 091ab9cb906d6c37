"""The ledger across the ROS 2 action protocol: the fault table, against a scripted action
server on the same domain, over each transport (Cyclone DDS and Zenoh). Time is a fake clock
whose ``sleep`` lets the server answer, so every wait is a fixed number of polls."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from harness_bt.clock import FakeClock
from harness_bt.errors import BridgeError
from harness_bt.ledger import Command, CommandEvent, CommandState, Ledger
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.ros2.actions import ActionServer, GoalStatus, goal_uuid
from runtime_bridge.ros2.bridge import Ros2Bridge
from runtime_bridge.ros2.mapping import load_mapping
from runtime_bridge.ros2.server import EXECUTE_SKILL
from runtime_bridge.ros2.transport import Transport
from runtime_bridge.ros2.types import RosTypes

ACTION = "/harness/skills/move_to"
TERMINAL = {CommandState.SUCCEEDED, CommandState.FAILED, CommandState.CANCELED,
            CommandState.REJECTED}


class SpinClock(FakeClock):
    """A fake clock; each ``sleep`` advances it and spins the server once."""

    def __init__(self) -> None:
        super().__init__()
        self.spin: Callable[[], None] = lambda: None

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)
        self.spin()


class Rig:
    """A scripted action server, the bridge, and a ledger fed by the bridge's events."""

    def __init__(self, make: Callable[[], Transport], types: RosTypes) -> None:
        self.make, self.types = make, types
        self.clock = SpinClock()
        self.goals_seen: list[uuid.UUID] = []
        self.accept = True
        self.drop_replies = 0
        self.cancel_ok = True
        self.server = self._server()
        mapping = load_mapping({"skills": {"move_to": {
            "action": ACTION, "type": EXECUTE_SKILL, "progress": "progress", "reason": "reason",
            "goal": {"skill": "{skill}", "command_id": "{command_id}",
                     "command_json": "{command_json}"}}}}, types)
        self.bridge = Ros2Bridge(make(), mapping, clock=self.clock, timeout_s=0.2, retries=3)
        self.ledger = Ledger(wall_clock=lambda: 1_700_000_000.0)
        self.history: dict[str, list[CommandState]] = {}

    def _server(self) -> ActionServer:
        server = ActionServer(self.make(), ACTION, EXECUTE_SKILL, on_goal=self._on_goal,
                              on_cancel=lambda gid: self.cancel_ok, clock=self.clock.wall)
        send = server._send
        real_reply = send.reply

        def reply(request: Any, message: Any) -> None:  # the network may lose an answer
            if self.drop_replies > 0:
                self.drop_replies -= 1
                return
            real_reply(request, message)

        send.reply = reply  # type: ignore[method-assign]
        self.clock.spin = server.spin_once
        return server

    def _on_goal(self, gid: uuid.UUID, goal: Any) -> bool:
        self.goals_seen.append(gid)
        return self.accept

    def command(self, cid: str = "move-1") -> Command:
        return Command(command_id=cid, task_id="t", robot_id="r", skill="move_to",
                       params={"target": [0.4, 0.0, 0.3]}, resources=("arm",), world_version=0,
                       start_within_ms=5_000, execution_timeout_ms=60_000)

    def dispatch(self, cmd: Command) -> Any:
        now = self.clock.monotonic()
        self.ledger.submit(cmd, now=now)
        self.ledger.dispatch(cmd.command_id, now=now)
        ack = self.bridge.dispatch(cmd)
        if not ack.accepted:
            self.ledger.apply(CommandEvent(cmd.command_id, 0, "rejected", reason=ack.reason),
                              now=now)
        self._note(cmd.command_id)
        return ack

    def pump(self, n: int = 5) -> list[CommandEvent]:
        out: list[CommandEvent] = []
        for _ in range(n):
            self.clock.sleep(0.01)
            for event in self.bridge.poll().events:
                out.append(event)
                self.ledger.apply(event, now=self.clock.monotonic())
                self._note(event.command_id)
        return out

    def _note(self, cid: str) -> None:
        states = self.history.setdefault(cid, [])
        state = self.ledger.get(cid).state
        if not states or states[-1] is not state:
            states.append(state)

    def regressions(self) -> int:
        """Terminal states that changed afterwards."""
        count = 0
        for states in self.history.values():
            ends = [k for k, s in enumerate(states) if s in TERMINAL]
            if ends and ends[0] != len(states) - 1:
                count += 1
        return count


@pytest.fixture
def rig(transport: Callable[[], Transport], types: RosTypes) -> Rig:
    return Rig(transport, types)


def test_an_accepted_goal_runs_reports_feedback_as_progress_and_ends_in_evaluation(
        rig: Rig) -> None:
    cmd = rig.command()
    ack = rig.dispatch(cmd)
    assert (ack.accepted, ack.state) == (True, RuntimeState.PENDING)
    gid = goal_uuid(cmd.command_id)
    assert rig.goals_seen == [gid]
    rig.server.set_status(gid, GoalStatus.EXECUTING)
    rig.server.feedback(gid, progress=0.25, stage="approach")
    rig.server.feedback(gid, progress=0.75, stage="approach")
    events = rig.pump()
    assert [(str(e.kind), e.progress) for e in events] == [
        ("started", None), ("progress", 0.25), ("progress", 0.75)]
    assert rig.ledger.get(cmd.command_id).state is CommandState.RUNNING
    rig.server.set_status(gid, GoalStatus.SUCCEEDED, rig.server.result(reason=""))
    events = rig.pump()
    assert [str(e.kind) for e in events] == ["control_done"]
    assert rig.ledger.get(cmd.command_id).state is CommandState.EVALUATING
    assert [e.seq for e in rig.bridge.goals[cmd.command_id].events] == [1, 2, 3, 4]


def test_a_rejected_goal_is_refused_with_the_servers_name_and_the_goal(rig: Rig) -> None:
    rig.accept = False
    cmd = rig.command()
    ack = rig.dispatch(cmd)
    assert (ack.accepted, ack.state) == (False, RuntimeState.REJECTED)
    assert f"the action server {ACTION} rejected goal {goal_uuid(cmd.command_id)}" in ack.reason
    assert rig.ledger.get(cmd.command_id).state is CommandState.REJECTED
    assert rig.pump() == []


def test_a_resend_returns_the_first_answer_and_sends_no_second_goal(rig: Rig) -> None:
    cmd = rig.command()
    rig.dispatch(cmd)
    again = rig.bridge.dispatch(cmd)
    assert (again.accepted, again.duplicate) == (True, True)
    assert rig.goals_seen == [goal_uuid(cmd.command_id)]
    assert rig.bridge.goals_sent == 1


def test_a_lost_send_goal_answer_is_asked_again_with_the_same_goal_id_and_runs_once(
        rig: Rig) -> None:
    rig.drop_replies = 1
    cmd = rig.command()
    ack = rig.dispatch(cmd)
    assert ack.accepted
    assert rig.bridge.goals_sent == 2  # the same goal id twice
    assert rig.goals_seen == [goal_uuid(cmd.command_id)]  # handed to the server once
    assert rig.server.duplicate_goals == 1


def test_no_answer_at_all_is_outcome_unknown_never_a_new_goal(rig: Rig) -> None:
    rig.drop_replies = 3
    cmd = rig.command()
    rig.ledger.submit(cmd, now=0.0)
    with pytest.raises(BridgeError, match="got no answer after 3 tries; the server may or may "
                       "not have it") as err:
        rig.bridge.dispatch(cmd)
    assert err.value.code == "OUTCOME_UNKNOWN"
    assert err.value.details["goal_id"] == str(goal_uuid(cmd.command_id))
    assert rig.goals_seen == [goal_uuid(cmd.command_id)]
    # the status topic settles it: the server had it all along
    rig.server.set_status(goal_uuid(cmd.command_id), GoalStatus.EXECUTING)
    rig.pump()
    assert rig.bridge.query(cmd.command_id).state is RuntimeState.RUNNING


def test_a_cancel_is_canceling_until_the_goal_is_canceled(rig: Rig) -> None:
    cmd = rig.command()
    gid = goal_uuid(cmd.command_id)
    rig.dispatch(cmd)
    rig.server.set_status(gid, GoalStatus.EXECUTING)
    rig.pump()
    rig.ledger.cancel(cmd.command_id, now=rig.clock.monotonic(), stop_timeout_s=5.0)
    ack = rig.bridge.cancel(cmd.command_id)
    assert (ack.accepted, ack.state) == (True, RuntimeState.STOPPING)
    assert rig.server.goals[gid].status is GoalStatus.CANCELING
    assert rig.pump() == []  # CANCELING on the server is no event: not stopped yet
    assert rig.ledger.get(cmd.command_id).state is CommandState.CANCELING
    rig.server.set_status(gid, GoalStatus.CANCELED, rig.server.result(reason="stopped"))
    assert [str(e.kind) for e in rig.pump()] == ["stopped"]
    assert rig.ledger.get(cmd.command_id).state is CommandState.CANCELED


def test_a_cancel_accepted_then_succeeded_ends_as_the_server_says_and_never_regresses(
        rig: Rig) -> None:
    cmd = rig.command()
    gid = goal_uuid(cmd.command_id)
    rig.dispatch(cmd)
    rig.server.set_status(gid, GoalStatus.EXECUTING)
    rig.pump()
    rig.ledger.cancel(cmd.command_id, now=rig.clock.monotonic(), stop_timeout_s=5.0)
    assert rig.bridge.cancel(cmd.command_id).accepted
    rig.server.set_status(gid, GoalStatus.SUCCEEDED, rig.server.result(reason=""))
    assert [str(e.kind) for e in rig.pump()] == ["control_done"]
    # "cancel accepted" is not CANCELED, and a success after it is no stop confirmation:
    # the ledger notes it and stays CANCELING until its stop deadline, then UNKNOWN ...
    rec = rig.ledger.get(cmd.command_id)
    assert rec.state is CommandState.CANCELING
    assert any("LATE_CONTROL_DONE_WHILE_CANCELING" in str(h) for h in rig.ledger.history())
    rig.clock.advance(6.0)
    rig.ledger.tick(now=rig.clock.monotonic())
    assert rig.ledger.get(cmd.command_id).state is CommandState.UNKNOWN
    # ... and reconciliation reads the runtime's proof: control done after a stop request
    status = rig.bridge.query(cmd.command_id)
    assert status.state is RuntimeState.CONTROL_DONE
    assert [str(e.kind) for e in status.events] == ["started", "control_done"]
    assert rig.bridge.cancel(cmd.command_id).accepted is False  # over: nothing to cancel
    assert rig.regressions() == 0


def test_a_result_reported_twice_is_applied_once(rig: Rig) -> None:
    cmd = rig.command()
    gid = goal_uuid(cmd.command_id)
    rig.dispatch(cmd)
    rig.server.set_status(gid, GoalStatus.EXECUTING)
    rig.server.set_status(gid, GoalStatus.ABORTED, rig.server.result(reason="IK_FAILED: out "
                                                                     "of reach"))
    rig.bridge.goals[cmd.command_id].client.get_result(gid)  # a second get_result answer
    events = rig.pump()
    assert [str(e.kind) for e in events] == ["started", "aborted"]
    assert events[-1].reason == "IK_FAILED: out of reach"
    assert rig.bridge.duplicates >= 2  # status topic + second result: recorded, not applied
    assert rig.ledger.get(cmd.command_id).state is CommandState.FAILED
    assert rig.regressions() == 0


def test_a_lost_server_leaves_the_command_unknown_and_its_restart_reconciles_it(
        rig: Rig) -> None:
    cmd = rig.command()
    gid = goal_uuid(cmd.command_id)
    rig.dispatch(cmd)
    rig.server.set_status(gid, GoalStatus.EXECUTING)
    rig.pump()
    rig.server._p.participant.close()  # the server dies mid-goal
    rig.clock.spin = lambda: None
    with pytest.raises(BridgeError, match=f"the action server {ACTION} is gone") as err:
        rig.bridge.query(cmd.command_id)
    assert err.value.code == "RUNTIME_UNREACHABLE"
    assert rig.ledger.get(cmd.command_id).state is CommandState.RUNNING  # no guess
    # restarted: it remembers the goal (its journal) and that it did not finish it
    from runtime_bridge.ros2.actions import ServedGoal

    rig.server = rig._server()
    rig.server.goals[gid] = ServedGoal(gid, None, 0.0, GoalStatus.EXECUTING)
    rig.server.set_status(gid, GoalStatus.ABORTED, rig.server.result(
        reason="RUNTIME_RESTARTED"))
    events = rig.pump(n=30)
    assert [(str(e.kind), e.reason) for e in events] == [("aborted", "RUNTIME_RESTARTED")]
    assert rig.bridge.query(cmd.command_id).state is RuntimeState.ABORTED
    assert rig.goals_seen == [gid]  # never sent again
    assert rig.regressions() == 0
