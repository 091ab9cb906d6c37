"""Tree builders for picking an object with the Panda hand: the phases ``pick_cube`` and
``pick_and_place`` (``trees/``) share, in Python. Every builder takes the object's id, so the
same recoveries serve any graspable object the perception knows.

- :func:`approach_tree`: look, go to the pre-grasp pose; back off home after an IK failure or
  a stall (3 attempts).
- :func:`grasp_tree`: look, close on the object, lift it (the lift is handed over to the
  evaluation phase); after a miss reopen, look again and realign (3 attempts).
- :func:`evaluate_tree`: judge the lift from observations; after a slip let go, look again,
  grasp again, lift again (3 attempts).
- :func:`pick_phases`: the three as the phases ``approach`` -> ``grasp`` -> ``evaluate`` with
  their transitions, the last one going on to the phase the task names.
"""

from __future__ import annotations

import py_trees

from harness_bt import Phase, on
from harness_bt.nodes import Evaluate, Observe, SkillAction, act_and_evaluate, recover

__all__ = ["Behaviour", "approach_tree", "evaluate_tree", "grasp_tree", "look", "pick_phases",
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
            description="the pre-grasp pose above the cube; back off home on an IK "
                        "failure or a stall"),
        Phase("grasp", lambda: grasp_tree(obj), transitions=[
            on("succeeded", "evaluate"), on("failed", "aborted_grasp"), *ends],
            description="close on the cube and lift it; reopen, look again and realign "
                        "after a miss"),
        Phase("evaluate", lambda: evaluate_tree(obj), transitions=[
            on("succeeded", then), on("failed", "aborted_grasp_failed"), *ends],
            description="judge the lift from observations; after a slip let go, look "
                        "again, grasp again"),
    ]
