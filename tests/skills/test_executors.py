"""Each executor, run by the real executor host: against the kinematic backend (exact, to see
what was commanded), against backends that block or drift (stall detection), and one grasp
against the PyBullet simulator (the fingers stop on the cube)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from harness_bt.clock import FakeClock
from harness_bt.ledger import Command, CommandEvent
from harness_bt.runtime.observation import Observation
from runtime_bridge.backends.kinematic import KinematicBackend
from runtime_bridge.host import ExecutorHost, HostConfig
from skills.executors import executor_registry
from skills.geometry import HOME_JOINTS, grasp_orientation, qangle, yaw_quat

DT = 1.0 / 30.0


def command(cid: str, skill: str, **params: Any) -> Command:
    return Command(command_id=cid, skill=skill, params=params, start_within_ms=1000,
                   execution_timeout_ms=60_000)


def drive(backend: Any, cmd: Command, *, steps: int = 600, cancel_at: int | None = None
          ) -> tuple[list[CommandEvent], ExecutorHost]:
    """Submit ``cmd`` and step until it ends; every event of the command, in order."""
    clock = FakeClock()
    host = ExecutorHost(backend, executor_registry(), clock=clock, config=HostConfig(lease_s=None))
    ack = host.submit(cmd)
    assert ack.accepted, ack.reason
    events: list[CommandEvent] = []
    for i in range(steps):
        if cancel_at is not None and i == cancel_at:
            host.cancel(cmd.command_id)
        events += [e for e in host.step().events if e.command_id == cmd.command_id]
        clock.advance(DT)
        if events and str(events[-1].kind) in ("control_done", "aborted", "stopped", "rejected"):
            return events, host
    raise AssertionError(f"{cmd.skill} did not finish in {steps} steps: {events[-3:]}")


def final(events: list[CommandEvent]) -> tuple[str, str]:
    return str(events[-1].kind), events[-1].reason


def test_move_ee_to_walks_to_the_goal_in_bounded_steps_reporting_distance_left() -> None:
    kin = KinematicBackend()
    events, _ = drive(kin, command("m", "move_ee_to", target=[0.5, 0.1, 0.2], speed_mps=0.3))
    assert final(events) == ("control_done", "CONTROL_DONE")
    assert np.allclose(kin.position, [0.5, 0.1, 0.2], atol=1e-9)
    steps = [np.linalg.norm(a["action"][0]) for a in kin.actions]
    assert max(steps) <= 0.3 * DT + 1e-12
    progress = [e.progress for e in events if str(e.kind) == "progress"]
    assert progress[0] == pytest.approx(0.2449, abs=1e-3)
    assert all(b <= a + 1e-9 for a, b in itertools.pairwise(progress))
    assert events[-1].progress == 0.0


def test_approach_from_low_rises_first_opens_and_turns_to_the_cube() -> None:
    kin = KinematicBackend(home=(0.45, -0.1, 0.05))
    kin.fingers[:] = 0.0
    cube = [0.55, 0.1, 0.02, *yaw_quat(0.6)]
    events, _ = drive(kin, command("a", "approach", object_id="c", object_pose=cube))
    assert final(events)[0] == "control_done"
    first = np.array(kin.actions[0]["action"][0])
    assert first[0] == 0 and first[1] == 0 and first[2] > 0  # straight up
    assert all(a["action"][2] == [0.04, 0.04] for a in kin.actions)  # opening all the way
    assert np.allclose(kin.position, [0.55, 0.1, 0.12], atol=1e-9)
    assert qangle(kin.quaternion, grasp_orientation(0.6)) < 1e-6  # turned to the cube's yaw


def test_grasp_centres_descends_and_closes_until_the_fingers_stop() -> None:
    kin = KinematicBackend(home=(0.5, 0.02, 0.12))
    events, _ = drive(kin, command("g", "grasp", object_id="c",
                                   object_pose=[0.5, 0.0, 0.02]))
    assert final(events)[0] == "control_done"
    assert np.allclose(kin.position, [0.5, 0.0, 0.02], atol=1e-9)
    assert kin.fingers.tolist() == [0.0, 0.0]  # nothing in between: closed all the way


def test_grasp_on_a_real_cube_stops_at_its_width() -> None:
    from runtime_bridge.sim import SimBackend, SimConfig

    sim = SimBackend(SimConfig(scenes=("pick_cube",), cameras=(), seed=4))
    try:
        host = ExecutorHost(sim, executor_registry(), clock=FakeClock(),
                            config=HostConfig(lease_s=None))
        host.reset()
        truth = sim.env.ground_truth()["objects"]["red_cube"]  # the test places the command
        host.submit(command("g", "grasp", object_id="red_cube",
                            object_pose=truth["position"] + truth["quaternion_wxyz"]))
        kinds = [str(e.kind) for _ in range(300) for e in host.step().events]
        assert kinds[0] == "started" and kinds[-1] == "control_done"
        assert host.observation is not None
        width = host.observation.gripper_width
        assert width is not None
        assert 0.03 < width < 0.041
        assert sim.env.ground_truth()["held"] == ["red_cube"]
    finally:
        sim.close()


def test_lift_raises_by_the_height_then_settles() -> None:
    kin = KinematicBackend(home=(0.5, 0.0, 0.02))
    events, _ = drive(kin, command("l", "lift", object_id="c", object_pose=[0.5, 0, 0.02],
                                   height_m=0.1, settle_s=0.2))
    assert final(events)[0] == "control_done"
    assert kin.position[2] == pytest.approx(0.12)
    assert [a["action"][0] for a in list(kin.actions)[-6:]] == [[0.0, 0.0, 0.0]] * 6  # held


def test_release_opens_the_hand() -> None:
    kin = KinematicBackend()
    kin.fingers[:] = 0.0
    events, _ = drive(kin, command("r", "release"))
    assert final(events)[0] == "control_done"
    assert kin.fingers.tolist() == [0.04, 0.04]


def test_place_lowers_lets_go_and_backs_off() -> None:
    kin = KinematicBackend(home=(0.45, 0.0, 0.2))
    kin.fingers[:] = 0.02
    events, _ = drive(kin, command("p", "place", object_id="c", target_id="t",
                                   target_pose=[0.5, 0.2, 0.02], min_height_m=0.01,
                                   retreat_m=0.08))
    assert final(events)[0] == "control_done"
    lowest = min(a for a in np.cumsum([0.2] + [x["action"][0][2] for x in kin.actions]))
    assert lowest == pytest.approx(0.03)
    assert np.allclose(kin.position, [0.5, 0.2, 0.11], atol=1e-9)
    assert kin.fingers.tolist() == [0.04, 0.04]


class Floor(KinematicBackend):
    """The hand cannot go below ``floor`` (something is in the way); the command still moves."""

    def __init__(self, floor: float, **kw: Any) -> None:
        super().__init__(**kw)
        self.floor = floor
        self.commanded_z = float(self.position[2])

    def step(self, action: Mapping[str, Any]) -> Observation:
        if action["control_type"] == "ee_pose":
            self.commanded_z += float(action["action"][0][2])
        super().step(action)
        self.position[2] = max(self.commanded_z, self.floor)
        return self._observe(reset=False)


def test_place_stops_lowering_on_contact_and_still_lets_go() -> None:
    kin = Floor(0.08, home=(0.5, 0.2, 0.2))
    events, _ = drive(kin, command("p", "place", object_id="c", target_id="t",
                                   target_pose=[0.5, 0.2, 0.02]))
    assert final(events)[0] == "control_done"
    assert kin.fingers.tolist() == [0.04, 0.04]
    assert kin.commanded_z < 0.08 + 0.08 + 0.02  # pulled back onto the contact, then backed off


def test_home_moves_the_joints_in_joint_space() -> None:
    kin = KinematicBackend()
    events, _ = drive(kin, command("h", "home"))
    assert final(events)[0] == "control_done"
    assert np.allclose(kin.joints, HOME_JOINTS, atol=1e-9)
    moves = [a for a in kin.actions if a["control_type"] != "ee_pose"]
    holds = [a for a in kin.actions if a["control_type"] == "ee_pose"]
    assert moves and all(a["action"][0] == [0.0, 0.0, 0.0] for a in holds)


class Stuck(KinematicBackend):
    """Inverse kinematics fails: the hand never moves (the simulator holds)."""

    def step(self, action: Mapping[str, Any]) -> Observation:
        here = self.position.copy()
        super().step(action)
        self.position = here
        return self._observe(reset=False)


def test_an_arm_that_does_not_follow_is_aborted_not_following() -> None:
    events, _ = drive(Stuck(), command("m", "move_ee_to", target=[0.5, 0.1, 0.2]))
    kind, reason = final(events)
    assert kind == "aborted"
    assert reason.startswith("NOT_FOLLOWING: in 'move' the arm stays")
    assert "inverse kinematics failed or something blocks it" in reason


def test_an_arm_that_settles_short_is_aborted_stalled_after_corrections() -> None:
    kin = Floor(0.115, home=(0.5, 0.0, 0.2))
    events, _ = drive(kin, command("m", "move_ee_to", target=[0.5, 0.0, 0.1], speed_mps=0.05))
    kind, reason = final(events)
    assert kind == "aborted"
    assert reason.startswith("STALLED: 'move' settled 0.015 m")
    assert "after 3 corrections" in reason


def test_a_cancel_holds_the_arm_where_it_is_then_confirms() -> None:
    kin = KinematicBackend()
    events, _ = drive(kin, command("m", "move_ee_to", target=[0.6, 0.2, 0.15]), cancel_at=10)
    kind, reason = final(events)
    assert kind == "stopped" and reason == "CANCEL_REQUESTED"
    stopped_at = kin.position.copy()
    assert np.linalg.norm(stopped_at - [0.6, 0.2, 0.15]) > 0.1
    assert all(a["action"][0] == [0.0, 0.0, 0.0] for a in list(kin.actions)[-2:])


def test_unknown_skills_and_params_the_runtime_cannot_run_are_refused() -> None:
    host = ExecutorHost(KinematicBackend(), executor_registry(), clock=FakeClock(),
                        config=HostConfig(lease_s=None))
    ack = host.submit(command("x", "juggle"))
    assert not ack.accepted and "no executor for skill 'juggle'" in ack.reason
    ack = host.submit(command("y", "lift", object_id="c"))
    assert not ack.accepted and "EXECUTOR_REFUSED" in ack.reason and "object_pose" in ack.reason
