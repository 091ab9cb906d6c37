"""What a runtime sees: the typed form of a GenManip observation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CameraFrame", "EePose", "Observation"]


@dataclass(frozen=True, slots=True, eq=False)
class CameraFrame:
    """One camera's frame: RGB (HxWx3 uint8), depth (HxW float32 metres, or None), the 3x3
    intrinsics, and the camera's world position and orientation (quaternion w, x, y, z)."""

    rgb: np.ndarray | None
    depth: np.ndarray | None
    intrinsics: np.ndarray
    position: np.ndarray
    quaternion_wxyz: np.ndarray

    @property
    def shape(self) -> tuple[int, int] | None:
        """(height, width) of the image, or None when nothing was rendered."""
        img = self.rgb if self.rgb is not None else self.depth
        return None if img is None else (int(img.shape[0]), int(img.shape[1]))


@dataclass(frozen=True, slots=True, eq=False)
class EePose:
    """An end-effector pose in the world frame: position (3,) and quaternion (w, x, y, z)."""

    position: np.ndarray
    quaternion_wxyz: np.ndarray


@dataclass(frozen=True, eq=False)
class Observation:
    """One observation from a runtime (GenManip fields, typed).

    ``ee_poses`` holds one pose per arm. ``worker_id`` names the simulator worker or robot;
    ``received_at`` is the harness's monotonic time of arrival (set by the bridge);
    ``extras`` keeps fields this version does not interpret.
    """

    cameras: Mapping[str, CameraFrame]
    joint_positions: np.ndarray
    ee_poses: tuple[EePose, ...]
    instruction: str
    timestep: int
    reset: bool
    worker_id: str = "0"
    received_at: float | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ee_pose(self) -> EePose:
        """The first (or only) arm's end-effector pose."""
        return self.ee_poses[0]

    @property
    def gripper_width(self) -> float | None:
        """Panda hand: the sum of the two finger positions (metres); None for other hands."""
        if self.joint_positions.shape == (9,):
            return float(self.joint_positions[7] + self.joint_positions[8])
        return None
