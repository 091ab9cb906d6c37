"""The skill contracts of a Franka Panda with its hand: what each command means, harness-side.

Each :class:`~harness_bt.skill.Skill` has its params model (:mod:`skills.params`), its physical
checks (:mod:`skills.checks`), its lifecycle facts, and the postconditions its evaluators judge
from observations (:mod:`skills.evaluators`). They reach a run through the ``harness_bt.skills``
entry points (setup.cfg) or :func:`skill_registry`. Times are simulated seconds in a
step-driven simulator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from harness_bt.skill import (
    CancelBehaviour,
    Lifecycle,
    Postcondition,
    Skill,
    SkillRegistry,
    Violation,
)
from harness_bt.world import WorldView
from skills import checks
from skills.params import (
    ApproachParams,
    GraspParams,
    HomeParams,
    LiftParams,
    MoveEeToParams,
    PlaceParams,
    ReleaseParams,
    RunPolicyParams,
    grasp_goal,
    move_goal,
    place_goal,
    pregrasp_goal,
)

__all__ = [
    "APPROACH",
    "GRASP",
    "HOME",
    "LIFT",
    "MOVE_EE_TO",
    "PLACE",
    "RELEASE",
    "RUN_POLICY",
    "SKILLS",
    "skill_registry",
]

ARM = ("arm",)
HAND = ("arm", "gripper")


def _checked(*parts: Callable[[Any, WorldView], Sequence[Violation]]
             ) -> Callable[[Any, WorldView], list[Violation]]:
    """Finite values first (nothing else is meaningful with a NaN), then every other check."""
    def check(params: Any, world: WorldView) -> list[Violation]:
        bad = checks.check_finite(params)
        if bad:
            return bad
        out: list[Violation] = []
        for part in parts:
            out.extend(part(params, world))
        return out
    return check


def _move_checks(p: MoveEeToParams, world: WorldView) -> list[Violation]:
    out = checks.check_frame(p) + checks.check_pose("params.target", p.target)
    if p.orientation == "target" and len(p.target) != 7:
        out.append(Violation("params.orientation", "orientation 'target' needs a 7-number target",
                           code="INVALID_PARAMS", value=p.target,
                           fix="give [x, y, z, qw, qx, qy, qz] or orientation 'keep'"))
    if not out:
        out += checks.check_position("params.target", move_goal(p)[0], what="goal")
    if p.holding:
        out += checks.check_object(world, p.holding, "params.holding")
    return out


def _approach_checks(p: ApproachParams, world: WorldView) -> list[Violation]:
    out = checks.check_frame(p) + checks.check_pose("params.object_pose", p.object_pose)
    out += checks.check_object(world, p.object_id, "params.object_id")
    if not out:
        out += checks.check_position("params.object_pose", p.object_pose, what="the object")
        out += checks.check_position("params.height_m", pregrasp_goal(p)[0],
                                     what="the pre-grasp pose")
    return out


def _grasp_checks(p: GraspParams, world: WorldView) -> list[Violation]:
    out = checks.check_frame(p) + checks.check_pose("params.object_pose", p.object_pose)
    out += checks.check_object(world, p.object_id, "params.object_id")
    if not out:
        out += checks.check_position("params.object_pose", grasp_goal(p)[0],
                                     what="the grasp point")
        obj = world.get(p.object_id)
        if obj is not None and obj.extent[0] > 0:
            narrow = min(obj.extent[0], obj.extent[1])
            if narrow > 0.078:
                out.append(Violation("params.object_id", f"object {p.object_id!r} is "
                                     f"{narrow:.3f} m across its narrowest side; the Panda hand "
                                     "opens 0.08 m", code="TOO_WIDE", value=round(narrow, 4),
                                     fix="grasp something narrower"))
    return out


def _lift_checks(p: LiftParams, world: WorldView) -> list[Violation]:
    out = checks.check_pose("params.object_pose", p.object_pose)
    out += checks.check_object(world, p.object_id, "params.object_id")
    obs = world.observation
    if obs is not None and not out:
        goal = [float(v) for v in obs.ee_pose.position]
        goal[2] += p.height_m
        out += checks.check_position("params.height_m", goal, what="the lifted hand")
    return out


def _place_checks(p: PlaceParams, world: WorldView) -> list[Violation]:
    out = checks.check_frame(p) + checks.check_pose("params.target_pose", p.target_pose)
    out += checks.check_object(world, p.object_id, "params.object_id")
    if p.target_id is not None:
        out += checks.check_object(world, p.target_id, "params.target_id")
    elif p.onto != "pose":
        out.append(Violation("params.target_id", f"placing {p.onto} needs the object to place "
                             "it on", code="INVALID_PARAMS", value=None,
                             fix="give target_id, or onto: pose to place at target_pose"))
    if p.object_id == p.target_id:
        out.append(Violation("params.target_id", "an object cannot be placed on itself",
                           code="INVALID_PARAMS", value=p.target_id,
                           fix="name the support to place it on"))
    if not out:
        out += checks.check_position("params.target_pose", place_goal(p),
                                     what="the place point")
    return out


def _policy_checks(p: RunPolicyParams, world: WorldView) -> list[Violation]:
    from harness_bt.policy.embodiment import EMBODIMENTS

    out: list[Violation] = []
    if p.embodiment not in EMBODIMENTS:
        out.append(Violation("params.embodiment", f"no embodiment {p.embodiment!r}",
                             code="INVALID_PARAMS", value=p.embodiment,
                             fix=f"use one of: {', '.join(EMBODIMENTS)}"))
    if p.object_id is None:
        return out
    out += checks.check_object(world, p.object_id, "params.object_id")
    if p.object_pose is None:
        out.append(Violation("params.object_pose", f"judging the policy's pick of "
                             f"{p.object_id!r} needs the object's pose before it runs",
                             code="INVALID_PARAMS", value=None,
                             fix="bind it from the world model: objects: {object_pose: OBJ}"))
    else:
        out += checks.check_pose("params.object_pose", p.object_pose)
    return out


def _release_checks(p: ReleaseParams, world: WorldView) -> list[Violation]:
    return []


def _home_checks(p: HomeParams, world: WorldView) -> list[Violation]:
    return checks.check_joints("params.joints", p.joints)


def _tol(tolerance: float) -> float:
    return tolerance + 0.005  # the arm may settle a few millimetres after control done


def _move_post(p: MoveEeToParams) -> list[Postcondition]:
    goal, _ = move_goal(p)
    out = [Postcondition("ee_at", {"target": goal, "tolerance_m": _tol(p.tolerance_m)})]
    if p.holding:
        out.append(Postcondition("grasped", {"object_id": p.holding, "stage": "carried"}))
    return out


def _approach_post(p: ApproachParams) -> list[Postcondition]:
    return [Postcondition("ee_at", {"target": pregrasp_goal(p)[0],
                                    "tolerance_m": _tol(p.tolerance_m)}),
            Postcondition("gripper_open", {"min_width_m": 0.07})]


def _grasp_post(p: GraspParams) -> list[Postcondition]:
    return [Postcondition("grasped", {"object_id": p.object_id, "stage": "closed",
                                      "width_m": p.object_width_m})]


def _lift_post(p: LiftParams) -> list[Postcondition]:
    return [Postcondition("grasped", {
        "object_id": p.object_id, "stage": "lifted", "width_m": p.object_width_m,
        "start": [float(v) for v in p.object_pose[:3]], "min_rise_m": 0.6 * p.height_m})]


def _policy_post(p: RunPolicyParams) -> list[Postcondition]:
    if p.object_id is None or p.object_pose is None:
        return []  # judged by the task's own evaluation, never by the policy
    return [Postcondition("grasped", {
        "object_id": p.object_id, "stage": "lifted", "width_m": p.object_width_m,
        "start": [float(v) for v in p.object_pose[:3]], "min_rise_m": p.min_rise_m})]


def _release_post(p: ReleaseParams) -> list[Postcondition]:
    return [Postcondition("gripper_open", {"min_width_m": p.width_m - 0.012})]


def _place_post(p: PlaceParams) -> list[Postcondition]:
    if p.onto == "pose":
        return [Postcondition("at_pose", {"object_id": p.object_id,
                                          "pose": list(p.target_pose[:3]),
                                          "tolerance_m": min(p.max_offset_m, 0.025)})]
    if p.onto == "top":
        return [Postcondition("rests_on", {"object_id": p.object_id, "target": p.target_id,
                                           "max_offset_m": min(p.max_offset_m, 0.02)})]
    return [Postcondition("placed_on", {"object_id": p.object_id, "target": p.target_id,
                                        "max_offset_m": p.max_offset_m})]


def _home_post(p: HomeParams) -> list[Postcondition]:
    return [Postcondition("joints_at", {"joints": list(p.joints),
                                        "tolerance_rad": 2 * p.tolerance_rad})]


#: what every skill here shares: start within 1 s, stop within 1 s, progress at least every
#: 2 s, safe to retry
_LIFECYCLE = Lifecycle(start_within_ms=1_000, stop_timeout_ms=1_000, progress_timeout_ms=2_000,
                       retry_safe=True)


def _lifecycle(execution_timeout_ms: int, **facts: Any) -> Lifecycle:
    """:data:`_LIFECYCLE` with a skill's own execution timeout and ``facts``."""
    return dataclasses.replace(_LIFECYCLE, execution_timeout_ms=execution_timeout_ms, **facts)


