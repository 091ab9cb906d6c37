"""GenManip observation dicts to and from :class:`harness_bt.runtime.observation.Observation`.

The dict is what travels (``camera_data``, ``instruction``, ``joint_position_state``,
``ee_pose_state``, ``timestep``, ``reset``); the dataclass is what the harness reads. A dict
from the network is checked field by field; keys this version does not read go to ``extras``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from harness_bt.runtime.observation import CameraFrame, EePose, Observation
from runtime_bridge.genmanip.errors import HttpError

__all__ = ["OBSERVATION_KEYS", "observation_from_wire", "observation_to_wire"]

OBSERVATION_KEYS = ("camera_data", "instruction", "joint_position_state", "ee_pose_state",
                    "timestep", "reset")


def _bad(where: str, message: str, fix: str) -> HttpError:
    return HttpError("BAD_OBSERVATION", f"{where}: {message}", where=where, fix=fix,
                     http_status=500)


def _array(value: Any, shape: tuple[int | None, ...], where: str,
           dtype: Any = np.float64) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise _bad(where, f"expected numbers of shape {shape}, got {type(value).__name__}",
                   "send numpy arrays or lists of numbers") from None
    if array.ndim != len(shape) or any(
            s is not None and s != n for s, n in zip(shape, array.shape, strict=True)):
        raise _bad(where, f"expected shape {shape}, got {array.shape}",
                   "follow GENMANIP_PROTOCOL.md for this field's shape")
    return array


def _camera(name: str, data: Any, where: str) -> CameraFrame:
    if not isinstance(data, Mapping):
        raise _bad(where, f"expected a dict, got {type(data).__name__}",
                   "send {'rgb', 'depth', 'intrinsics_matrix', 'p', 'q'} per camera")
    rgb = data.get("rgb")
    if rgb is not None:
        rgb = np.asarray(rgb)
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise _bad(f"{where}['rgb']", f"expected HxWx3 uint8, got {rgb.shape} {rgb.dtype}",
                       "send RGB images as HxWx3 uint8")
    depth = data.get("depth")
    if depth is not None:
        depth = np.asarray(depth)
        if depth.ndim != 2 or depth.dtype.kind != "f":
            raise _bad(f"{where}['depth']", f"expected HxW float metres, got {depth.shape} "
                       f"{depth.dtype}", "send depth as HxW float32 metres, or None")
        if rgb is not None and depth.shape != rgb.shape[:2]:
            raise _bad(f"{where}['depth']", f"depth {depth.shape} and rgb {rgb.shape[:2]} differ",
                       "render depth and rgb at the same resolution")
    return CameraFrame(
        rgb=rgb, depth=depth,
        intrinsics=_array(data.get("intrinsics_matrix"), (3, 3), f"{where}['intrinsics_matrix']"),
        position=_array(data.get("p"), (3,), f"{where}['p']"),
        quaternion_wxyz=_array(data.get("q"), (4,), f"{where}['q']"),
    )


def _describe(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of length {len(value)}"
    return type(value).__name__


def _ee_poses(value: Any, where: str) -> tuple[EePose, ...]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise _bad(where, f"expected [position(3), quaternion(4)] or two of those, got "
                   f"{_describe(value)}", "follow GENMANIP_PROTOCOL.md ee_pose_state")
    head = value[0]
    dual = isinstance(head, (list, tuple)) and len(head) == 2 and not np.isscalar(head[0])
    pairs = value if dual else [value]
    poses = []
    for i, pair in enumerate(pairs):
        w = f"{where}[{i}]" if dual else where
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise _bad(w, "expected [position(3), quaternion(4)]", "send one pair per arm")
        poses.append(EePose(position=_array(pair[0], (3,), f"{w}[0]"),
                            quaternion_wxyz=_array(pair[1], (4,), f"{w}[1]")))
    return tuple(poses)


def observation_from_wire(obs: Any, *, worker_id: str = "0", received_at: float | None = None,
                          where: str | None = None) -> Observation:
    """Check a GenManip observation dict and type it. Raises :class:`HttpError` naming the field."""
    where = where or f"worker {worker_id} obs"
    if not isinstance(obs, Mapping):
        raise _bad(where, f"expected a dict, got {type(obs).__name__}", "send the observation dict")
    missing = [k for k in OBSERVATION_KEYS if k not in obs]
    if missing:
        raise _bad(where, f"missing {', '.join(missing)}", "send every GenManip observation key")
    cams_raw = obs["camera_data"]
    if cams_raw is None:
        cams_raw = {}
    if not isinstance(cams_raw, Mapping):
        raise _bad(f"{where}.camera_data", f"expected a dict, got {type(cams_raw).__name__}",
                   "send {camera_name: {...}} (an empty dict when nothing is rendered)")
    cameras = {str(n): _camera(str(n), c, f"{where}.camera_data[{n!r}]")
               for n, c in cams_raw.items()}
    timestep = obs["timestep"]
    if isinstance(timestep, (np.integer,)):
        timestep = int(timestep)
    if not isinstance(timestep, int) or isinstance(timestep, bool) or timestep < 0:
        raise _bad(f"{where}.timestep", f"expected a non-negative int, got {timestep!r}",
                   "send the step index within the episode")
    joints = _array(obs["joint_position_state"], (None,), f"{where}.joint_position_state")
    instruction = obs["instruction"]
    if not isinstance(instruction, str):
        raise _bad(f"{where}.instruction", f"expected text, got {type(instruction).__name__}",
                   "send the task's instruction string")
    return Observation(
        cameras=cameras,
        joint_positions=joints,
        ee_poses=_ee_poses(obs["ee_pose_state"], f"{where}.ee_pose_state"),
        instruction=instruction,
        timestep=timestep,
        reset=bool(obs["reset"]),
        worker_id=worker_id,
        received_at=received_at,
        extras={k: v for k, v in obs.items() if k not in OBSERVATION_KEYS},
    )


def observation_to_wire(obs: Observation) -> dict[str, Any]:
    """The GenManip dict of an :class:`Observation` (what a server sends)."""
    poses = [[p.position, p.quaternion_wxyz] for p in obs.ee_poses]
    out: dict[str, Any] = {
        "camera_data": {
            name: {"rgb": c.rgb, "depth": c.depth, "intrinsics_matrix": c.intrinsics,
                   "p": c.position, "q": c.quaternion_wxyz}
            for name, c in obs.cameras.items()
        },
        "instruction": obs.instruction,
        "joint_position_state": obs.joint_positions,
        "ee_pose_state": poses[0] if len(poses) == 1 else poses,
        "timestep": obs.timestep,
        "reset": obs.reset,
    }
    out.update(obs.extras)
    return out
