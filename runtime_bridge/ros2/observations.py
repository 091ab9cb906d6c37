"""Observations from ROS 2 topics: ``/joint_states``, ``/tf`` + ``/tf_static`` and cameras.

:class:`TfBuffer` keeps the latest transform of each frame (parent, child), with its stamp;
``lookup(target, source)`` chains them through their common ancestor. A transform with a
non-finite value or a quaternion whose norm is not 1 (within ``1e-3``) is refused when it
arrives; a lookup of a frame nobody published is refused; a transform older than ``max_age_s``
(static ones excepted) is refused as stale. Refusals are :class:`BridgeError` with the frame,
the value and what to do.

:class:`ObservationAssembler` turns the latest messages into an :class:`~harness_bt.runtime.
observation.Observation` the harness's world model and perception read, as the simulators'
observations are read: joints in the mapping's order, the hand's pose from TF, each camera's
RGB, depth, intrinsics (``CameraInfo.k``) and pose (TF of its optical frame).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness_bt.errors import BridgeError
from harness_bt.runtime.observation import CameraFrame, EePose, Observation
from runtime_bridge.ros2.robot import EE_FRAME, PANDA_JOINTS, WORLD_FRAME, camera_frame

__all__ = ["ObservationAssembler", "TfBuffer", "stamp_s"]


def stamp_s(stamp: Any) -> float:
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    p = _qmul(_qmul(q, np.array([0.0, *v])), q * np.array([1.0, -1.0, -1.0, -1.0]))
    return p[1:]


@dataclass(frozen=True, slots=True)
class _Tf:
    parent: str
    position: np.ndarray
    quaternion_wxyz: np.ndarray
    stamp: float
    static: bool


class TfBuffer:
    """See the module docstring. ``now()`` is the time stamps are judged against (seconds,
    the same clock as the publishers' stamps: wall time)."""

    def __init__(self, *, max_age_s: float = 1.0) -> None:
        self.max_age_s = max_age_s
        self._frames: dict[str, _Tf] = {}

    def add(self, transform: Any, *, static: bool = False) -> None:
        """One ``geometry_msgs/TransformStamped``; raises when it is invalid."""
        child = str(transform.child_frame_id)
        parent = str(transform.header.frame_id)
        tr, rot = transform.transform.translation, transform.transform.rotation
        p = np.array([tr.x, tr.y, tr.z], dtype=np.float64)
        q = np.array([rot.w, rot.x, rot.y, rot.z], dtype=np.float64)
        where = f"/tf{'_static' if static else ''} {parent} -> {child}"
        if not child or not parent or child == parent:
            raise BridgeError("TF_INVALID_FRAME", f"{where}: a transform needs two different "
                              "named frames", where=where, fix="set header.frame_id and "
                              "child_frame_id")
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(q))):
            raise BridgeError("TF_NOT_FINITE", f"{where}: translation {p.tolist()} / rotation "
                              f"{q.tolist()} has a non-finite value", where=where,
                              fix="publish finite transforms")
        norm = float(np.linalg.norm(q))
        if abs(norm - 1.0) > 1e-3:
            raise BridgeError("TF_INVALID_QUATERNION", f"{where}: rotation (w, x, y, z) "
                              f"{q.tolist()} has norm {norm:.6g}, not 1", where=where,
                              fix="normalise the quaternion before publishing it")
        self._frames[child] = _Tf(parent, p, q / norm, stamp_s(transform.header.stamp), static)

    @property
    def frames(self) -> set[str]:
        return set(self._frames) | {t.parent for t in self._frames.values()}

    def _chain(self, frame: str, now: float) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``frame``'s pose in its root frame, and the frames on the way."""
        p, q = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
        path = [frame]
        while frame in self._frames:
            tf = self._frames[frame]
            age = now - tf.stamp
            if not tf.static and age > self.max_age_s:
                raise BridgeError("TF_STALE", f"transform {tf.parent} -> {frame} is {age:.3f} s "
                                  f"old (limit {self.max_age_s:g} s)", where=f"/tf {frame}",
                                  fix="check that the robot still publishes /tf and that both "
                                  "clocks agree")
            p = tf.position + _rotate(tf.quaternion_wxyz, p)
            q = _qmul(tf.quaternion_wxyz, q)
            frame = tf.parent
            path.append(frame)
            if len(path) > 64:
                raise BridgeError("TF_LOOP", f"frames {path[:6]} ... form a loop", where="/tf",
                                  fix="publish a tree of frames")
        return path, p, q

    def lookup(self, target: str, source: str, now: float) -> tuple[np.ndarray, np.ndarray]:
        """The pose of frame ``source`` in frame ``target`` (position, quaternion w, x, y, z)."""
        for frame in (target, source):
            if frame not in self.frames:
                raise BridgeError("TF_UNKNOWN_FRAME", f"frame {frame!r} is not in the TF tree; "
                                  f"known: {sorted(self.frames)}", where=f"/tf {frame}",
                                  fix="check the frame name in the mapping, or wait for the "
                                  "robot's /tf")
        path_s, p_s, q_s = self._chain(source, now)
        path_t, p_t, q_t = self._chain(target, now)
        if path_s[-1] != path_t[-1]:
            raise BridgeError("TF_DISCONNECTED", f"frames {source!r} (root {path_s[-1]!r}) and "
                              f"{target!r} (root {path_t[-1]!r}) are not connected",
                              where="/tf", fix="publish the transform joining the two trees")
        q_t_inv = q_t * np.array([1.0, -1.0, -1.0, -1.0])
        return _rotate(q_t_inv, p_s - p_t), _qmul(q_t_inv, q_s)


