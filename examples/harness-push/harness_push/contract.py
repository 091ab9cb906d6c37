"""The ``push`` skill's contract (harness side): what a ``push`` command may say, what must hold
in the world before it is sent, how long it may take, and what an evaluator must confirm after.

A push slides an object across the table to ``goal`` (its centre there, x and y) with the
fingertips: the hand goes down behind the object, moves through it towards the goal, backs
off and rises. The object's pose comes from the harness's world model (``objects:
{object_pose: ...}`` in a task), the goal from a ``derive_pose`` (``inputs: {goal: ...}``), so
a second push after a short one starts from where the object now is and still aims at the
same goal.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from harness_bt.skill import CancelBehaviour, Lifecycle, Postcondition, Skill, Violation
from harness_bt.world import WorldView
from skills import checks

__all__ = ["FINGER_M", "PUSH", "PushParams", "contact_height", "push_line"]

MAX_PUSH_M = 0.25  # longer pushes drift sideways: split them
#: From the TCP to where the fingers meet the object, along the push (measured).
FINGER_M = 0.005


def _position_or_pose(value: list[float]) -> list[float]:
    if len(value) not in (2, 3, 7):
        raise ValueError(f"a position has 2 or 3 numbers (or a pose 7), got {len(value)}")
    return value


Position = Annotated[list[float], AfterValidator(_position_or_pose)]


class PushParams(BaseModel):
    """Slide ``object_id`` (now at ``object_pose``) until its centre is at ``goal`` (x, y),
    pushing it with the fingertips at ``speed_mps``; judged within ``tolerance_m``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    object_id: str = Field(min_length=1)
    object_pose: Position = Field(description="the object's pose from the world model")
    goal: Position = Field(description="where the object's centre should end (x, y[, z])")
    speed_mps: float = Field(0.06, gt=0.0, le=0.2, description="speed while in contact")
    approach_gap_m: float = Field(0.03, ge=0.01, le=0.1,
                                  description="free space between hand and object before "
                                  "contact")
    object_width_m: float = Field(0.04, gt=0.0, le=0.1,
                                  description="the object's width along the push")
    tolerance_m: float = Field(0.02, gt=0.0, le=0.05,
                               description="evaluation: largest distance from the goal that "
                               "still counts as pushed there")


def push_line(p: PushParams) -> tuple[tuple[float, float], tuple[float, float], float]:
    """``(start, direction, distance)``: the object's centre now (x, y), the unit direction to
    the goal, and how far it has to go."""
    x, y = float(p.object_pose[0]), float(p.object_pose[1])
    dx, dy = float(p.goal[0]) - x, float(p.goal[1]) - y
    distance = math.hypot(dx, dy)
    if distance < 1e-9:
        return (x, y), (1.0, 0.0), 0.0
    return (x, y), (dx / distance, dy / distance), distance


def contact_height(p: PushParams) -> float:
    """The TCP's height while pushing: the object's centre, never below 1.5 cm."""
    z = float(p.object_pose[2]) if len(p.object_pose) >= 3 else 0.02
    return max(z, 0.015)


def _check(p: PushParams, world: WorldView) -> list[Violation]:
    """The physical contract: finite numbers, a known and fresh object, a reachable line."""
    bad = checks.check_finite(p)
    if bad:
        return bad
    out = checks.check_object(world, p.object_id, "params.object_id")
    (x, y), (ux, uy), distance = push_line(p)
    if distance > MAX_PUSH_M:
        out.append(Violation("params.goal", f"the goal is {distance:.3f} m from the object; "
                             f"a push goes at most {MAX_PUSH_M} m", code="PUSH_TOO_LONG",
                             value=[round(float(v), 3) for v in p.goal[:2]],
                             fix="push in several steps, or pick and place it"))
    back = p.object_width_m / 2 + p.approach_gap_m + FINGER_M
    z = contact_height(p)
    out += checks.check_position("params.object_pose", [x - ux * back, y - uy * back, z],
                                 what="the point behind the object")
    out += checks.check_position("params.goal", [float(p.goal[0]), float(p.goal[1]), z],
                                 what="the goal")
    return out


def _post(p: PushParams) -> list[Postcondition]:
    return [Postcondition("pushed_to", {"object_id": p.object_id,
                                        "goal": [float(p.goal[0]), float(p.goal[1])],
                                        "tolerance_m": p.tolerance_m})]


PUSH = Skill(
    "push", PushParams, resources=("arm", "gripper"), check=_check, postconditions=_post,
    lifecycle=Lifecycle(start_within_ms=1_000, execution_timeout_ms=15_000,
                        stop_timeout_ms=1_000, progress_timeout_ms=2_000, retry_safe=True,
                        needs_fresh_observation_ms=500,
                        cancel=CancelBehaviour.STOP_AND_HOLD),
    description="slide an object across the table to a goal with the fingertips")
