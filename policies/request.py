"""The observation map the built-in policies read, and its typed form.

A request (one observation map, see docs/policies.md) holds, per camera ``NAME``:
``observation/image/NAME`` (uint8 H x W x 3 RGB), ``observation/depth/NAME`` (float32 H x W,
metres; when rendered), ``observation/intrinsics/NAME`` (3 x 3) and
``observation/camera_pose/NAME`` (7: x, y, z, qw, qx, qy, qz, world frame); and
``observation/state`` (8: end-effector x, y, z, qw, qx, qy, qz, gripper width in metres),
``observation/joint_position`` (9, optional), ``prompt`` (str) and ``session`` (str,
optional: the same for every request of one command). Keys outside this format are ignored.

:func:`parse_request` checks every field it reads and rebuilds the project's
:class:`~harness_bt.runtime.observation.Observation`, so a policy can hand it to a perception;
a malformed request is refused with one ``POLICY_BAD_OBSERVATION``
:class:`~harness_bt.errors.CommandError` naming every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness_bt.errors import CommandError
from harness_bt.runtime.observation import CameraFrame, EePose, Observation

__all__ = ["CAMERA_POSE", "DEPTH", "IMAGE", "INTRINSICS", "JOINTS", "PROMPT", "SESSION", "STATE",
           "PolicyRequest", "parse_request"]

IMAGE = "observation/image/"
DEPTH = "observation/depth/"
INTRINSICS = "observation/intrinsics/"
CAMERA_POSE = "observation/camera_pose/"
STATE = "observation/state"
JOINTS = "observation/joint_position"
PROMPT = "prompt"
SESSION = "session"

_FORMAT = ("send observation/state (8 floats: x, y, z, qw, qx, qy, qz, gripper width), a "
           "prompt, and per camera observation/image/NAME (uint8 HxWx3), observation/depth/NAME "
           "(float32 HxW metres), observation/intrinsics/NAME (3x3), observation/camera_pose/"
           "NAME (7: x, y, z, qw, qx, qy, qz); the server's metadata lists them as "
           "observation_spec; see docs/policies.md")


@dataclass(frozen=True, eq=False)
class PolicyRequest:
    """One request, checked: the rebuilt observation, the state vector, prompt and session."""

    observation: Observation
    state: np.ndarray
    prompt: str
    session: str | None

    @property
    def tcp(self) -> np.ndarray:
        """End-effector position (3,), metres, world frame."""
        return self.state[:3]

    @property
    def quaternion_wxyz(self) -> np.ndarray:
        return self.state[3:7]

    @property
    def gripper_width(self) -> float:
        return float(self.state[7])


def _array(value: Any, key: str, shape: tuple[int | None, ...], kinds: str,
           problems: list[str]) -> np.ndarray | None:
    if not isinstance(value, np.ndarray):
        problems.append(f"{key} is a {type(value).__name__}, not an array")
        return None
    if value.ndim != len(shape) or any(n is not None and n != m
                                       for n, m in zip(shape, value.shape, strict=True)):
        want = "x".join("N" if n is None else str(n) for n in shape)
        problems.append(f"{key} has shape {list(value.shape)}, not {want}")
        return None
    if value.dtype.kind not in kinds:
        problems.append(f"{key} has dtype {value.dtype}, not "
                        + ("uint8" if kinds == "u" else "floating point"))
        return None
    if kinds != "u" and not key.startswith(DEPTH) \
            and not np.isfinite(value).all():
        problems.append(f"{key} holds a value that is not finite")
        return None
    return value


def _cameras(message: Mapping[str, Any], problems: list[str]) -> dict[str, CameraFrame]:
    names = sorted({k[len(p):] for k in message for p in (IMAGE, DEPTH)
                    if isinstance(k, str) and k.startswith(p) and k[len(p):]})
    out: dict[str, CameraFrame] = {}
    for name in names:
        found = len(problems)
        rgb = depth = None
        if IMAGE + name in message:
            rgb = _array(message[IMAGE + name], IMAGE + name, (None, None, 3), "u", problems)
            if rgb is not None and rgb.dtype != np.uint8:
                problems.append(f"{IMAGE + name} has dtype {rgb.dtype}, not uint8")
        if DEPTH + name in message:
            depth = _array(message[DEPTH + name], DEPTH + name, (None, None), "f", problems)
        if rgb is not None and depth is not None and rgb.shape[:2] != depth.shape:
            problems.append(f"camera {name!r}: image {list(rgb.shape[:2])} and depth "
                            f"{list(depth.shape)} differ in size")
        k = pose = None
        for key, shape in ((INTRINSICS + name, (3, 3)), (CAMERA_POSE + name, (7,))):
            if key not in message:
                problems.append(f"camera {name!r} has no {key}")
                continue
            value = _array(message[key], key, shape, "fiu", problems)
            if value is not None:
                k, pose = (value, pose) if key.startswith(INTRINSICS) else (k, value)
        if len(problems) > found or k is None or pose is None:
            continue
        quat = np.asarray(pose[3:7], dtype=np.float64)
        norm = float(np.linalg.norm(quat))
        if not 0.9 < norm < 1.1:
            problems.append(f"{CAMERA_POSE + name} has quaternion {quat.tolist()} (norm "
                            f"{norm:.3g}), not a unit quaternion w, x, y, z")
            continue
        out[name] = CameraFrame(
            rgb=rgb, depth=None if depth is None else depth.astype(np.float32, copy=False),
            intrinsics=np.asarray(k, dtype=np.float64),
            position=np.asarray(pose[:3], dtype=np.float64), quaternion_wxyz=quat / norm)
    return out


def parse_request(message: Mapping[str, Any], *, timestep: int = 0, reset: bool = False
                  ) -> PolicyRequest:
    """Check one request and rebuild its :class:`Observation` (``timestep`` and ``reset`` as
    the caller counts them: the observation map carries neither)."""
    problems: list[str] = []
    state = None
    if STATE not in message:
        problems.append(f"no {STATE}")
    else:
        state = _array(message[STATE], STATE, (8,), "fiu", problems)
    prompt = message.get(PROMPT)
    if not isinstance(prompt, str) or not prompt.strip():
        problems.append(f"{PROMPT} is {prompt!r}, not a text such as 'pick up the red cube'")
    session = message.get(SESSION)
    if session is not None and not isinstance(session, str):
        problems.append(f"{SESSION} is a {type(session).__name__}, not a str")
    joints = None
    if JOINTS in message:
        joints = _array(message[JOINTS], JOINTS, (None,), "fiu", problems)
    cameras = _cameras(message, problems)
    if not cameras and not problems:
        problems.append("no camera: no observation/image/NAME or observation/depth/NAME")
    if problems or state is None:
        raise CommandError("POLICY_BAD_OBSERVATION", "the observation is refused: "
                           + "; ".join(problems), fix=_FORMAT,
                           details={"problems": problems})
    state64 = np.asarray(state, dtype=np.float64)
    if joints is None:  # a Panda hand: two fingers, each half the width
        joints = np.concatenate([np.zeros(7), np.full(2, state64[7] / 2.0)])
    observation = Observation(
        cameras=cameras, joint_positions=np.asarray(joints, dtype=np.float64),
        ee_poses=(EePose(state64[:3].copy(), state64[3:7].copy()),),
        instruction=str(prompt), timestep=timestep, reset=reset)
    return PolicyRequest(observation, state64, str(prompt), session)
