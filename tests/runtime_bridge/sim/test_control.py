"""Both control types move the arm as commanded, with GenManip's semantics: deltas accumulate on
the last commanded target, fingers are absolute, ee_pose deltas are composed and solved by IK,
and the arm holds when IK fails."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from harness_bt.geometry import qangle
from runtime_bridge.genmanip.errors import ActionError, HttpError
from runtime_bridge.sim.env import SimEnv
from runtime_bridge.sim.robot import HOME

IDENTITY = [1.0, 0.0, 0.0, 0.0]


def joints(deltas: dict[int, float] | None = None, fingers: float = 0.04) -> dict[str, object]:
    action = [0.0] * 7 + [fingers, fingers]
    for i, d in (deltas or {}).items():
        action[i] = d
    return {"control_type": "joint_position", "action": action}


def ee(dx: float = 0.0, dy: float = 0.0, dz: float = 0.0, q: list[float] = IDENTITY,
       fingers: float = 0.04) -> dict[str, object]:
    return {"control_type": "ee_pose", "action": ([dx, dy, dz], q, [fingers, fingers])}


@pytest.fixture
def env(make_env: Callable[..., SimEnv]) -> SimEnv:
    env = make_env(scenes=("pick_cube",), num_steps=500)
    first = env.reset()["obs"]
    assert first["timestep"] == 0 and first["reset"] is True
    assert first["instruction"] == "pick up the red cube"
    assert first["joint_position_state"].shape == (9,)
    np.testing.assert_allclose(first["joint_position_state"][:7], HOME, atol=1e-3)
    return env


def settle(env: SimEnv, message: dict[str, object], n: int = 30) -> dict[str, object]:
    for _ in range(n):
        obs = env.step(message)["obs"]
    return obs


def test_joint_deltas_accumulate_on_the_commanded_target(env: SimEnv) -> None:
    for _ in range(10):
        obs = env.step(joints({0: 0.02}))["obs"]
    assert obs["timestep"] == 10
    obs = settle(env, joints())
    assert obs["joint_position_state"][0] == pytest.approx(HOME[0] + 0.2, abs=5e-3)
    assert env.ground_truth()["commanded_joints"][0] == pytest.approx(HOME[0] + 0.2, abs=1e-9)


def test_a_delta_builds_on_the_target_not_on_the_lagging_measurement(env: SimEnv) -> None:
    after_one = env.step(joints({3: 0.4}))["obs"]["joint_position_state"][3]
    assert after_one < HOME[3] + 0.35  # the arm has not got there within 1/30 s
    obs = settle(env, joints({3: 0.0}))  # zero deltas keep the commanded target
    assert obs["joint_position_state"][3] == pytest.approx(HOME[3] + 0.4, abs=5e-3)


def test_finger_values_are_absolute_positions(env: SimEnv) -> None:
    obs = settle(env, joints(fingers=0.01), 20)
    np.testing.assert_allclose(obs["joint_position_state"][7:], [0.01, 0.01], atol=2e-3)
    obs = settle(env, joints(fingers=0.04), 20)
    np.testing.assert_allclose(obs["joint_position_state"][7:], [0.04, 0.04], atol=2e-3)


def test_ee_pose_translation_moves_the_tool_centre_point(env: SimEnv) -> None:
    start_p, start_q = env.scene.arm.tcp_pose()
    for _ in range(10):
        env.step(ee(dx=0.01, dz=-0.005))
    obs = settle(env, ee(), 20)
    pos, quat = obs["ee_pose_state"]
    np.testing.assert_allclose(pos - start_p, [0.10, 0.0, -0.05], atol=4e-3)
    assert qangle(quat, start_q) < 0.02
    assert env.ground_truth()["ik_failures"] == 0


def test_ee_pose_rotation_is_composed_onto_the_commanded_orientation(env: SimEnv) -> None:
    start_q = env.scene.arm.tcp_pose()[1]
    half = 0.05  # 0.1 rad about world z per step
    dq = [float(np.cos(half)), 0.0, 0.0, float(np.sin(half))]
    for _ in range(4):
        env.step(ee(q=dq))
    quat = settle(env, ee(), 20)["ee_pose_state"][1]
    assert qangle(quat, start_q) == pytest.approx(0.4, abs=0.02)


def test_an_unreachable_pose_holds_the_arm(env: SimEnv) -> None:
    before = list(env.ground_truth()["commanded_joints"])
    env.step(ee(dx=2.0))
    truth = env.ground_truth()
    assert truth["ik_failures"] == 1 and truth["last_ik_ok"] is False
    assert truth["commanded_joints"] == before
    obs = settle(env, ee(), 10)
    np.testing.assert_allclose(obs["joint_position_state"][:7], before, atol=5e-3)


def test_invalid_actions_leave_the_world_untouched(env: SimEnv) -> None:
    with pytest.raises(ActionError, match="shape"):
        env.step({"control_type": "joint_position", "action": [0.0] * 8})
    assert env.timestep == 0


def test_step_before_reset_says_to_reset(make_env: Callable[..., SimEnv]) -> None:
    fresh = make_env()
    with pytest.raises(HttpError, match="/step before /reset") as info:
        fresh.step(joints())
    assert info.value.fix and "/reset" in info.value.fix
