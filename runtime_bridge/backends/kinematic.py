"""A deterministic kinematic stand-in for a Franka + Panda hand: no physics, exact arithmetic.

The end-effector point moves by the commanded translation deltas, its orientation composes the
rotation deltas, the fingers jump to their targets, and ``joint_position`` deltas integrate the
seven arm joints (without forward kinematics). It is what ``harness runtime serve --backend
kinematic`` drives, and what host and transport tests use to see exactly what was commanded.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness_bt.errors import BridgeError
from harness_bt.geometry import qmul
from harness_bt.runtime.observation import EePose, Observation
from runtime_bridge.host.merge import ARM_DOF, GRIPPER_DOF, GRIPPER_OPEN

__all__ = ["KinematicBackend"]


def _numbers(value: Any, size: int, what: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.shape != (size,) or not np.all(np.isfinite(arr)):
        raise BridgeError(
            "INVALID_ACTION",
            f"{what} must be {size} finite numbers, got {value!r}",
            where="kinematic backend",
            fix="send a GenManip action for a Franka + Panda hand (GENMANIP_PROTOCOL.md)",
        )
    return arr


class KinematicBackend:
    """See the module docstring. ``history`` actions are kept in :attr:`actions` (newest last)."""

    def __init__(
        self,
        *,
        dt: float = 1.0 / 30.0,
        home: Sequence[float] = (0.4, 0.0, 0.4),
        gripper: Sequence[float] = GRIPPER_OPEN,
        instruction: str = "",
        worker_id: str = "kinematic",
        history: int = 1000,
    ) -> None:
        if not (math.isfinite(dt) and dt > 0):
            raise BridgeError("INVALID_CONFIG", f"dt={dt!r} must be a positive number of seconds")
        self.control_period_s = float(dt)
        self.home = _numbers(home, 3, "home")
        self.open_gripper = _numbers(gripper, GRIPPER_DOF, "gripper")
        self.instruction = instruction
        self.worker_id = worker_id
        self.actions: deque[dict[str, Any]] = deque(maxlen=history)
        self.steps = 0
        self._set_home()

    def _set_home(self) -> None:
        self.position = self.home.copy()
        self.quaternion = np.array([0.0, 1.0, 0.0, 0.0])  # gripper pointing down
        self.joints = np.zeros(ARM_DOF)
        self.fingers = self.open_gripper.copy()
        self.timestep = 0

    def reset(self) -> Observation:
        self._set_home()
        return self._observe(reset=True)

    def step(self, action: Mapping[str, Any]) -> Observation:
        if not (isinstance(action, Mapping) and "control_type" in action and "action" in action):
            raise BridgeError(
                "INVALID_ACTION",
                f"an action is a dict with 'control_type' and 'action', got {action!r}",
                where="kinematic backend",
            )
        kind, body = action["control_type"], action["action"]
        if kind == "ee_pose":
            if not isinstance(body, list | tuple) or len(body) != 3:
                raise BridgeError(
                    "INVALID_ACTION",
                    f"an ee_pose action is (translation(3), quaternion_wxyz(4), gripper(2)), got "
                    f"{body!r}",
                    where="kinematic backend",
                )
            delta = _numbers(body[0], 3, "translation delta")
            rot = _numbers(body[1], 4, "rotation delta")
            fingers = _numbers(body[2], GRIPPER_DOF, "gripper")
            self.position = self.position + delta
            q = qmul(rot, self.quaternion)
            self.quaternion = q / np.linalg.norm(q)
        elif kind == "joint_position":
            values = _numbers(body, ARM_DOF + GRIPPER_DOF, "joint_position action")
            self.joints = self.joints + values[:ARM_DOF]
            fingers = values[ARM_DOF:]
        else:
            raise BridgeError(
                "INVALID_ACTION",
                f"control_type {kind!r} is not 'ee_pose' or 'joint_position'",
                where="kinematic backend",
            )
        self.fingers = np.clip(fingers, 0.0, float(self.open_gripper.max()))
        self.actions.append(dict(action))
        self.steps += 1
        self.timestep += 1
        return self._observe(reset=False)

    def _observe(self, *, reset: bool) -> Observation:
        return Observation(
            cameras={},
            joint_positions=np.concatenate([self.joints, self.fingers]),
            ee_poses=(EePose(self.position.copy(), self.quaternion.copy()),),
            instruction=self.instruction,
            timestep=self.timestep,
            reset=reset,
            worker_id=self.worker_id,
        )

    def close(self) -> None:
        pass
