"""One control step's action from many executors' shares, holding whatever nobody drives.

Franka + Panda hand, GenManip action dicts (``GENMANIP_PROTOCOL.md``):
``{"control_type": "ee_pose", "action": ([dx, dy, dz], [qw, qx, qy, qz], [f1, f2])}`` or
``{"control_type": "joint_position", "action": [7 joint deltas..., f1, f2]}``. Deltas compose on
the last commanded target, so holding the arm is a zero delta with the identity quaternion,
and holding the gripper is repeating its last absolute target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness_bt.runtime.executor import ActionPart
from harness_bt.runtime.observation import Observation

__all__ = [
    "ARM_DOF",
    "GRIPPER_DOF",
    "GRIPPER_OPEN",
    "HOLD_EE_DELTA",
    "ActionMerger",
    "MergeResult",
    "hold_action",
]

ARM_DOF = 7
GRIPPER_DOF = 2
GRIPPER_OPEN: tuple[float, float] = (0.04, 0.04)
#: Zero translation, identity rotation (w, x, y, z).
HOLD_EE_DELTA: tuple[float, ...] = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)


def hold_action(gripper: Sequence[float] = GRIPPER_OPEN) -> dict[str, Any]:
    """The action that keeps a Franka + Panda hand where it was last commanded."""
    return {
        "control_type": "ee_pose",
        "action": (list(HOLD_EE_DELTA[:3]), list(HOLD_EE_DELTA[3:]), [float(g) for g in gripper]),
    }


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged action, who drove each part, and the shares that were refused (command id,
    reason code, message)."""

    action: dict[str, Any]
    arm_owner: str | None = None
    gripper_owner: str | None = None
    refused: tuple[tuple[str, str, str], ...] = field(default_factory=tuple)


class ActionMerger:
    """Merges :class:`ActionPart` shares into one GenManip action.

    The arm and the gripper each take at most one driver per step: the first share (callers
    pass them oldest command first) wins, a later share for the same part is refused with
    ``ACTION_CONFLICT``. A malformed share (wrong length, non-finite, unknown control type,
    non-unit quaternion) is refused with ``INVALID_ACTION`` and never reaches the robot.
    """

    def __init__(self, gripper: Sequence[float] = GRIPPER_OPEN) -> None:
        self.gripper_target: tuple[float, ...] = tuple(float(g) for g in gripper)

    def reset(self, observation: Observation) -> None:
        """Take the gripper target from the measured fingers (Panda: joints 7 and 8)."""
        joints = np.asarray(observation.joint_positions, dtype=float)
        if joints.shape == (ARM_DOF + GRIPPER_DOF,) and np.all(np.isfinite(joints)):
            self.gripper_target = tuple(float(v) for v in joints[ARM_DOF:])

    def hold(self) -> dict[str, Any]:
        return hold_action(self.gripper_target)

    @staticmethod
    def problem(part: ActionPart) -> str | None:
        """Why the robot cannot take ``part``, or None."""
        if part.control_type not in ("ee_pose", "joint_position"):
            return f"control_type {part.control_type!r} is not 'ee_pose' or 'joint_position'"
        for name, values, size in (("arm", part.arm, ARM_DOF), ("gripper", part.gripper,
                                                                GRIPPER_DOF)):
            if values is None:
                continue
            if len(values) != size:
                return f"{name} has {len(values)} values, a Franka + Panda hand takes {size}"
            if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
                return f"{name} {list(values)!r} holds a non-finite or non-numeric value"
        if part.arm is not None and part.control_type == "ee_pose":
            norm = math.sqrt(sum(v * v for v in part.arm[3:]))
            if abs(norm - 1.0) > 1e-3:
                return (f"the rotation delta {list(part.arm[3:])} is not a unit quaternion "
                        f"(|q|={norm:.4f})")
        return None

    def merge(self, shares: Sequence[tuple[str, ActionPart | None]]) -> MergeResult:
        arm: ActionPart | None = None
        arm_owner: str | None = None
        gripper_owner: str | None = None
        gripper = self.gripper_target
        refused: list[tuple[str, str, str]] = []
        for command_id, part in shares:
            if part is None or (part.arm is None and part.gripper is None):
                continue
            why = self.problem(part)
            if why is not None:
                refused.append((command_id, "INVALID_ACTION", why))
                continue
            taken = [
                (name, owner) for name, wants, owner in (
                    ("arm", part.arm is not None, arm_owner),
                    ("gripper", part.gripper is not None, gripper_owner),
                ) if wants and owner is not None
            ]
            if taken:
                name, owner = taken[0]
                refused.append((command_id, "ACTION_CONFLICT",
                                f"the {name} is already driven this step by command {owner!r}"))
                continue
            if part.arm is not None:
                arm, arm_owner = part, command_id
            if part.gripper is not None:
                gripper, gripper_owner = tuple(float(v) for v in part.gripper), command_id
        self.gripper_target = gripper
        if arm is not None and arm.arm is not None and arm.control_type == "joint_position":
            action: dict[str, Any] = {
                "control_type": "joint_position",
                "action": [float(v) for v in arm.arm] + list(gripper),
            }
        else:
            delta = HOLD_EE_DELTA if arm is None or arm.arm is None else arm.arm
            action = {
                "control_type": "ee_pose",
                "action": ([float(v) for v in delta[:3]], [float(v) for v in delta[3:]],
                           list(gripper)),
            }
        return MergeResult(action, arm_owner, gripper_owner, tuple(refused))
