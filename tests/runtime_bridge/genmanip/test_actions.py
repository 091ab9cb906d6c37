"""Actions are checked per embodiment; every error names the field and the expected shape."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runtime_bridge.genmanip.actions import (
    ControlType,
    GenManipEmbodiment,
    validate_action,
)
from runtime_bridge.genmanip.errors import ActionError

IDENTITY = [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("embodiment, length, arms, joints, grip", [
    (GenManipEmbodiment.FRANKA_PANDA, 9, 1, 7, 2),
    (GenManipEmbodiment.FRANKA_ROBOTIQ, 13, 1, 7, 6),
    (GenManipEmbodiment.ALOHA, 16, 2, 6, 2),
])
def test_joint_position_actions_split_into_arm_deltas_and_gripper(
        embodiment: GenManipEmbodiment, length: int, arms: int, joints: int, grip: int) -> None:
    action = validate_action({"control_type": "joint_position",
                              "action": list(np.arange(length, dtype=float))}, embodiment)
    assert action.control_type is ControlType.JOINT_POSITION
    assert len(action.arms) == arms
    assert [a.joint_deltas.shape for a in action.arms] == [(joints,)] * arms
    assert [a.gripper.shape for a in action.arms] == [(grip,)] * arms
    if embodiment is GenManipEmbodiment.ALOHA:  # 0:6 and 8:14 joints, 6:8 and 14:16 grippers
        assert action.arms[1].joint_deltas.tolist() == list(range(8, 14))
        assert action.arms[1].gripper.tolist() == [14.0, 15.0]


def test_single_arm_ee_pose_is_a_triple_and_dual_arm_a_pair_of_triples() -> None:
    one = validate_action({"control_type": "ee_pose",
                           "action": ([0.01, 0, 0], IDENTITY, [0.04, 0.04])})
    assert one.arms[0].translation.tolist() == [0.01, 0, 0]
    two = validate_action({"control_type": "ee_pose", "action": (
        ([0, 0, 0], IDENTITY, [0.05, 0.05]), ([0, 0, 0.01], IDENTITY, [0.0, 0.0]))},
        GenManipEmbodiment.ALOHA)
    assert [a.translation[2] for a in two.arms] == [0.0, 0.01]


def test_slightly_unnormalised_quaternions_are_normalised() -> None:
    action = validate_action({"control_type": "ee_pose",
                              "action": ([0, 0, 0], [1.004, 0, 0, 0], [0.04, 0.04])})
    assert math.isclose(float(np.linalg.norm(action.arms[0].rotation_wxyz)), 1.0)


@pytest.mark.parametrize("message, embodiment, code, match", [
    ({"control_type": "joint_position", "action": [0.0] * 8}, "franka_panda", "BAD_ACTION_SHAPE",
     r"action\.action: a franka_panda joint_position action \(7 joint deltas \+ 2 absolute "
     r"gripper values\) must have shape \(9,\), got shape \(8,\)"),
    ({"control_type": "joint_position", "action": [0.0] * 9}, "franka_robotiq",
     "BAD_ACTION_SHAPE", r"shape \(13,\), got shape \(9,\)"),
    ({"control_type": "joint_position", "action": [0.0] * 9}, "aloha", "BAD_ACTION_SHAPE",
     r"per arm \(6 joint deltas \+ 2 absolute gripper values\), arms concatenated"),
    ({"control_type": "joint_position", "action": [0.0] * 3 + [math.nan] + [0.0] * 5},
     "franka_panda", "NON_FINITE_ACTION", r"action\.action\[3\]: .* non-finite value nan"),
    ({"control_type": "joint_position", "action": [math.inf] * 9}, "franka_panda",
     "NON_FINITE_ACTION", r"action\.action\[0\]"),
    ({"control_type": "ee_pose", "action": ([0, 0, 0], [0, 0, 0, 0], [0.04, 0.04])},
     "franka_panda", "BAD_QUATERNION", r"action\.action\[1\]: quaternion .* has norm 0\.0000"),
    ({"control_type": "ee_pose", "action": ([0, 0, 0], [2, 0, 0, 0], [0.04, 0.04])},
     "franka_panda", "BAD_QUATERNION", "norm 2.0000, not 1"),
    ({"control_type": "ee_pose", "action": ([0, 0, 0], [1, 0, 0], [0.04, 0.04])},
     "franka_panda", "BAD_ACTION_SHAPE", r"action\.action\[1\]: .* shape \(4,\), got shape \(3,\)"),
    ({"control_type": "ee_pose", "action": ([0, 0, 0], IDENTITY)}, "franka_panda",
     "BAD_ACTION_SHAPE", r"expected 3 parts, got length 2"),
    ({"control_type": "ee_pose", "action": ([0, 0, 0], IDENTITY, [0.04, 0.04])}, "aloha",
     "BAD_ACTION_SHAPE", r"expected 2 parts, got length 3"),
    ({"control_type": "ee_pose", "action": ([0, 0, math.nan], IDENTITY, [0.04, 0.04])},
     "franka_panda", "NON_FINITE_ACTION", r"action\.action\[0\]\[2\]"),
    ({"action": [0.0] * 9}, "franka_panda", "MISSING_CONTROL_TYPE",
     "the action has no 'control_type'"),
    ({"control_type": "velocity", "action": [0.0] * 9}, "franka_panda", "UNKNOWN_CONTROL_TYPE",
     "unknown control type 'velocity'"),
    ({"control_type": "ee_pose"}, "franka_panda", "MISSING_ACTION", "no 'action'"),
    ([0.0] * 9, "franka_panda", "BAD_ACTION_MESSAGE", "expected a dict"),
    ({"control_type": "joint_position", "action": "fast"}, "franka_panda", "BAD_ACTION_SHAPE",
     "must be 9 numbers, got str"),
])
def test_bad_actions_are_refused_naming_field_and_shape(
        message: object, embodiment: str, code: str, match: str) -> None:
    with pytest.raises(ActionError, match=match) as info:
        validate_action(message, embodiment)
    assert info.value.code == code
    assert info.value.fix  # says what to do
    assert info.value.http_status == 500  # upstream's status for a bad action
