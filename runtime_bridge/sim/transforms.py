"""Quaternion helpers. GenManip speaks scalar-first (w, x, y, z); PyBullet scalar-last."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["matrix_to_wxyz", "quat_angle", "quat_mul", "rotation_matrix_wxyz", "wxyz_to_xyzw",
           "xyzw_to_wxyz", "yaw_of_wxyz"]


def wxyz_to_xyzw(q: Sequence[float] | np.ndarray) -> tuple[float, float, float, float]:
    return (float(q[1]), float(q[2]), float(q[3]), float(q[0]))


def xyzw_to_wxyz(q: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.array([q[3], q[0], q[1], q[2]], dtype=np.float64)


def quat_mul(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` of two (w, x, y, z) quaternions."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], dtype=np.float64)


def quat_angle(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """The rotation angle (radians) between two unit (w, x, y, z) quaternions."""
    dot = abs(float(np.dot(np.asarray(a, float), np.asarray(b, float))))
    return 2.0 * float(np.arccos(min(1.0, dot)))


def rotation_matrix_wxyz(q: Sequence[float] | np.ndarray) -> np.ndarray:
    w, x, y, z = (float(v) for v in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_wxyz(m: np.ndarray) -> np.ndarray:
    """A unit (w, x, y, z) quaternion from a 3x3 rotation matrix."""
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


def yaw_of_wxyz(q: Sequence[float] | np.ndarray) -> float:
    w, x, y, z = (float(v) for v in q)
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))

