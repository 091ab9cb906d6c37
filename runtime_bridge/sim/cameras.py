"""Rendering the configured cameras into GenManip ``camera_data`` entries.

Each camera gives ``rgb`` (HxWx3 uint8), ``depth`` (HxW float32, metres along the optical axis,
linearised from the z-buffer), ``intrinsics_matrix`` (3x3 float32, pinhole, integer pixel
centres), ``p`` (world position) and ``q`` (world orientation, scalar first). The camera frame
follows the OpenCV convention: x right, y down, z forward, so ``p``, ``q``, the intrinsics and
the depth back-project pixels to world points.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from harness_bt.geometry import matrix_to_quat, rotation_matrix
from runtime_bridge.sim.config import CameraSpec
from runtime_bridge.sim.native import pb
from runtime_bridge.sim.robot import HAND_LINK
from runtime_bridge.sim.scene import SimWorld

__all__ = ["CameraRig", "intrinsics", "linearise_depth"]

WRIST_OFFSET = (0.06, 0.0, 0.02)  # camera position in the hand frame (metres)


def intrinsics(spec: CameraSpec) -> np.ndarray:
    """The 3x3 pinhole matrix matching PyBullet's projection for this camera."""
    fy = (spec.height / 2.0) / math.tan(math.radians(spec.fov_deg) / 2.0)
    return np.array([[fy, 0.0, (spec.width - 1) / 2.0],
                     [0.0, fy, (spec.height - 1) / 2.0],
                     [0.0, 0.0, 1.0]], dtype=np.float32)


def linearise_depth(zbuffer: np.ndarray, near: float, far: float) -> np.ndarray:
    """OpenGL z-buffer values in [0, 1] to metric depth along the optical axis (float32)."""
    z = np.asarray(zbuffer, dtype=np.float64)
    return (far * near / (far - (far - near) * z)).astype(np.float32)


def _look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray) -> np.ndarray:
    forward = target - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, up)
    if np.linalg.norm(right) < 1e-9:  # looking straight along 'up': pick any right
        right = np.cross(forward, [1.0, 0.0, 0.0] if abs(forward[0]) < 0.9 else [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    return np.column_stack([right, down, forward])


class CameraRig:
    """The cameras of one simulator worker. Occlusions (fault injection) paint over frames."""

    def __init__(self, scene: SimWorld, specs: tuple[CameraSpec, ...]) -> None:
        self.scene = scene
        self.specs = specs
        self._proj = {
            s.name: scene.client.computeProjectionMatrixFOV(s.fov_deg, s.width / s.height,
                                                            s.near, s.far)
            for s in specs
        }
        self._k = {s.name: intrinsics(s) for s in specs}

    def pose(self, spec: CameraSpec) -> tuple[np.ndarray, np.ndarray]:
        """World position and OpenCV-convention rotation matrix of the camera."""
        if spec.mount == "wrist":
            hand_p, hand_q = self.scene.arm.link_pose(HAND_LINK)
            r = rotation_matrix(hand_q)
            eye = hand_p + r @ np.array(WRIST_OFFSET)
            return eye, _look_at(eye, eye + r[:, 2], r[:, 0])
        eye = np.array(spec.eye, dtype=np.float64)
        return eye, _look_at(eye, np.array(spec.target, dtype=np.float64),
                             np.array(spec.up, dtype=np.float64))

    def render(self, occluded: dict[str, tuple[int, int, int, int]] | None = None,
               only: set[str] | None = None) -> dict[str, Any]:
        """``{name: {"rgb", "depth", "intrinsics_matrix", "p", "q"}}`` for every camera (or
        for the cameras named in ``only``)."""
        out: dict[str, Any] = {}
        for spec in self.specs:
            if only is not None and spec.name not in only:
                continue
            eye, rot = self.pose(spec)
            forward, down = rot[:, 2], rot[:, 1]
            view = self.scene.client.computeViewMatrix(
                eye.tolist(), (eye + forward).tolist(), (-down).tolist())
            _, _, rgba, zbuf, _ = self.scene.client.getCameraImage(
                spec.width, spec.height, view, self._proj[spec.name],
                renderer=pb.ER_TINY_RENDERER, flags=pb.ER_NO_SEGMENTATION_MASK,
                shadow=0)
            rgba = np.asarray(rgba, dtype=np.uint8).reshape(spec.height, spec.width, 4)
            rgb = np.ascontiguousarray(rgba[..., :3])
            depth = linearise_depth(np.asarray(zbuf).reshape(spec.height, spec.width),
                                    spec.near, spec.far)
            box = (occluded or {}).get(spec.name)
            if box is not None:
                x0, y0, x1, y1 = box
                rgb[y0:y1, x0:x1] = 40
                depth[y0:y1, x0:x1] = spec.near + 0.03
            out[spec.name] = {
                "rgb": rgb,
                "depth": depth,
                "intrinsics_matrix": self._k[spec.name].copy(),
                "p": eye.astype(np.float32),
                "q": matrix_to_quat(rot).astype(np.float32),
            }
        return out
