"""clear_table in Python: the same task as ``clear_table.yaml`` (a test checks that both build
equal structures). ``harness run trees/clear_table.py`` runs it."""

from __future__ import annotations

from harness_bt import Task
from skills.library import clear_task

CUBES = ("red_cube", "green_cube", "blue_cube")
#: from the container's centre, metres (as sort's: 9 cm or more apart)
SLOTS = ([-0.05, -0.05], [-0.05, 0.05], [0.03, 0])


def task(container: str = "tray") -> Task:
    """Put every cube in ``container``, the one nearest to it first, each in its slot."""
    return clear_task(CUBES, container, SLOTS, order=f"nearest(items, world.{container})")
