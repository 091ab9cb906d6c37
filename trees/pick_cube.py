"""pick_cube in Python: the same task as ``pick_cube.yaml`` (a test checks that both build
equal structures). ``harness run trees/pick_cube.py`` runs it."""

from __future__ import annotations

from harness_bt import Final, Phase, Task, TaskBudget, on
from skills.trees import Behaviour, look, pick_phases

CUBE = "red_cube"


def observe_tree() -> Behaviour:
    return look("find_cube", CUBE)


def task() -> Task:
    return Task(
        "pick_cube",
        [
            Phase("observe", observe_tree, transitions=[
                on("succeeded", "approach"), on("failed", "aborted_not_observed")],
                description="find the cube (the plan's snapshot)"),
            *pick_phases(CUBE, then="done"),
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
