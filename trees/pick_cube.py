"""pick_cube in Python: the same task as ``pick_cube.yaml`` (a test checks that both build
equal structures). ``harness run trees/pick_cube.py`` runs it."""

from __future__ import annotations

import py_trees

from harness_bt import Final, Phase, Task, TaskBudget, on
from harness_bt.nodes import Evaluate, Observe, SkillAction, act_and_evaluate, recover

CUBE = "red_cube"
Behaviour = py_trees.behaviour.Behaviour


def look(name: str) -> Behaviour:
    return Observe(name, [CUBE], timeout_s=3.0, record="plan")


def pregrasp(name: str) -> Behaviour:
    return act_and_evaluate(name, "approach", params={"object_id": CUBE},
                            objects={"object_pose": CUBE}, snapshot="plan")


def close(name: str) -> Behaviour:
    return act_and_evaluate(name, "grasp", params={"object_id": CUBE},
                            objects={"object_pose": CUBE}, snapshot="plan", max_observations=45)


def lift(name: str, *, handover: bool = False) -> Behaviour:
    return SkillAction(name, "lift", params={"object_id": CUBE, "height_m": 0.12},
                       objects={"object_pose": CUBE}, output="lift", handover=handover)


def release(name: str) -> Behaviour:
    return act_and_evaluate(name, "release", params={"object_id": CUBE})


def sequence(name: str, *children: Behaviour) -> Behaviour:
    return py_trees.composites.Sequence(name, memory=True, children=list(children))


def observe_tree() -> Behaviour:
    return Observe("find_cube", [CUBE], timeout_s=3.0, record="plan")


def approach_cube(name: str) -> Behaviour:
    """Look (the plan's snapshot), then go to the pre-grasp pose."""
    return sequence(name, look("look"), pregrasp("pregrasp"))


def grasp_cube(name: str) -> Behaviour:
    """Look (the plan's snapshot), then grasp."""
    return sequence(name, look("look"), close("close"))


def approach_tree() -> Behaviour:
    return recover(approach_cube("approach_cube"), act_and_evaluate("back_off", "home"), 3,
                   name="approach_or_back_off")


def grasp_tree() -> Behaviour:
    return recover(sequence("grasp_and_lift", grasp_cube("grasp_cube"),
                            lift("raise", handover=True)),
                   sequence("realign", release("reopen"), approach_cube("reapproach")),
                   3, name="grasp_or_realign")


def evaluate_tree() -> Behaviour:
    return recover(Evaluate("held", "lift", max_observations=45, observation_timeout_s=2.0),
                   sequence("regrasp", release("let_go"), approach_cube("reapproach"),
                            grasp_cube("regrasp_cube"), lift("relift")),
                   3, name="held_or_regrasp")


def task() -> Task:
    ends = [on("unknown", "aborted_unknown"),
            on("budget_exhausted", "aborted_budget_exhausted")]
    return Task(
        "pick_cube",
        [
            Phase("observe", observe_tree, transitions=[
                on("succeeded", "approach"), on("failed", "aborted_not_observed")],
                description="find the cube (the plan's snapshot)"),
            Phase("approach", approach_tree, transitions=[
                on("succeeded", "grasp"), on("failed", "aborted_approach"), *ends],
                description="the pre-grasp pose above the cube; back off home on an IK "
                            "failure or a stall"),
            Phase("grasp", grasp_tree, transitions=[
                on("succeeded", "evaluate"), on("failed", "aborted_grasp"), *ends],
                description="close on the cube and lift it; reopen, look again and realign "
                            "after a miss"),
            Phase("evaluate", evaluate_tree, transitions=[
                on("succeeded", "done"), on("failed", "aborted_grasp_failed"), *ends],
                description="judge the lift from observations; after a slip let go, look "
                            "again, grasp again"),
            Final("done", reason="done"),
            *(Final(a) for a in ("aborted_not_observed", "aborted_approach", "aborted_grasp",
                                 "aborted_grasp_failed", "aborted_unknown",
                                 "aborted_budget_exhausted")),
        ],
        initial="observe",
        budget=TaskBudget(max_retries=8, max_time_s=25.0),
        description="Find the red cube, go above it, grasp and lift it, and judge from "
                    "observations that it is held. Recoveries: back off home after an IK "
                    "failure or a stall on the way; reopen, look again and realign after a "
                    "failed grasp; after a slip (the cube not held after the lift) let go, look "
                    "again and grasp again.",
        version="1",
    )
