"""What a policy sees and does, in the robot's terms: the mapping of observations to policy
requests and of action chunks back to executor actions, declared per policy skill.

A learned policy is trained on one robot's camera keys, image sizes, state layout and action
space; an :class:`Embodiment` declares them so the same runtime observation becomes the request
that policy expects, and its replies become :class:`~harness_bt.runtime.executor.ActionPart`
steps. The default, :data:`PANDA_EE_DELTA`, is what the built-in policy server speaks:

Request (one msgpack map, see :mod:`harness_bt.policy.wire`):

- ``observation/image/{camera}``: uint8 (H, W, 3) RGB, one per camera;
- ``observation/depth/{camera}``: float32 (H, W) metres, when rendered (``depth``);
- ``observation/intrinsics/{camera}``: float64 (3, 3), and ``observation/camera_pose/{camera}``:
  float64 (7,) x, y, z, qw, qx, qy, qz in the world frame (``camera_params``);
- ``observation/state``: float32, the ``state`` fields in order (default: end-effector x, y,
  z, qw, qx, qy, qz and the gripper width in metres);
- ``observation/joint_position``: float32, every joint;
- ``prompt``: the instruction; ``session``: the same for every request of one command.

Reply: ``actions`` (H, D) with D the action space's width (a single row (D,) is one step), and
an optional ``done`` flag (the policy considers its task finished once these rows have run).
For ``ee_delta``, a row is ``dx, dy, dz`` (metres of end-effector motion this control step,
world frame), then with ``rotation`` (the default) ``rx, ry, rz`` (an axis-angle turn of the
hand about world axes, radians), and ``gripper`` (below 0.5 open, else closed).

Every reply is checked before a row moves the robot: the shape, finite numbers and each step's
size within ``max_step_m`` / ``max_step_rad``; a reply that fails is refused as a whole with a
``POLICY_ACTION`` error saying what was wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness_bt.errors import BridgeError, DefinitionError
from harness_bt.runtime.executor import ActionPart
from harness_bt.runtime.observation import CameraFrame, Observation

__all__ = ["EMBODIMENTS", "PANDA_EE_DELTA", "STATE_FIELDS", "ActionSpace", "Chunk", "Embodiment"]

#: the state fields an embodiment may list, each one number
STATE_FIELDS: Mapping[str, str] = {
    "ee_x": "end-effector position x (m, world)",
    "ee_y": "end-effector position y (m, world)",
    "ee_z": "end-effector position z (m, world)",
    "ee_qw": "end-effector orientation, quaternion w",
    "ee_qx": "end-effector orientation, quaternion x",
    "ee_qy": "end-effector orientation, quaternion y",
    "ee_qz": "end-effector orientation, quaternion z",
    "gripper_width": "distance between the fingers (m)",
    **{f"joint_{i}": f"joint {i} position (rad, or m for a finger)" for i in range(9)},
}
_EE = ("ee_x", "ee_y", "ee_z", "ee_qw", "ee_qx", "ee_qy", "ee_qz")


@dataclass(frozen=True)
class ActionSpace:
    """``ee_delta``: end-effector motion per control step (3 numbers, 6 with ``rotation``)
    then one gripper number. ``gripper_open_m`` / ``gripper_closed_m``: the finger widths the
    two gripper states command."""

    kind: str = "ee_delta"
    rotation: bool = True
    max_step_m: float = 0.01
    max_step_rad: float = math.radians(5.0)
    gripper_open_m: float = 0.08
    gripper_closed_m: float = 0.0

    @property
    def width(self) -> int:
        return (6 if self.rotation else 3) + 1


@dataclass(frozen=True)
class Embodiment:
    """See the module docstring. ``cameras``: the cameras sent (None: every camera of the
    observation); ``image_size``: (height, width) every image is resized to (None: as
    rendered; the intrinsics follow the resize); ``execute_steps``: the rows of each chunk run
    before the policy is asked again (open-loop horizon)."""

    name: str
    cameras: tuple[str, ...] | None = None
    image_size: tuple[int, int] | None = None
    depth: bool = True
    camera_params: bool = True
    state: tuple[str, ...] = (*_EE, "gripper_width")
    action: ActionSpace = field(default_factory=ActionSpace)
    execute_steps: int = 8

    def __post_init__(self) -> None:
        unknown = [s for s in self.state if s not in STATE_FIELDS]
        problems = [f"unknown state field {s!r}" for s in unknown]
        if self.action.kind != "ee_delta":
            problems.append(f"action space {self.action.kind!r} (this version maps ee_delta)")
        if self.execute_steps < 1:
            problems.append(f"execute_steps {self.execute_steps} (at least 1)")
        if self.image_size is not None and min(self.image_size) < 1:
            problems.append(f"image_size {self.image_size}")
        if problems:
            raise DefinitionError("INVALID_EMBODIMENT", f"embodiment {self.name!r}: "
                                  + "; ".join(problems),
                                  fix=f"state fields: {', '.join(STATE_FIELDS)}")

    # ------------------------------------------------------------------ observation -> request

    def state_vector(self, obs: Observation) -> np.ndarray:
        pose = obs.ee_pose
        values = dict(zip(_EE, (*np.asarray(pose.position, dtype=float),
                                *np.asarray(pose.quaternion_wxyz, dtype=float)), strict=True))
        values["gripper_width"] = obs.gripper_width or 0.0
        joints = np.asarray(obs.joint_positions, dtype=float)
        values.update({f"joint_{i}": float(v) for i, v in enumerate(joints)})
        missing = [s for s in self.state if s not in values]
        if missing:
            raise BridgeError("POLICY_OBSERVATION", f"embodiment {self.name!r} needs state "
                              f"{missing}, which this robot's observation does not have",
                              fix="declare a state layout this robot has")
        return np.array([values[s] for s in self.state], dtype=np.float32)

    def _frame(self, frame: CameraFrame) -> tuple[np.ndarray | None, np.ndarray | None,
                                                  np.ndarray]:
        rgb, depth, k = frame.rgb, frame.depth, np.asarray(frame.intrinsics, dtype=float)
        if self.image_size is None or frame.shape is None or frame.shape == self.image_size:
            return rgb, depth, k
        from PIL import Image  # only when resizing

        (h0, w0), (h, w) = frame.shape, self.image_size
        if rgb is not None:
            rgb = np.asarray(Image.fromarray(np.asarray(rgb, dtype=np.uint8)).resize(
                (w, h), Image.Resampling.BILINEAR))
        if depth is not None:
            depth = np.asarray(Image.fromarray(np.asarray(depth, dtype=np.float32)).resize(
                (w, h), Image.Resampling.NEAREST))
        k = k.copy()
        k[0] *= w / w0
        k[1] *= h / h0
        return rgb, depth, k

    def request(self, obs: Observation, prompt: str, session: str) -> dict[str, Any]:
        """The policy request for ``obs``."""
        names = list(obs.cameras) if self.cameras is None else list(self.cameras)
        missing = [c for c in names if c not in obs.cameras]
        if missing:
            raise BridgeError("POLICY_OBSERVATION", f"embodiment {self.name!r} sends cameras "
                              f"{missing}, and the observation has {sorted(obs.cameras)}",
                              fix="render those cameras, or declare the ones rendered")
        out: dict[str, Any] = {}
        for name in names:
            rgb, depth, k = self._frame(obs.cameras[name])
            if rgb is None:
                raise BridgeError("POLICY_OBSERVATION", f"camera {name!r} sent no image this "
                                  "step", fix="render RGB for the cameras a policy sees")
            out[f"observation/image/{name}"] = np.ascontiguousarray(rgb, dtype=np.uint8)
            if self.depth and depth is not None:
                out[f"observation/depth/{name}"] = np.asarray(depth, dtype=np.float32)
            if self.camera_params:
                frame = obs.cameras[name]
                out[f"observation/intrinsics/{name}"] = k
                out[f"observation/camera_pose/{name}"] = np.concatenate([
                    np.asarray(frame.position, dtype=float),
                    np.asarray(frame.quaternion_wxyz, dtype=float)])
        out["observation/state"] = self.state_vector(obs)
        out["observation/joint_position"] = np.asarray(obs.joint_positions, dtype=np.float32)
        out["prompt"] = prompt
        out["session"] = session
        return out

    # ------------------------------------------------------------------ reply -> actions

    def chunk(self, reply: Mapping[str, Any], execute_steps: int | None = None) -> Chunk:
        """The checked rows of a reply (see the module docstring), at most ``execute_steps``
        (default: the embodiment's)."""
        space = self.action

        def refuse(problem: str) -> BridgeError:
            return BridgeError("POLICY_ACTION", f"the policy's action chunk was refused: "
                               f"{problem}", fix=f"embodiment {self.name!r} expects 'actions' "
                               f"of shape (H, {space.width}), finite, each step within "
                               f"{space.max_step_m} m")

        if "actions" not in reply:
            raise refuse(f"the reply has no 'actions' (keys: {sorted(reply)[:10]})")
        done = reply.get("done", False)
        if not isinstance(done, bool | np.bool_):
            raise refuse(f"'done' is {type(done).__name__}, not a boolean")
        rows = reply["actions"]
        if not isinstance(rows, np.ndarray) or rows.dtype.kind not in "iuf":
            raise refuse(f"'actions' is {type(rows).__name__}"
                         + (f" of {rows.dtype}" if isinstance(rows, np.ndarray) else "")
                         + ", not a numeric array")
        if rows.ndim == 1:
            rows = rows[None, :]
        if rows.ndim != 2 or rows.shape[1] != space.width:
            raise refuse(f"'actions' has shape {list(reply['actions'].shape)}")
        rows = rows.astype(float)
        if not np.isfinite(rows).all():
            bad = np.argwhere(~np.isfinite(rows))[0]
            raise refuse(f"row {bad[0]} holds {rows[bad[0], bad[1]]} at column {bad[1]}")
        steps = np.linalg.norm(rows[:, :3], axis=1)
        if rows.size and steps.max() > space.max_step_m * (1 + 1e-6):
            i = int(steps.argmax())
            raise refuse(f"row {i} moves {steps[i]:.4f} m in one step, over "
                         f"{space.max_step_m} m")
        if space.rotation and rows.size:
            turns = np.linalg.norm(rows[:, 3:6], axis=1)
            if turns.max() > space.max_step_rad * (1 + 1e-6):
                i = int(turns.argmax())
                raise refuse(f"row {i} turns {turns[i]:.4f} rad in one step, over "
                             f"{space.max_step_rad} rad")
        if not rows.shape[0] and not done:
            raise refuse("it is empty and not 'done'")
        return Chunk(rows[: execute_steps or self.execute_steps], bool(done))

    def action_part(self, row: np.ndarray) -> ActionPart:
        """One row as the executor's share of a control step."""
        space = self.action
        q: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0)
        if space.rotation:
            rv = row[3:6]
            angle = float(np.linalg.norm(rv))
            if angle > 1e-12:
                axis = rv / angle
                s = math.sin(angle / 2.0)
                q = (math.cos(angle / 2.0), *(float(a * s) for a in axis))
        width = space.gripper_closed_m if row[-1] >= 0.5 else space.gripper_open_m
        return ActionPart("ee_pose", (*(float(v) for v in row[:3]), *q),
                          (width / 2.0, width / 2.0))


@dataclass(frozen=True)
class Chunk:
    """The rows of one reply to run (at most ``execute_steps``), and the policy's end signal."""

    rows: np.ndarray
    done: bool


#: The built-in policy server's embodiment: a Panda, every camera as rendered with depth and
#: camera parameters, end-effector pose + gripper width as state; out, rows of 7 as in
#: openpi's LIBERO and DROID examples: end-effector motion (3), an axis-angle turn (3) and
#: the gripper.
PANDA_EE_DELTA = Embodiment("panda_ee_delta", action=ActionSpace(rotation=True))

#: Embodiments by name (a policy skill's ``embodiment`` param).
EMBODIMENTS: Mapping[str, Embodiment] = {PANDA_EE_DELTA.name: PANDA_EE_DELTA}
