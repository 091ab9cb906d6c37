"""The ``pushed_to`` evaluator (harness side): where the object rests now, from this
observation only (the world model as perception left it for it), never from the executor's
report."""

from __future__ import annotations

import math

from harness_bt.evaluation import EvaluationResult
from harness_bt.runtime.observation import Observation
from harness_bt.skill import Postcondition
from harness_bt.world import WorldView

__all__ = ["pushed_to"]

HAND_CLEAR_M = 0.035  # the TCP at least this far from the object's centre: the hand let go


def pushed_to(post: Postcondition, observation: Observation, world: WorldView
              ) -> EvaluationResult:
    """``object_id`` rests with its centre within ``tolerance_m`` of ``goal`` (x, y) and the
    hand is clear of it.

    SUCCEEDED: seen in this observation (confidence at least ``min_confidence``, default
    0.5) within the tolerance, the hand clear. FAILED: seen, but farther (the evidence says how
    far and which way), or the hand still on it. UNKNOWN: not seen in this observation, or seen
    with too little confidence (occluded?).
    """
    oid = str(post.params["object_id"])
    gx, gy = (float(v) for v in post.params["goal"][:2])
    tolerance = float(post.params.get("tolerance_m", 0.02))
    obj = world.get(oid)
    if obj is None:
        return EvaluationResult.unknown(f"{oid} has never been seen")
    if obj.provenance.timestep != observation.timestep:
        return EvaluationResult.unknown(f"{oid} not seen at t={observation.timestep} (last "
                                        f"seen at t={obj.provenance.timestep})")
    min_conf = float(post.params.get("min_confidence", 0.5))
    if obj.confidence < min_conf:
        return EvaluationResult.unknown(f"{oid} seen with confidence {obj.confidence:.2f} < "
                                        f"{min_conf:.2f} at t={observation.timestep}")
    x, y, z = (float(v) for v in obj.pose.position)
    off = math.hypot(x - gx, y - gy)
    tcp = [float(v) for v in observation.ee_pose.position]
    hand = math.dist(tcp, (x, y, z))
    evidence = [f"{oid} at [{x:.3f}, {y:.3f}] (conf {obj.confidence:.2f}, camera "
                f"{obj.provenance.camera or '?'}, t={obj.provenance.timestep}); goal [{gx:.3f}, "
                f"{gy:.3f}]: {off:.3f} m off (tolerance {tolerance} m)",
                f"hand {hand:.3f} m from it"]
    if hand < HAND_CLEAR_M:
        return EvaluationResult.failed(*evidence, "the hand is still on the object")
    if off > tolerance:
        return EvaluationResult.failed(*evidence, f"{oid} is {off:.3f} m from the goal")
    return EvaluationResult.succeeded(*evidence, f"{oid} pushed to the goal")
