"""Tree builders for the task library (``trees/``) in Python: the same trees as the subtrees of
``trees/steps.yaml``. Every builder takes the object's id, so the same recoveries serve any
graspable object the perception knows.

- :func:`approach_tree`: look, go to the pre-grasp pose; back off home after an IK failure or
  a stall (3 attempts).
- :func:`grasp_tree`: look, close on the object, lift it (the lift is handed over to the
  evaluation phase); after a miss reopen, look again and realign (3 attempts).
- :func:`evaluate_tree`: judge the lift from observations; after a slip let go, look again,
  grasp again, lift again (3 attempts).
- :func:`pick_phases`: the three as the phases ``approach`` -> ``grasp`` -> ``evaluate`` with
  their transitions, the last one going on to the phase the task names.
- :func:`carry_tree`: look, carry the held object 15 cm over a destination object.
- :func:`put_tree`: look, lower the held object inside a container or on top of an object.
- :func:`carry_to_goal_tree`, :func:`put_at_goal_tree`: the same, to a pose on the blackboard
  (``goal``, from ``derive_pose``).
- :func:`put_in_slot_tree`: look, aim at a slot of a container (an offset from its centre, as
  just seen), lower the held object into it.
"""

from __future__ import annotations

from collections.abc import Sequence

import py_trees

from harness_bt import Phase, on
from harness_bt.nodes import (
    DerivePose,
    Evaluate,
    Observe,
    SkillAction,
    act_and_evaluate,
    recover,
)

__all__ = ["Behaviour", "approach_tree", "carry_to_goal_tree", "carry_tree", "evaluate_tree",
           "grasp_tree", "look", "pick_phases", "put_at_goal_tree", "put_in_slot_tree", "put_tree",
           "sequence"]

Behaviour = py_trees.behaviour.Behaviour


def sequence(name: str, *children: Behaviour) -> Behaviour:
    """A sequence with memory (a finished child is not ticked again)."""
    return py_trees.composites.Sequence(name, memory=True, children=list(children))


def look(name: str, *objects: str) -> Behaviour:
    """Observe ``objects`` and record the plan's snapshot of them."""
    return Observe(name, list(objects), timeout_s=3.0, record="plan")


def _pregrasp(name: str, obj: str) -> Behaviour:
    return act_and_evaluate(name, "approach", params={"object_id": obj},
                            objects={"object_pose": obj}, snapshot="plan")


def _close(name: str, obj: str) -> Behaviour:
    return act_and_evaluate(name, "grasp", params={"object_id": obj},
                            objects={"object_pose": obj}, snapshot="plan", max_observations=45)


def _lift(name: str, obj: str, *, handover: bool = False) -> Behaviour:
    return SkillAction(name, "lift", params={"object_id": obj, "height_m": 0.12},
                       objects={"object_pose": obj}, output="lift", handover=handover)


def _release(name: str, obj: str) -> Behaviour:
    return act_and_evaluate(name, "release", params={"object_id": obj})


def _approach(name: str, obj: str) -> Behaviour:
    """Look (the plan's snapshot), then go to the pre-grasp pose."""
    return sequence(name, look("look", obj), _pregrasp("pregrasp", obj))


def _grasp(name: str, obj: str) -> Behaviour:
    """Look (the plan's snapshot), then grasp."""
    return sequence(name, look("look", obj), _close("close", obj))


def approach_tree(obj: str) -> Behaviour:
    return recover(_approach("approach_cube", obj), act_and_evaluate("back_off", "home"), 3,
                   name="approach_or_back_off")


def grasp_tree(obj: str) -> Behaviour:
    return recover(sequence("grasp_and_lift", _grasp("grasp_cube", obj),
                            _lift("raise", obj, handover=True)),
                   sequence("realign", _release("reopen", obj), _approach("reapproach", obj)),
                   3, name="grasp_or_realign")


def evaluate_tree(obj: str) -> Behaviour:
    return recover(Evaluate("held", "lift", max_observations=45, observation_timeout_s=2.0),
                   sequence("regrasp", _release("let_go", obj), _approach("reapproach", obj),
                            _grasp("regrasp_cube", obj), _lift("relift", obj)),
                   3, name="held_or_regrasp")


def pick_phases(obj: str, then: str) -> list[Phase]:
    """The phases ``approach``, ``grasp`` and ``evaluate`` of picking ``obj``; ``evaluate``
    goes on to ``then`` when the object is held. Failures end in ``aborted_approach``,
    ``aborted_grasp``, ``aborted_grasp_failed``; UNKNOWN in ``aborted_unknown``; an exhausted
    budget in ``aborted_budget_exhausted`` (the task defines those finals)."""
    ends = [on("unknown", "aborted_unknown"),
            on("budget_exhausted", "aborted_budget_exhausted")]
    return [
        Phase("approach", lambda: approach_tree(obj), transitions=[
            on("succeeded", "grasp"), on("failed", "aborted_approach"), *ends],
            description="the pre-grasp pose above the object; back off home on an IK "
                        "failure or a stall"),
        Phase("grasp", lambda: grasp_tree(obj), transitions=[
            on("succeeded", "evaluate"), on("failed", "aborted_grasp"), *ends],
            description="close on the object and lift it; reopen, look again and realign "
                        "after a miss"),
        Phase("evaluate", lambda: evaluate_tree(obj), transitions=[
            on("succeeded", then), on("failed", "aborted_grasp_failed"), *ends],
            description="judge the lift from observations; after a slip let go, look "
                        "again, grasp again"),
    ]


def carry_tree(obj: str, dest: str) -> Behaviour:
    return sequence("carry", look("look", obj, dest), act_and_evaluate(
        "over_target", "move_ee_to", params={"offset_m": [0.0, 0.0, 0.15], "holding": obj},
        objects={"target": dest}, snapshot="plan", max_observations=45))


def put_tree(obj: str, dest: str, onto: str = "inside", clearance: float = 0.008) -> Behaviour:
    return sequence("put", look("look", obj, dest), act_and_evaluate(
        "put_down", "place", params={"object_id": obj, "target_id": dest, "onto": onto,
                                     "min_height_m": clearance},
        objects={"target_pose": dest}, snapshot="plan", max_observations=45))


def carry_to_goal_tree(obj: str) -> Behaviour:
    return sequence("carry", look("look", obj), act_and_evaluate(
        "over_target", "move_ee_to", params={"offset_m": [0.0, 0.0, 0.15], "holding": obj},
        inputs={"target": "goal"}, snapshot="plan", max_observations=45))


def put_in_slot_tree(obj: str, dest: str, slot: Sequence[float]) -> Behaviour:
    return sequence("put", look("look", obj, dest), DerivePose(
        "aim", dest, offset=list(slot), snapshot="plan", output="goal"), act_and_evaluate(
        "put_down", "place", params={"object_id": obj, "target_id": dest, "onto": "inside",
                                     "max_offset_m": 0.085},
        inputs={"target_pose": "goal"}, snapshot="plan", max_observations=45))


def put_at_goal_tree(obj: str) -> Behaviour:
    return sequence("put", look("look", obj), act_and_evaluate(
        "put_down", "place", params={"object_id": obj, "onto": "pose"},
        inputs={"target_pose": "goal"}, snapshot="plan", max_observations=45))
