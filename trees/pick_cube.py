"""pick_cube in Python: the same task as ``pick_cube.yaml``: ``pick`` under its first name."""

from __future__ import annotations

from harness_bt import Task
from skills.library import pick_task


def task(target: str = "red_cube") -> Task:
    """Pick up ``target`` (an object of the scene)."""
    return pick_task("pick_cube", target)
