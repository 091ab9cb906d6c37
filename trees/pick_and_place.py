"""pick_and_place in Python: the same task as ``pick_and_place.yaml`` (a test checks that both
build equal structures). ``harness run trees/pick_and_place.py --set target=green_cube`` runs
it: the keyword parameters are the task's parameters."""

from __future__ import annotations

from harness_bt import Task, TaskBudget
from skills.library import RECOVERIES, move_task


def task(target: str = "red_cube", container: str = "tray") -> Task:
    """Put ``target`` in ``container`` (a tray or a bowl of the scene)."""
    return move_task(
        "pick_and_place", target, container, onto="inside", clearance=0.008,
        scene="pick_and_place", params={"target": target, "container": container},
        instruction="put the {target} in the {container}",
        description="Find the target and the container, pick the target up (as pick), carry "
                    "it over the container, lower it in, let go, and judge from observations "
                    f"that it rests inside. {RECOVERIES}",
        budget=TaskBudget(max_retries=10, max_time_s=27.0))
