"""The ``push`` skill's executor (runtime side), on the motion segments of the ``skills``
package: set the fingers 3 cm apart, go over the point behind the object (turned so both
fingers face the push), down to the object's centre height, through the object towards the
goal at the push speed, back off, up. Open loop: it sees the observations and the command's
params only, and the evaluator judges where the object ended; a push that ends off the goal
is pushed again by the task."""

from __future__ import annotations

import math

import numpy as np

from harness_bt.runtime.observation import Observation
from harness_push.contract import FINGER_M, PushParams, contact_height, push_line
from skills.executors import CartesianMove, Dwell, Fingers, Segment, SegmentExecutor
from skills.geometry import DOWN, qmul, qnormalize, yaw_quat

__all__ = ["PUSH_WIDTH_M", "PushExecutor"]

#: The fingers this far apart push: two contacts across the object's face keep it square to
#: the push (closed fingers make one, and the object turns about it); narrower than any
#: object it pushes, so it cannot slip between them.
PUSH_WIDTH_M = 0.03
CLEAR_M = 0.07  # travel this high above the contact height
TURN_RATE = math.radians(90.0)


def _facing(ux: float, uy: float) -> np.ndarray:
    """The hand pointing down, its fingers closing across the push (both fingertips meet the
    object's face); of the two such yaws, the one nearer zero."""
    yaw = math.atan2(uy, ux)
    if yaw > math.pi / 2:
        yaw -= math.pi
    elif yaw < -math.pi / 2:
        yaw += math.pi
    return qnormalize(qmul(yaw_quat(yaw), DOWN))


class PushExecutor(SegmentExecutor):
    """``push``: the segments in the module docstring, planned from the first observation."""

    skill = "push"
    params_model = PushParams
    params: PushParams

    def plan(self, obs: Observation) -> list[Segment]:
        p = self.params
        (x, y), (ux, uy), distance = push_line(p)
        if distance <= p.tolerance_m / 2:
            return []  # already there: the evaluator says so
        z = contact_height(p)
        u = np.array([ux, uy, 0.0])
        centre = np.array([x, y, z])
        reach = p.object_width_m / 2 + FINGER_M
        start = centre - u * (reach + p.approach_gap_m)
        end = np.array([float(p.goal[0]), float(p.goal[1]), z]) - u * reach
        high = z + CLEAR_M
        q = _facing(ux, uy)
        here = np.asarray(obs.ee_pose.position, dtype=float)
        travel = self.per_step(0.25)
        out: list[Segment] = []
        width = obs.gripper_width
        if width is None or abs(width - PUSH_WIDTH_M) > 0.004:
            out.append(Fingers("fingers", PUSH_WIDTH_M, planned_from=width))
        if here[2] < high - 0.02:
            up = np.array([here[0], here[1], high])
            out.append(CartesianMove("rise", up, None, step_m=travel, tolerance_m=0.02,
                                     planned_from=here))
            here = up
        over = np.array([start[0], start[1], high])
        out += [
            CartesianMove("over", over, q, step_m=travel, step_rad=self.per_step(TURN_RATE),
                          tolerance_m=0.01, planned_from=here),
            CartesianMove("down", start, q, step_m=self.per_step(0.12), tolerance_m=0.006,
                          planned_from=over),
            CartesianMove("push", end, q, step_m=self.per_step(p.speed_mps), tolerance_m=0.006,
                          planned_from=start),
            Dwell("settle", 3),
            CartesianMove("back off", end - u * 0.03, q, step_m=self.per_step(0.1),
                          tolerance_m=0.01, planned_from=end),
            CartesianMove("up", end - u * 0.03 + np.array([0.0, 0.0, CLEAR_M]), q,
                          step_m=travel, tolerance_m=0.015, planned_from=end),
        ]
        return out
