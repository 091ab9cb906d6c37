"""Observations on the telemetry ``state`` topic: what a runtime server publishes each control
step and what :class:`~runtime_bridge.zmq.ZmqBridge` turns back into an
:class:`~harness_bt.runtime.observation.Observation` (robot state and, when the step rendered any,
camera frames, so the harness's perception runs on the runtime's images).

Arrays travel as binary frames: ``joint_positions``, ``ee_position``, ``ee_quaternion`` and per
camera ``cam.<name>.rgb`` (HxWx3 uint8), ``cam.<name>.depth`` (HxW float32, optional) and
``cam.<name>.pose`` (16 float64: the 3x3 intrinsics row by row, the position, the quaternion
w, x, y, z). The body lists the cameras in ``cameras``. The wire takes at most
``Limits.max_arrays`` arrays per message, so at most four cameras go out per step (the first
four by name; a runtime that renders more should publish them in turn).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from harness_bt.runtime.observation import CameraFrame, EePose, Observation

__all__ = ["MAX_CAMERAS", "observation_from_telemetry", "observation_to_telemetry"]

#: 3 robot-state arrays + 3 per camera within the wire's 16 arrays per message.
MAX_CAMERAS = 4


def observation_to_telemetry(obs: Observation, *, wall: float,
                             active: list[str]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The ``state`` topic's body and arrays for one observation."""
    pose = obs.ee_pose
    arrays: dict[str, np.ndarray] = {
        "joint_positions": np.asarray(obs.joint_positions, dtype=np.float64),
        "ee_position": np.asarray(pose.position, dtype=np.float64),
        "ee_quaternion": np.asarray(pose.quaternion_wxyz, dtype=np.float64)}
    names: list[str] = []
    for name in sorted(obs.cameras)[:MAX_CAMERAS]:
        frame = obs.cameras[name]
        if frame.rgb is None:
            continue
        names.append(name)
        arrays[f"cam.{name}.rgb"] = np.ascontiguousarray(frame.rgb, dtype=np.uint8)
        if frame.depth is not None:
            arrays[f"cam.{name}.depth"] = np.ascontiguousarray(frame.depth, dtype=np.float32)
        arrays[f"cam.{name}.pose"] = np.concatenate([
            np.asarray(frame.intrinsics, dtype=np.float64).reshape(9),
            np.asarray(frame.position, dtype=np.float64).reshape(3),
            np.asarray(frame.quaternion_wxyz, dtype=np.float64).reshape(4)])
    body = {"timestep": obs.timestep, "worker_id": obs.worker_id, "t": wall, "active": active,
            "instruction": obs.instruction, "cameras": names}
    return body, arrays


def observation_from_telemetry(body: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
                               now: float) -> Observation:
    """The observation a ``state`` value carries (``received_at`` = ``now``)."""
    cameras: dict[str, CameraFrame] = {}
    for name in body.get("cameras") or ():
        rgb = arrays.get(f"cam.{name}.rgb")
        meta = arrays.get(f"cam.{name}.pose")
        if rgb is None or meta is None or meta.shape != (16,):
            continue  # a malformed camera entry is dropped, not guessed
        cameras[str(name)] = CameraFrame(
            rgb=np.asarray(rgb), depth=arrays.get(f"cam.{name}.depth"),
            intrinsics=np.asarray(meta[:9]).reshape(3, 3), position=np.asarray(meta[9:12]),
            quaternion_wxyz=np.asarray(meta[12:16]))
    return Observation(
        cameras=cameras, joint_positions=arrays["joint_positions"],
        ee_poses=(EePose(arrays["ee_position"], arrays["ee_quaternion"]),),
        instruction=str(body.get("instruction", "")), timestep=int(body.get("timestep", 0)),
        reset=False, worker_id=str(body.get("worker_id", "0")), received_at=now,
        extras={"source": "telemetry", "active": list(body.get("active") or [])})