MOVE_EE_TO = Skill(
    "move_ee_to", MoveEeToParams, resources=ARM, check=_checked(_move_checks),
    postconditions=_move_post,
    lifecycle=_lifecycle(12_000),
    description="move the tool centre point to a position (Cartesian, ee_pose deltas)")
APPROACH = Skill(
    "approach", ApproachParams, resources=HAND, check=_checked(_approach_checks),
    postconditions=_approach_post,
    lifecycle=_lifecycle(12_000, needs_fresh_observation_ms=500),
    description="open the hand and go to the pre-grasp pose above an object")
GRASP = Skill(
    "grasp", GraspParams, resources=HAND, check=_checked(_grasp_checks),
    postconditions=_grasp_post,
    lifecycle=_lifecycle(10_000, needs_fresh_observation_ms=500,
                         cancel=CancelBehaviour.STOP_AND_HOLD),
    description="centre over an object, descend, close until the fingers stop")
LIFT = Skill(
    "lift", LiftParams, resources=HAND, check=_checked(_lift_checks), postconditions=_lift_post,
    lifecycle=_lifecycle(8_000),
    description="raise the hand and what it holds, then hold still")
RELEASE = Skill(
    "release", ReleaseParams, resources=("gripper",), check=_checked(_release_checks),
    postconditions=_release_post,
    lifecycle=_lifecycle(4_000),
    description="open the hand until the fingers stop")
