"""pick_and_place in Python: the same task as ``pick_and_place.yaml`` (a test checks that both
build equal structures). ``harness run trees/pick_and_place.py`` runs it. The pick phases are
those of ``pick_cube.py`` (built by :mod:`skills.trees`)."""

from __future__ import annotations

from harness_bt import Final, Phase, Task, TaskBudget, on
from harness_bt.nodes import act_and_evaluate
from skills.trees import Behaviour, look, pick_phases, sequence

CUBE = "red_cube"
TRAY = "tray"


def observe_tree() -> Behaviour:
    return look("find_objects", CUBE, TRAY)


def transport_tree() -> Behaviour:
    return sequence("carry", look("look", CUBE, TRAY), act_and_evaluate(
        "over_tray", "move_ee_to", params={"offset_m": [0.0, 0.0, 0.15], "holding": CUBE},
        objects={"target": TRAY}, snapshot="plan", max_observations=45))


def place_tree() -> Behaviour:
    return sequence("put", look("look", CUBE, TRAY), act_and_evaluate(
        "put_down", "place", params={"object_id": CUBE, "target_id": TRAY},
        objects={"target_pose": TRAY}, snapshot="plan", max_observations=45))


def task() -> Task:
    return Task(
        "pick_and_place",
        [
            Phase("observe", observe_tree, transitions=[
                on("succeeded", "approach"), on("failed", "aborted_not_observed")],
                description="find the cube and the tray (the plan's snapshot)"),
            *pick_phases(CUBE, then="transport"),
            Phase("transport", transport_tree, transitions=[
                on("succeeded", "place"), on("failed", "aborted_dropped"),
                on("unknown", "aborted_unknown")],
                description="carry the cube over the tray, checking it stays in the hand"),
            Phase("place", place_tree, transitions=[
                on("succeeded", "done"), on("failed", "aborted_place_failed"),
                on("unknown", "aborted_unknown")],
                description="lower the cube into the tray, let go, back off; judge that it "
                            "rests there"),
            Final("done", reason="done"),
            *(Final(a) for a in ("aborted_not_observed", "aborted_approach", "aborted_grasp",
                                 "aborted_grasp_failed", "aborted_dropped",
                                 "aborted_place_failed", "aborted_unknown",
                                 "aborted_budget_exhausted")),
        ],
        initial="observe",
        budget=TaskBudget(max_retries=10, max_time_s=27.0),
        description="Find the red cube and the tray, pick the cube up (as pick_cube), carry it "
                    "over the tray, lower it in, let go, and judge from observations that it "
                    "rests in the tray. Recoveries: back off home after an IK failure or a "
                    "stall on the way; reopen, look again and realign after a failed grasp; "
                    "after a slip (the cube not held after the lift) let go, look again and "
                    "grasp again.",
        version="1",
    )
