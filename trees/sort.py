"""sort in Python: the same task as ``sort.yaml`` (a test checks that both build equal
structures). ``harness run trees/sort.py`` runs it."""

from __future__ import annotations

from harness_bt import Task
from skills.library import sort_task

CUBES = ("red_cube_1", "red_cube_2", "red_cube_3")
#: from the container's centre, metres: away from the wall the front camera looks over, and
#: 9 cm or more apart (two cubes that touch are one blob of red)
SLOTS = ([-0.05, -0.05], [-0.05, 0.05], [0.03, 0.0])


def task(container: str = "tray") -> Task:
    """Put every red cube in ``container``, each in its slot."""
    return sort_task(CUBES, container, SLOTS)
