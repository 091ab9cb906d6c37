"""Rotations as unit quaternions (w, x, y, z), the convention of the GenManip protocol and of
every observation here; PyBullet's (x, y, z, w) only at its door (:func:`wxyz_to_xyzw`,
:func:`xyzw_to_wxyz`). The one place quaternion arithmetic lives: skills, the simulator and the
scripted policies all use it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["Vec", "matrix_to_quat", "qangle", "qconj", "qmul", "qnormalize", "qrelative",
           "qrotate_towards", "rotation_matrix", "wxyz_to_xyzw", "xyzw_to_wxyz", "yaw_of",
           "yaw_quat"]

#: A quaternion (w, x, y, z) or a vector, as a sequence or an array.
Vec = Sequence[float] | np.ndarray


def qmul(a: Vec, b: Vec) -> np.ndarray:
    """Hamilton product ``a * b`` (both w, x, y, z)."""
    aw, ax, ay, az = (float(v) for v in a)
    bw, bx, by, bz = (float(v) for v in b)
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def qconj(q: Vec) -> np.ndarray:
    """The conjugate (the inverse of a unit quaternion)."""
    return np.array([float(q[0]), -float(q[1]), -float(q[2]), -float(q[3])])


def qnormalize(q: Vec) -> np.ndarray:
    """``q`` scaled to unit length, with w >= 0 (the same rotation). Raises ValueError for a
    zero or non-finite quaternion."""
    arr = np.asarray(q, dtype=float)
    norm = float(np.linalg.norm(arr))
    if not math.isfinite(norm) or norm < 1e-12:
        raise ValueError(f"quaternion {list(arr)} has no direction")
    arr = arr / norm
    return arr if arr[0] >= 0 else -arr


def qangle(a: Vec, b: Vec) -> float:
    """Rotation angle between two quaternions (radians, 0..pi)."""
    dot = abs(float(np.dot(qnormalize(a), qnormalize(b))))
    return 2.0 * math.acos(min(1.0, dot))


def qrelative(q: Vec, goal: Vec) -> tuple[np.ndarray, float]:
    """The turn from ``q`` to ``goal`` about world axes: unit axis and angle (radians, the
    shorter way; a zero axis when they are equal)."""
    rel = qnormalize(qmul(goal, qconj(q)))
    angle = 2.0 * math.acos(min(1.0, float(rel[0])))
    s = math.sin(angle / 2.0)
    return (rel[1:] / s if s > 1e-9 else np.zeros(3)), angle


def qrotate_towards(current: Vec, goal: Vec, max_angle: float) -> np.ndarray:
    """``current`` turned towards ``goal`` by at most ``max_angle`` radians (shortest way)."""
    c = qnormalize(current)
    g = qnormalize(goal)
    if float(np.dot(c, g)) < 0:
        g = -g
    angle = qangle(c, g)
    if angle <= max_angle or angle < 1e-9:
        return g
    t = max_angle / angle
    half = angle / 2.0
    out = (math.sin((1 - t) * half) * c + math.sin(t * half) * g) / math.sin(half)
    return qnormalize(out)


def rotation_matrix(q: Vec) -> np.ndarray:
    """The 3x3 rotation matrix of ``q`` (normalised first)."""
    w, x, y, z = (float(v) for v in qnormalize(q))
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """The unit quaternion (w >= 0) of a 3x3 rotation matrix."""
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * np.sqrt(trace + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    out = np.array(q, dtype=np.float64)
    out /= np.linalg.norm(out)
    return out if out[0] >= 0 else -out


def yaw_quat(yaw: float) -> np.ndarray:
    """Rotation by ``yaw`` radians about world z."""
    return np.array([math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)])


def yaw_of(q: Vec) -> float:
    """The heading of a quaternion's x axis in the world's x-y plane (radians)."""
    w, x, y, z = (float(v) for v in q)
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def wxyz_to_xyzw(q: Vec) -> tuple[float, float, float, float]:
    """(w, x, y, z) -> PyBullet's (x, y, z, w)."""
    return (float(q[1]), float(q[2]), float(q[3]), float(q[0]))


def xyzw_to_wxyz(q: Vec) -> np.ndarray:
    """PyBullet's (x, y, z, w) -> (w, x, y, z)."""
    return np.array([q[3], q[0], q[1], q[2]], dtype=np.float64)
