"""Harness-side evaluators for the pick-and-place skills, from observations only.

Each judges one postcondition from the latest observation (finger joints, the hand's pose) and
the world model as perception left it for *this* observation. None reads an executor's report
or the simulator's state. Several independent sources are weighed: a verdict of SUCCEEDED needs
them to agree; a source that is missing (the object not seen in this frame, or seen with low
confidence) gives UNKNOWN, and so do sources that contradict each other.

They reach a run through the ``harness_bt.evaluators`` entry points (setup.cfg) or
:func:`evaluator_registry`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from harness_bt.evaluation import EvaluationResult, EvaluatorRegistry
from harness_bt.runtime.observation import Observation
from harness_bt.skill import Postcondition
from harness_bt.world import WorldObject, WorldView
from skills.geometry import TABLE_Z, yaw_of

__all__ = ["EVALUATORS", "at_pose", "cleared", "evaluator_registry", "grasped", "joints_at",
           "placed_on", "rests_on"]

NEAR_XY_M = 0.025  # the object's centre this close to the TCP (horizontally) is between the fingers
NEAR_Z_M = 0.03
GAP_SLACK_M = 0.012  # fingers this much wider than the object are not closed on it


def _r(values: Any, n: int = 3) -> list[float]:
    return [round(float(v), n) for v in values]


def _seen(post: Postcondition, observation: Observation, world: WorldView, oid: str
          ) -> tuple[WorldObject | None, str]:
    """The object as perceived in this very observation, or why it is not visible."""
    min_conf = float(post.params.get("min_confidence", 0.5))
    obj = world.get(oid)
    if obj is None:
        return None, f"{oid} has never been seen"
    if obj.provenance.timestep != observation.timestep:
        return None, (f"{oid} not visible at t={observation.timestep} (last seen at "
                      f"t={obj.provenance.timestep})")
    if obj.confidence < min_conf:
        return None, (f"{oid} only partly visible at t={observation.timestep}: confidence "
                      f"{obj.confidence:.2f} < {min_conf:.2f} (occluded?)")
    return obj, ""


def _gap(observation: Observation, width: float) -> tuple[str | None, str]:
    """The finger joints' account: ``holding`` (closed to about the object's width),
    ``empty`` (closed past it), ``open``, or None when the observation has no finger joints."""
    gap = observation.gripper_width
    if gap is None:
        return None, "no finger joint positions in the observation"
    if gap < 0.5 * width:
        state = "empty"
    elif gap <= width + GAP_SLACK_M:
        state = "holding"
    else:
        state = "open"
    return state, f"finger gap {gap:.4f} m for a {width:.3f} m object: {state}"


def _object_width(post: Postcondition, obj: WorldObject | None) -> float:
    if "width_m" in post.params:
        return float(post.params["width_m"])
    if obj is not None and obj.extent[0] > 0 and obj.extent[1] > 0:
        return float(min(obj.extent[0], obj.extent[1]))
    return 0.04


def grasped(post: Postcondition, observation: Observation, world: WorldView
            ) -> EvaluationResult:
    """``object_id`` is held by the hand.

    Params: ``stage`` (``closed``: just after closing; ``lifted``: after a lift, with ``start``
    [x, y, z] and ``min_rise_m``; ``carried``: in the air), ``width_m`` (object width between
    the fingers). Sources: (1) the finger gap: closed to about the object's width; (2) vision:
    the object's centre between the fingertips in this frame; (3) for ``lifted`` / ``carried``:
    its height (risen with the hand from ``start``, clear of the table).
    SUCCEEDED when all agree; FAILED when vision shows the object away from the hand or not
    lifted; UNKNOWN when it is not visible or vision and the fingers disagree.
    """
    oid = str(post.params["object_id"])
    stage = str(post.params.get("stage", "closed"))
    obj, why = _seen(post, observation, world, oid)
    width = _object_width(post, obj)
    gap, gap_text = _gap(observation, width)
    if obj is None:
        return EvaluationResult.unknown(why, gap_text)
    tcp = np.asarray(observation.ee_pose.position, dtype=float)
    pos = np.asarray(obj.pose.position, dtype=float)
    dxy = float(np.hypot(*(pos[:2] - tcp[:2])))
    dz = float(pos[2] - tcp[2])
    near = dxy <= NEAR_XY_M and abs(dz) <= NEAR_Z_M
    evidence: list[Any] = [
        f"{oid} at {_r(pos)} (conf {obj.confidence:.2f}, camera {obj.provenance.camera or '?'}, "
        f"t={obj.provenance.timestep}); TCP at {_r(tcp)}: {dxy:.3f} m across, {dz:+.3f} m up",
        gap_text,
    ]
    if not near:
        return EvaluationResult.failed(*evidence, f"{oid} is not between the fingertips")
    if stage in ("lifted", "carried"):
        bottom = pos[2] - obj.extent[2] / 2.0
        if bottom < TABLE_Z + 0.02:
            return EvaluationResult.failed(*evidence, f"{oid} bottom at {bottom:.3f} m: still "
                                           "at table height")
        if stage == "lifted":
            start = np.asarray(post.params["start"], dtype=float)
            rise = float(pos[2] - start[2])
            need = float(post.params.get("min_rise_m", 0.05))
            evidence.append(f"{oid} rose {rise:.3f} m with the hand (needs {need:.3f} m)")
            if rise < need:
                return EvaluationResult.failed(*evidence, f"{oid} did not rise with the hand")
    if gap is None:
        return EvaluationResult.unknown(*evidence, "cannot confirm the grip without the fingers")
    if gap != "holding":
        return EvaluationResult.unknown(*evidence, f"sources disagree: vision puts {oid} "
                                        f"between the fingertips, the fingers are {gap}")
    return EvaluationResult.succeeded(*evidence, f"{oid} held ({stage})")


def placed_on(post: Postcondition, observation: Observation, world: WorldView
              ) -> EvaluationResult:
    """``object_id`` rests on / in ``target`` and the hand has let go.

    Params: ``max_offset_m`` (largest distance of the object's centre from the target's centre,
    horizontally), ``max_drop_m`` (the object's bottom at most this far above the target's
    floor). Sources: vision (where the object rests, relative to the target), the finger gap
    and the hand's position (released). UNKNOWN when the object is not visible or the target
    was never seen.
    """
    oid = str(post.params["object_id"])
    tid = str(post.params["target"])
    obj, why = _seen(post, observation, world, oid)
    target = world.get(tid)
    width = _object_width(post, obj)
    gap, gap_text = _gap(observation, width)
    if obj is None:
        return EvaluationResult.unknown(why, gap_text)
    if target is None:
        return EvaluationResult.unknown(f"target {tid} has never been seen", gap_text)
    pos = np.asarray(obj.pose.position, dtype=float)
    tpos = np.asarray(target.pose.position, dtype=float)
    tcp = np.asarray(observation.ee_pose.position, dtype=float)
    yaw = yaw_of(target.pose.quaternion_wxyz)
    c, s = math.cos(yaw), math.sin(yaw)
    rel = pos[:2] - tpos[:2]
    along = (abs(rel[0] * c + rel[1] * s), abs(-rel[0] * s + rel[1] * c))
    offset = float(np.hypot(*rel))
    max_offset = float(post.params.get("max_offset_m", 0.06))
    inside = offset <= max_offset and along[0] <= target.extent[0] / 2 - 0.01 and \
        along[1] <= target.extent[1] / 2 - 0.01
    bottom = pos[2] - obj.extent[2] / 2.0
    floor = tpos[2] - target.extent[2] / 2.0
    drop = float(bottom - floor)
    resting = drop <= float(post.params.get("max_drop_m", 0.02))
    hand_near = float(np.linalg.norm(pos - tcp)) < 0.06
    evidence: list[Any] = [
        f"{oid} at {_r(pos)} (conf {obj.confidence:.2f}, t={obj.provenance.timestep}); {tid} "
        f"at {_r(tpos)} seen t={target.provenance.timestep}",
        f"{offset:.3f} m from the centre of {tid} (at most {max_offset:.3f} m), bottom "
        f"{drop:+.3f} m above its floor",
        gap_text, f"hand {float(np.linalg.norm(pos - tcp)):.3f} m from {oid}",
    ]
    if hand_near and gap == "holding":
        return EvaluationResult.failed(*evidence, f"{oid} is still in the hand")
    if not inside:
        return EvaluationResult.failed(*evidence, f"{oid} is not within {tid}")
    if not resting:
        return EvaluationResult.failed(*evidence, f"{oid} is not resting on {tid}")
    if hand_near and gap is None:
        return EvaluationResult.unknown(*evidence, "cannot tell whether the hand let go")
    return EvaluationResult.succeeded(*evidence, f"{oid} placed on {tid}")


def rests_on(post: Postcondition, observation: Observation, world: WorldView
             ) -> EvaluationResult:
    """``object_id`` rests on top of ``target`` (an object on an object: a cube on a cube) and
    the hand has let go.

    Params: ``max_offset_m`` (the object's centre at most this far from the support's,
    horizontally), ``tolerance_m`` (the object's bottom within this of the support's top).
    Sources: vision of both objects in this very observation (where each is), the finger gap
    and the hand's position (released). UNKNOWN when either is not visible now; FAILED when
    the object is beside the support, above it in the air, or still in the hand.
    """
    oid = str(post.params["object_id"])
    tid = str(post.params["target"])
    obj, why = _seen(post, observation, world, oid)
    width = _object_width(post, obj)
    gap, gap_text = _gap(observation, width)
    if obj is None:
        return EvaluationResult.unknown(why, gap_text)
    support, why = _seen(post, observation, world, tid)
    if support is None:
        return EvaluationResult.unknown(why, gap_text)
    pos = np.asarray(obj.pose.position, dtype=float)
    spos = np.asarray(support.pose.position, dtype=float)
    tcp = np.asarray(observation.ee_pose.position, dtype=float)
    offset = float(np.hypot(*(pos[:2] - spos[:2])))
    max_offset = float(post.params.get("max_offset_m", 0.02))
    gap_z = float((pos[2] - obj.extent[2] / 2.0) - (spos[2] + support.extent[2] / 2.0))
    tol = float(post.params.get("tolerance_m", 0.015))
    hand = float(np.linalg.norm(pos - tcp))
    evidence: list[Any] = [
        f"{oid} at {_r(pos)} (conf {obj.confidence:.2f}), {tid} at {_r(spos)} (conf "
        f"{support.confidence:.2f}), t={observation.timestep}",
        f"{offset:.3f} m off the centre of {tid} (at most {max_offset:.3f} m); bottom "
        f"{gap_z:+.3f} m from its top (within {tol:.3f} m)",
        gap_text, f"hand {hand:.3f} m from {oid}",
    ]
    return _let_go_and_resting(evidence, oid, hand, gap, [
        (offset > max_offset, f"{oid} is not on top of {tid}"),
        (abs(gap_z) > tol, f"{oid} is not resting on {tid}'s top")], f"{oid} rests on {tid}")


def _let_go_and_resting(evidence: list[Any], oid: str, hand: float, gap: str | None,
                        faults: list[tuple[bool, str]], done: str) -> EvaluationResult:
    """The verdict of a placing: FAILED while the object is still in the hand or on the first
    fault that holds; UNKNOWN when the hand is close and the fingers cannot say whether it let
    go; else SUCCEEDED (``done``)."""
    if hand < 0.06 and gap == "holding":
        return EvaluationResult.failed(*evidence, f"{oid} is still in the hand")
    for bad, why in faults:
        if bad:
            return EvaluationResult.failed(*evidence, why)
    if hand < 0.06 and gap is None:
        return EvaluationResult.unknown(*evidence, "cannot tell whether the hand let go")
    return EvaluationResult.succeeded(*evidence, done)


def at_pose(post: Postcondition, observation: Observation, world: WorldView
            ) -> EvaluationResult:
    """``object_id`` rests at ``pose`` ([x, y, z]: its centre there) and the hand has let go.

    Params: ``tolerance_m`` (horizontal distance from the pose's x, y), ``max_drop_m`` (its
    centre at most this far above or below the pose's z: resting, not in the air). Sources:
    vision of the object in this observation, the finger gap and the hand's position.
    UNKNOWN when the object is not visible now.
    """
    oid = str(post.params["object_id"])
    goal = np.asarray(post.params["pose"], dtype=float)[:3]
    obj, why = _seen(post, observation, world, oid)
    width = _object_width(post, obj)
    gap, gap_text = _gap(observation, width)
    if obj is None:
        return EvaluationResult.unknown(why, gap_text)
    pos = np.asarray(obj.pose.position, dtype=float)
    tcp = np.asarray(observation.ee_pose.position, dtype=float)
    off = float(np.hypot(*(pos[:2] - goal[:2])))
    dz = float(pos[2] - goal[2])
    tol = float(post.params.get("tolerance_m", 0.025))
    max_drop = float(post.params.get("max_drop_m", 0.015))
    hand = float(np.linalg.norm(pos - tcp))
    evidence: list[Any] = [
        f"{oid} at {_r(pos)} (conf {obj.confidence:.2f}, t={obj.provenance.timestep}); goal "
        f"{_r(goal)}: {off:.3f} m across (at most {tol:.3f} m), {dz:+.3f} m up",
        gap_text, f"hand {hand:.3f} m from {oid}",
    ]
    return _let_go_and_resting(evidence, oid, hand, gap, [
        (off > tol, f"{oid} is not at the goal"),
        (abs(dz) > max_drop, f"{oid} is not resting at the goal's height")],
        f"{oid} placed at the goal")


def cleared(post: Postcondition, observation: Observation, world: WorldView
            ) -> EvaluationResult:
    """None of ``objects`` (the objects of a kind: every red cube) is left in ``region``
    (``[x_min, x_max, y_min, y_max]`` on the table, metres).

    Sources: vision of each object in this very observation. FAILED as soon as one is seen
    inside the region; UNKNOWN when none is seen inside but one is not visible now (it may be
    there); SUCCEEDED when every one is seen, outside.
    """
    ids = [str(o) for o in post.params["objects"]]
    x0, x1, y0, y1 = (float(v) for v in post.params["region"])
    evidence: list[Any] = []
    unseen: list[str] = []
    inside: list[str] = []
    for oid in ids:
        obj, why = _seen(post, observation, world, oid)
        if obj is None:
            unseen.append(oid)
            evidence.append(why)
            continue
        x, y = (float(v) for v in obj.pose.position[:2])
        here = x0 <= x <= x1 and y0 <= y <= y1
        evidence.append(f"{oid} at {_r(obj.pose.position)}: {'inside' if here else 'outside'} "
                        f"the region (conf {obj.confidence:.2f})")
        if here:
            inside.append(oid)
    region = f"x {x0:.3f}..{x1:.3f}, y {y0:.3f}..{y1:.3f}"
    if inside:
        return EvaluationResult.failed(*evidence, f"{', '.join(inside)} still in {region}")
    if unseen:
        return EvaluationResult.unknown(*evidence, f"cannot tell where {', '.join(unseen)} is")
    return EvaluationResult.succeeded(*evidence, f"no object left in {region}")


def joints_at(post: Postcondition, observation: Observation, world: WorldView
              ) -> EvaluationResult:
    """The arm's joints (first ``len(joints)``) are within ``tolerance_rad`` of ``joints``."""
    target = np.asarray(post.params["joints"], dtype=float)
    tol = float(post.params.get("tolerance_rad", 0.05))
    joints = np.asarray(observation.joint_positions, dtype=float)
    if joints.shape[0] < target.shape[0] or not np.all(np.isfinite(joints[:target.shape[0]])):
        return EvaluationResult.unknown(f"observation has no usable joint positions "
                                        f"({joints.shape[0]} values)")
    err = float(np.max(np.abs(joints[:target.shape[0]] - target)))
    evidence = f"largest joint error {err:.4f} rad (tolerance {tol}), t={observation.timestep}"
    if err <= tol:
        return EvaluationResult.succeeded(evidence)
    return EvaluationResult.failed(evidence)


#: name -> evaluator, as the entry points register them.
EVALUATORS = {"grasped": grasped, "placed_on": placed_on, "inside": placed_on,
              "rests_on": rests_on, "at_pose": at_pose, "cleared": cleared,
              "joints_at": joints_at}


def evaluator_registry() -> EvaluatorRegistry:
    """The built-in evaluators plus this package's."""
    registry = EvaluatorRegistry()
    for name, fn in EVALUATORS.items():
        registry.register(name, fn, origin="skills.evaluators")
    return registry