def _image(msg: Any, where: str) -> np.ndarray:
    h, w, enc = int(msg.height), int(msg.width), str(msg.encoding)
    data = np.asarray(msg.data, dtype=np.uint8)
    if enc == "rgb8" and data.size == h * w * 3:
        return data.reshape(h, w, 3)
    if enc == "32FC1" and data.size == h * w * 4:
        return data.view(np.float32).reshape(h, w)
    raise BridgeError("UNSUPPORTED_IMAGE", f"{where}: encoding {enc!r}, {h}x{w}, {data.size} "
                      "bytes is not an rgb8 or 32FC1 image of that size", where=where,
                      fix="publish rgb8 colour and 32FC1 depth (metres)")


class ObservationAssembler:
    """Keeps the latest messages and builds observations (see the module docstring)."""

    def __init__(self, *, joints: tuple[str, ...] = PANDA_JOINTS, ee_frame: str = EE_FRAME,
                 world_frame: str = WORLD_FRAME, max_age_s: float = 1.0) -> None:
        self.joints, self.ee_frame, self.world_frame = joints, ee_frame, world_frame
        self.max_age_s = max_age_s
        self.tf = TfBuffer(max_age_s=max_age_s)
        self._joint_msg: Any = None
        self._cams: dict[str, dict[str, Any]] = {}
        self._count = 0

    def joint_state(self, msg: Any) -> None:
        self._joint_msg = msg

    def camera(self, name: str, kind: str, msg: Any) -> None:
        self._cams.setdefault(name, {})[kind] = msg

    def build(self, now: float, received_at: float) -> Observation | None:
        """The observation from the latest messages (None before the first joint state)."""
        msg = self._joint_msg
        if msg is None:
            return None
        self._joint_msg = None
        age = now - stamp_s(msg.header.stamp)
        if age > self.max_age_s:
            raise BridgeError("STALE_JOINT_STATES", f"/joint_states is {age:.3f} s old (limit "
                              f"{self.max_age_s:g} s)", where="/joint_states",
                              fix="check that the robot publishes and that both clocks agree")
        names = [str(n) for n in msg.name]
        position = np.asarray(msg.position, dtype=np.float64)
        missing = [j for j in self.joints if j not in names]
        if missing or len(position) != len(names) or not np.all(np.isfinite(position)):
            raise BridgeError("INVALID_JOINT_STATES", f"/joint_states lacks {missing} or has "
                              f"{len(position)} positions for {len(names)} names",
                              where="/joint_states", fix="publish every joint of the arm")
        q = np.array([position[names.index(j)] for j in self.joints])
        p, quat = self.tf.lookup(self.world_frame, self.ee_frame, now)
        cameras: dict[str, CameraFrame] = {}
        for name, parts in sorted(self._cams.items()):
            if "image" not in parts or "info" not in parts:
                continue
            rgb = _image(parts["image"], f"/{name}/image_raw")
            depth = _image(parts["depth"], f"/{name}/depth/image_raw") \
                if "depth" in parts else None
            cp, cq = self.tf.lookup(self.world_frame, camera_frame(name), now)
            cameras[name] = CameraFrame(rgb=rgb, depth=depth,
                                        intrinsics=np.asarray(parts["info"].k).reshape(3, 3),
                                        position=cp, quaternion_wxyz=cq)
        self._cams.clear()
        self._count += 1
        if not math.isfinite(float(p.sum())):
            return None
        return Observation(cameras=cameras, joint_positions=q, ee_poses=(EePose(p, quat),),
                           instruction="", timestep=self._count, reset=False,
                           received_at=received_at, extras={"source": "ros2"})
