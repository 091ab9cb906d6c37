"""A runtime's executors behind ROS 2 action servers (:class:`Ros2RobotServer`), driven
through the bridge over each transport (DDS on loopback, Zenoh): the kinematic backend and the
test executors."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness_bt.errors import BridgeError
from harness_bt.ledger import Command, CommandEvent
from harness_bt.runtime.bridge import RuntimeState
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.ros2.actions import ActionClient, goal_uuid
from runtime_bridge.ros2.bridge import Ros2Bridge
from runtime_bridge.ros2.mapping import SkillMapping, load_mapping
from runtime_bridge.ros2.server import EXECUTE_SKILL, RobotServerSettings, Ros2RobotServer
from runtime_bridge.ros2.transport import Transport
from runtime_bridge.ros2.types import RosTypes
from tests.runtime_bridge import executors

SKILLS = ("move_to", "wait", "abort_after")


GRIP = {"action": "/gripper_controller/gripper_cmd", "type": "control_msgs/action/GripperCommand",
        "goal": {"command.position": "{params.width}", "command.max_effort": 20.0},
        "progress": "position"}


def _mapping(types: RosTypes) -> SkillMapping:
    skills: dict[str, Any] = {s: {
        "action": f"/robot/{s}", "type": EXECUTE_SKILL, "progress": "progress",
        "reason": "reason", "goal": {"skill": "{skill}", "command_id": "{command_id}",
                                     "command_json": "{command_json}",
                                     "start_budget_ms": "{start_budget_ms}"}}
        for s in SKILLS}
    return load_mapping({"skills": {**skills, "grip": GRIP}}, types)


def _command(cid: str, skill: str, **params: Any) -> Command:
    return Command(command_id=cid, task_id="t", robot_id="r", skill=skill, params=params,
                   resources=("arm",), world_version=0, start_within_ms=5_000,
                   execution_timeout_ms=600_000)


class Robot:
    def __init__(self, make: Callable[[], Transport], types: RosTypes, tmp: Path,
                 closing: Callable[..., Any]) -> None:
        self.make, self.types, self.tmp, self.closing = make, types, tmp, closing
        self.server: Ros2RobotServer | None = None

    def start(self) -> Ros2RobotServer:
        self.server = Ros2RobotServer(KinematicBackend(dt=1 / 30), executors.factory,
                                      _mapping(self.types), self.types, RobotServerSettings(
                                          connect=lambda _: self.make(),
                                          journal=str(self.tmp / "runtime.db"),
                                          goals_file=str(self.tmp / "goals.jsonl"),
                                          publish_images=False))
        # stopped before the transport it made is closed (teardown closes the last made
        # first): the control thread must not be polling a closed session
        self.closing(self, self.stop)
        self.server.start()
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


@pytest.fixture
def robot(transport: Callable[[], Transport], types: RosTypes, tmp_path: Path,
          closing: Callable[..., Any]) -> Robot:
    made = Robot(transport, types, tmp_path, closing)
    made.start()
    return made


@pytest.fixture
def bridge(robot: Robot, transport: Callable[[], Transport], types: RosTypes) -> Ros2Bridge:
    b = Ros2Bridge(transport(), _mapping(types), timeout_s=2.0)
    assert b.wait_for_servers(20.0) == []
    return b


def _until(bridge: Ros2Bridge, done: Callable[[list[CommandEvent]], bool],
           polls: int = 3000) -> list[CommandEvent]:
    """Poll (bounded) until ``done(events so far)``."""
    events: list[CommandEvent] = []
    for _ in range(polls):
        events.extend(bridge.poll().events)
        if done(events):
            return events
        time.sleep(0.01)
    raise AssertionError(f"not done after {polls} polls; events: {events}")


def _kinds(events: list[CommandEvent]) -> list[str]:
    return [str(e.kind) for e in events]


def test_a_skill_runs_as_one_goal_and_each_report_reaches_the_ledger_once(
        bridge: Ros2Bridge) -> None:
    cmd = _command("move-1", "move_to", target=[0.35, 0.0, 0.45], max_step=0.02)
    assert bridge.dispatch(cmd).accepted
    assert bridge.dispatch(cmd).duplicate  # a resend: the first answer, nothing sent
    events = _until(bridge, lambda ev: "control_done" in _kinds(ev))
    kinds = _kinds(events)
    assert kinds[0] == "started" and kinds[-1] == "control_done"
    assert set(kinds[1:-1]) <= {"progress"}
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert executors.STARTS["move-1"] == 1
    assert bridge.goals_sent == 1
    assert bridge.query("move-1").state is RuntimeState.CONTROL_DONE


def test_an_executors_abort_reaches_the_harness_with_its_reason(bridge: Ros2Bridge) -> None:
    bridge.dispatch(_command("abort-1", "abort_after", steps=3, reason="IK_FAILED: out of reach"))
    events = _until(bridge, lambda ev: "aborted" in _kinds(ev))
    assert events[-1].reason == "IK_FAILED: out of reach"
    assert bridge.query("abort-1").state is RuntimeState.ABORTED


def test_a_cancel_stops_the_executor_and_the_goal_ends_canceled(bridge: Ros2Bridge) -> None:
    bridge.dispatch(_command("wait-1", "wait", steps=100_000))
    _until(bridge, lambda ev: "started" in _kinds(ev))
    ack = bridge.cancel("wait-1")
    assert (ack.accepted, ack.state) == (True, RuntimeState.STOPPING)
    events = _until(bridge, lambda ev: "stopped" in _kinds(ev))
    assert _kinds(events)[-1] == "stopped"
    assert bridge.query("wait-1").state is RuntimeState.STOPPED


def test_a_goal_whose_id_is_not_its_commands_is_rejected(
        robot: Robot, transport: Callable[[], Transport], types: RosTypes) -> None:
    client = ActionClient(transport(), "/robot/wait", EXECUTE_SKILL)
    for _ in range(2000):
        if client.server_ready:
            break
        time.sleep(0.01)
    cmd = _command("wait-2", "wait", steps=1)
    import json

    client.send_goal(uuid.uuid4(), client.goal(skill="wait", command_id="wait-2",
                                               command_json=json.dumps(cmd.to_wire())))
    answers: list[Any] = []
    for _ in range(2000):
        answers += [u for u in client.poll() if u.kind == "response"]
        if answers:
            break
        time.sleep(0.01)
    assert [a.accepted for a in answers] == [False]
    assert executors.STARTS["wait-2"] == 0


def test_a_restarted_robot_answers_for_the_goal_it_was_running_and_never_runs_it_again(
        robot: Robot, bridge: Ros2Bridge) -> None:
    bridge.dispatch(_command("wait-3", "wait", steps=100_000))
    _until(bridge, lambda ev: "started" in _kinds(ev))
    robot.stop()  # the robot dies mid-goal
    with pytest.raises(BridgeError, match="is gone") as err:
        for _ in range(3000):  # until its lease runs out
            bridge.query("wait-3")
            time.sleep(0.01)
    assert err.value.code == "RUNTIME_UNREACHABLE"
    robot.start()  # the same journal and goal file
    events = _until(bridge, lambda ev: "aborted" in _kinds(ev))
    # (progress it published before it died may still arrive first)
    assert set(_kinds(events)[:-1]) <= {"progress"} and _kinds(events)[-1] == "aborted"
    assert "RUNTIME_RESTARTED" in events[-1].reason
    assert bridge.query("wait-3").state is RuntimeState.ABORTED
    assert executors.STARTS["wait-3"] == 1  # never run again
    assert goal_uuid("wait-3") in robot.server.servers["wait"].goals  # type: ignore[union-attr]


def test_a_skill_mapped_onto_gripper_command_runs_through_the_standard_action(
        bridge: Ros2Bridge, robot: Robot) -> None:
    ack = bridge.dispatch(_command("grip-1", "grip", width=0.04))
    assert ack.accepted
    events = _until(bridge, lambda ev: "control_done" in _kinds(ev))
    assert _kinds(events)[0] == "started" and _kinds(events)[-1] == "control_done"
    gid = goal_uuid("grip-1")
    # the robot ran the skill the mapping names, with the param read back from the goal
    assert executors.STARTS[f"goal-{gid}"] == 1
    server = robot.server.servers["grip"]  # type: ignore[union-attr]
    assert server.action_type == "control_msgs/action/GripperCommand"
    assert server.goals[gid].result.reached_goal is True
    observed = robot.server.host.observation  # type: ignore[union-attr]
    assert observed is not None and observed.gripper_width == pytest.approx(0.04)
    assert bridge.dispatch(_command("grip-1", "grip", width=0.04)).duplicate
    assert executors.STARTS[f"goal-{gid}"] == 1