PLACE = Skill(
    "place", PlaceParams, resources=HAND, check=_checked(_place_checks),
    postconditions=_place_post,
    lifecycle=_lifecycle(12_000, retry_safe=False, needs_fresh_observation_ms=500),
    description="lower the held object onto a target, open, back off")
HOME = Skill(
    "home", HomeParams, resources=ARM, check=_checked(_home_checks), postconditions=_home_post,
    lifecycle=_lifecycle(12_000),
    description="move the arm to its home configuration in joint space (no IK)")
RUN_POLICY = Skill(
    "run_policy", RunPolicyParams, resources=HAND, check=_checked(_policy_checks),
    postconditions=_policy_post,
    # a reply may take a while (the client's own timeout ends a silent one first)
    lifecycle=_lifecycle(120_000, progress_timeout_ms=30_000, retry_safe=True,
                         needs_fresh_observation_ms=500),
    description="run a learned policy (openpi WebSocket protocol) until it signals done or "
                "its step budget is spent; judged from observations, never by the policy")

#: Every skill of this package, in the order the docs list them.
SKILLS = (MOVE_EE_TO, APPROACH, GRASP, LIFT, RELEASE, PLACE, HOME, RUN_POLICY)


def skill_registry() -> SkillRegistry:
    """A fresh registry with this package's skills (what the entry points provide)."""
    return SkillRegistry(SKILLS)
