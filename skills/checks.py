"""The physical contracts: what must hold in the current world before a command may go out.

Each check returns :class:`~harness_bt.skill.Violation` items (field, what is wrong, the value,
the fix); a skill's ``check`` concatenates the ones that apply to it. Checks read the harness's
world model (a :class:`~harness_bt.world.WorldView`), never the simulator.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from harness_bt.skill import Violation
from harness_bt.world import WorldView
from skills.geometry import JOINT_LOWER, JOINT_UPPER, workspace_problems

__all__ = [
    "KNOWN_FRAMES",
    "OBJECT_MAX_AGE_S",
    "check_finite",
    "check_frame",
    "check_joints",
    "check_object",
    "check_pose",
    "check_position",
]

#: Frames a target may be given in. ``base`` is the robot base, which is the world frame here.
KNOWN_FRAMES = ("world", "base")
#: How old the harness's belief about an object may be when a command relies on it.
OBJECT_MAX_AGE_S = 2.0


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]")
    else:
        yield path, value


def check_finite(params: BaseModel) -> list[Violation]:
    """Every number in the params is finite."""
    return [
        Violation(path, "is not a finite number", code="NON_FINITE", value=str(value),
                fix="compute the value again; a NaN or infinity usually means a lost object "
                    "or a division by zero upstream")
        for path, value in _walk(params.model_dump(), "params")
        if isinstance(value, float) and not math.isfinite(value)
    ]


def check_frame(params: BaseModel) -> list[Violation]:
    frame = getattr(params, "frame", "world")
    if frame in KNOWN_FRAMES:
        return []
    return [Violation("params.frame", f"unknown frame; known frames: {', '.join(KNOWN_FRAMES)}",
                    code="UNKNOWN_FRAME", value=frame,
                    fix="express the target in the world (robot base) frame")]


def check_pose(field: str, pose: Sequence[float]) -> list[Violation]:
    """A 7-number pose carries a usable quaternion."""
    if len(pose) != 7:
        return []
    norm = math.sqrt(sum(float(v) * float(v) for v in pose[3:7]))
    if norm < 1e-6:
        return [Violation(f"{field}[3:7]", "the quaternion has no direction",
                        code="INVALID_QUATERNION", value=list(pose[3:7]),
                        fix="give a unit quaternion (w, x, y, z), e.g. [1, 0, 0, 0]")]
    return []


def check_position(field: str, position: Sequence[float], *, what: str = "target"
                   ) -> list[Violation]:
    """The TCP position is inside the Panda's workspace with the hand pointing down."""
    return [Violation(field, message, code=code,
                    value=[round(float(v), 4) for v in position[:3]],
                    fix="choose a target on the table in front of the robot, 0.2-0.75 m from "
                        "its base")
            for code, message in workspace_problems(position, what=what)]


def check_object(world: WorldView, object_id: str, field: str, *,
                 max_age_s: float = OBJECT_MAX_AGE_S, min_confidence: float = 0.5
                 ) -> list[Violation]:
    """The object is known to the world model, seen recently and confidently."""
    obj = world.get(object_id)
    if obj is None:
        known = sorted(o.object_id for o in world.objects())
        return [Violation(field, f"object {object_id!r} is not in the world model (known: "
                        f"{', '.join(known) or 'none'})", code="UNKNOWN_OBJECT", value=object_id,
                        fix="observe the scene first (an observe node before this action)")]
    age = world.age(object_id)
    if age > max_age_s:
        return [Violation(field, f"object {object_id!r} was last seen {age:.2f} s ago (timestep "
                        f"{obj.provenance.timestep}); a command may rely on sightings at most "
                        f"{max_age_s} s old", code="STALE_OBJECT", value=round(age, 3),
                        fix="observe it again before acting")]
    if obj.confidence < min_confidence:
        return [Violation(field, f"object {object_id!r} was last seen with confidence "
                        f"{obj.confidence:.2f} < {min_confidence}", code="LOW_CONFIDENCE",
                        value=round(obj.confidence, 3),
                        fix="observe it again from a clear view")]
    return []


def check_joints(field: str, joints: Sequence[float]) -> list[Violation]:
    out = []
    for i, (q, lo, hi) in enumerate(zip(joints, JOINT_LOWER, JOINT_UPPER, strict=True)):
        if not lo <= q <= hi:
            out.append(Violation(f"{field}[{i}]", f"joint {i + 1} target is outside its limits "
                               f"[{lo}, {hi}] rad", code="JOINT_LIMIT", value=q,
                               fix="choose a configuration within the Panda's joint limits"))
    return out
