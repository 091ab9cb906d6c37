"""pick in Python: the same task as ``pick.yaml`` (a test checks that both build equal
structures, for the default target and for others). ``harness run trees/pick.py --set
target=green_cube`` runs it: the keyword parameters are the task's parameters."""

from __future__ import annotations

from harness_bt import Task
from skills.library import pick_task


def task(target: str = "red_cube") -> Task:
    """Pick up ``target`` (an object of the scene)."""
    return pick_task("pick", target)
