"""stack in Python: the same task as ``stack.yaml`` (a test checks that both build equal
structures). ``harness run trees/stack.py --set top=blue_cube --set bottom=red_cube`` runs
it: the keyword parameters are the task's parameters."""

from __future__ import annotations

from harness_bt import Task, TaskBudget
from skills.library import RECOVERIES, move_task


def task(top: str = "red_cube", bottom: str = "green_cube") -> Task:
    """Put ``top`` on ``bottom`` (its top face)."""
    return move_task(
        "stack", top, bottom, onto="top", clearance=0.038, scene="stack",
        params={"top": top, "bottom": bottom}, instruction="put the {top} on the {bottom}",
        description="Find the two objects, pick the top one up (as pick), carry it over the "
                    "bottom one, lower it until it rests on the bottom one's top face, let go, "
                    f"and judge from observations that it rests there. {RECOVERIES}",
        budget=TaskBudget(max_retries=10, max_time_s=27.0))
