"""Geometry of a Franka Panda on a table: the hand's grasp orientation and the workspace the
contracts check against (quaternion arithmetic is :mod:`harness_bt.geometry`'s, re-exported
here for the skills).

Frames: the world frame is the robot base frame (x forward, z up, the table top at z = 0).
The tool centre point (TCP) is the point between the fingertips. With the hand pointing down
(:data:`DOWN`), the fingers close along world y; a yaw about world z turns that axis.
"""

from __future__ import annotations

import math

import numpy as np

from harness_bt.geometry import (
    Vec,
    qangle,
    qconj,
    qmul,
    qnormalize,
    qrotate_towards,
    rotation_matrix,
    yaw_of,
    yaw_quat,
)

__all__ = [
    "DOWN",
    "HOME_JOINTS",
    "IDENTITY",
    "JOINT_LOWER",
    "JOINT_UPPER",
    "SHOULDER",
    "TABLE_Z",
    "WRIST_ABOVE_TCP_M",
    "Vec",
    "grasp_orientation",
    "qangle",
    "qconj",
    "qmul",
    "qnormalize",
    "qrotate_towards",
    "rotation_matrix",
    "symmetric_yaw",
    "workspace_problems",
    "yaw_of",
    "yaw_quat",
]

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
#: The hand pointing straight down, fingers closing along world y.
DOWN = np.array([0.0, 1.0, 0.0, 0.0])
#: The Panda's home joint configuration (7 arm joints, radians).
HOME_JOINTS = (0.0, -0.55, 0.0, -2.45, 0.0, 1.90, 0.785)
JOINT_LOWER = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
JOINT_UPPER = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
TABLE_Z = 0.0
#: Shoulder joint (joint 2) of a Panda standing at the world origin.
SHOULDER = (0.0, 0.0, 0.333)
#: The wrist (joint 6 axis) sits about this far above the TCP when the hand points down.
WRIST_ABOVE_TCP_M = 0.21
#: Longest shoulder-to-wrist distance (the Panda reaches 0.855 m to the flange; kept shorter).
MAX_WRIST_REACH_M = 0.80
MIN_RADIUS_M = 0.20  # closer to the base axis the arm folds onto itself
MAX_TCP_Z_M = 0.75
MIN_TCP_Z_M = 0.012  # the fingertips stay clear of the table


def symmetric_yaw(yaw: float, period: float = math.pi / 2) -> float:
    """``yaw`` wrapped into ``[-period/2, period/2)`` (a cube looks the same every 90 deg)."""
    return (yaw + period / 2.0) % period - period / 2.0


def grasp_orientation(object_yaw: float = 0.0) -> np.ndarray:
    """The hand pointing down, turned so the fingers close across two faces of a box whose
    yaw is ``object_yaw`` (the smallest turn, within +-45 degrees)."""
    return qnormalize(qmul(yaw_quat(symmetric_yaw(object_yaw)), DOWN))


def workspace_problems(position: Vec, *, what: str = "target"
                       ) -> list[tuple[str, str]]:
    """``(code, message)`` for every reason a TCP position (hand pointing down) is outside the
    Panda's workspace (``OUTSIDE_WORKSPACE``) or out of its reach (``UNREACHABLE``); empty if
    it is inside. Conservative: a position that passes is reachable with the hand down."""
    x, y, z = (float(v) for v in position[:3])
    out: list[tuple[str, str]] = []
    radius = math.hypot(x, y)
    if radius < MIN_RADIUS_M:
        out.append(("OUTSIDE_WORKSPACE", f"{what} is {radius:.3f} m from the base axis; the arm "
                    f"works no closer than {MIN_RADIUS_M} m"))
    if z < MIN_TCP_Z_M:
        out.append(("OUTSIDE_WORKSPACE", f"{what} height {z:.3f} m is below {MIN_TCP_Z_M} m: "
                    "the fingertips would hit the table"))
    if z > MAX_TCP_Z_M:
        out.append(("OUTSIDE_WORKSPACE", f"{what} height {z:.3f} m is above {MAX_TCP_Z_M} m"))
    wrist = (x, y, z + WRIST_ABOVE_TCP_M)
    reach = math.dist(wrist, SHOULDER)
    if reach > MAX_WRIST_REACH_M:
        out.append(("UNREACHABLE", f"{what} needs the wrist {reach:.3f} m from the shoulder; the "
                    f"Panda reaches {MAX_WRIST_REACH_M} m with the hand pointing down"))
    return out
