"""The robot's side of ROS 2: a runtime's state as ROS 2 messages.

``joint_state`` (``sensor_msgs/JointState``), ``tf_message`` (``tf2_msgs/TFMessage``) and
``image`` / ``camera_info`` (``sensor_msgs``) turn an :class:`~harness_bt.runtime.observation.
Observation` into what a ROS 2 arm publishes: the Panda's nine joints by their
franka_description names, the hand's pose as the transform ``world -> <ee_frame>``, each
camera's pose as ``world -> <camera>_optical_frame`` with its intrinsics in ``CameraInfo.k``
and its image as ``rgb8`` (depth as ``32FC1`` in metres, REP 118).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness_bt.runtime.observation import Observation
from runtime_bridge.ros2.types import RosTypes

__all__ = ["EE_FRAME", "PANDA_JOINTS", "WORLD_FRAME", "camera_frame", "camera_info",
           "image", "joint_state", "stamp", "tf_message"]

PANDA_JOINTS = (*(f"panda_joint{k}" for k in range(1, 8)), "panda_finger_joint1",
                "panda_finger_joint2")
WORLD_FRAME = "world"
EE_FRAME = "panda_hand_tcp"


def camera_frame(name: str) -> str:
    return f"{name}_optical_frame"


def stamp(types: RosTypes, t: float) -> Any:
    return types.time(t)


def _header(types: RosTypes, t: float, frame: str) -> Any:
    return types.new("std_msgs/msg/Header", stamp=stamp(types, t), frame_id=frame)


def joint_state(types: RosTypes, obs: Observation, t: float) -> Any:
    q = np.asarray(obs.joint_positions, dtype=np.float64)
    names = list(PANDA_JOINTS[:len(q)]) if len(q) <= len(PANDA_JOINTS) else [
        f"joint{k}" for k in range(len(q))]
    return types.new("sensor_msgs/msg/JointState", header=_header(types, t, ""),
                     name=names, position=q.copy())


def _transform(types: RosTypes, t: float, parent: str, child: str, position: Any,
               quaternion_wxyz: Any) -> Any:
    p = np.asarray(position, dtype=np.float64)
    w, x, y, z = (float(v) for v in quaternion_wxyz)
    return types.new(
        "geometry_msgs/msg/TransformStamped", header=_header(types, t, parent),
        child_frame_id=child,
        transform=types.new("geometry_msgs/msg/Transform",
                            translation=types.new("geometry_msgs/msg/Vector3", x=float(p[0]),
                                                  y=float(p[1]), z=float(p[2])),
                            rotation=types.new("geometry_msgs/msg/Quaternion", x=x, y=y, z=z,
                                               w=w)))


def tf_message(types: RosTypes, obs: Observation, t: float) -> Any:
    """The hand and the cameras as transforms from ``world``."""
    items = [_transform(types, t, WORLD_FRAME, EE_FRAME, obs.ee_pose.position,
                        obs.ee_pose.quaternion_wxyz)]
    for name, frame in sorted(obs.cameras.items()):
        items.append(_transform(types, t, WORLD_FRAME, camera_frame(name), frame.position,
                                frame.quaternion_wxyz))
    return types.new("tf2_msgs/msg/TFMessage", transforms=items)


def static_tf(types: RosTypes, t: float) -> Any:
    """The robot's base in the world (what /tf_static carries)."""
    return types.new("tf2_msgs/msg/TFMessage", transforms=[
        _transform(types, t, WORLD_FRAME, "panda_link0", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))])


def image(types: RosTypes, name: str, pixels: np.ndarray, t: float) -> Any:
    arr = np.ascontiguousarray(pixels)
    if arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] == 3:
        encoding, step = "rgb8", arr.shape[1] * 3
    elif arr.dtype == np.float32 and arr.ndim == 2:
        encoding, step = "32FC1", arr.shape[1] * 4
    else:
        raise ValueError(f"camera {name}: cannot publish an image of {arr.dtype} {arr.shape}")
    return types.new("sensor_msgs/msg/Image", header=_header(types, t, camera_frame(name)),
                     height=int(arr.shape[0]), width=int(arr.shape[1]), encoding=encoding,
                     is_bigendian=0, step=int(step),
                     data=np.frombuffer(arr.tobytes(), dtype=np.uint8).copy())


def camera_info(types: RosTypes, name: str, height: int, width: int, k: Any, t: float) -> Any:
    kk = np.asarray(k, dtype=np.float64).reshape(9)
    p = np.array([kk[0], kk[1], kk[2], 0.0, kk[3], kk[4], kk[5], 0.0, 0.0, 0.0, 1.0, 0.0])
    return types.new("sensor_msgs/msg/CameraInfo", header=_header(types, t, camera_frame(name)),
                     height=int(height), width=int(width), distortion_model="plumb_bob",
                     d=np.zeros(5), k=kk.copy(), r=np.eye(3).reshape(9), p=p)
