"""pick_cube in Python: the same task as ``pick_cube.yaml`` (a test checks that both build
equal structures). ``harness run trees/pick_cube.py`` runs it."""

from __future__ import annotations

from harness_bt import Final, Phase, Task, TaskBudget, on
from skills.trees import Behaviour, approach_tree, evaluate_tree, grasp_tree, look

CUBE = "red_cube"


def observe_tree() -> Behaviour:
    return look("find_cube", CUBE)


def task() -> Task:
    ends = [on("unknown", "aborted_unknown"),
            on("budget_exhausted", "aborted_budget_exhausted")]
    return Task(
        "pick_cube",
        [
            Phase("observe", observe_tree, transitions=[
                on("succeeded", "approach"), on("failed", "aborted_not_observed")],
                description="find the cube (the plan's snapshot)"),
            Phase("approach", lambda: approach_tree(CUBE), transitions=[
                on("succeeded", "grasp"), on("failed", "aborted_approach"), *ends],
                description="the pre-grasp pose above the cube; back off home on an IK "
                            "failure or a stall"),
            Phase("grasp", lambda: grasp_tree(CUBE), transitions=[
                on("succeeded", "evaluate"), on("failed", "aborted_grasp"), *ends],
                description="close on the cube and lift it; reopen, look again and realign "
                            "after a miss"),
            Phase("evaluate", lambda: evaluate_tree(CUBE), transitions=[
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
