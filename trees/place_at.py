"""place_at in Python: the same task as ``place_at.yaml`` (a test checks that both build equal
structures). ``harness run trees/place_at.py --set offset=0.05,-0.1`` runs it: the keyword
parameters are the task's parameters."""

from __future__ import annotations

from collections.abc import Sequence

from harness_bt import Task
from skills.library import place_at_task


def task(target: str = "red_cube", offset: Sequence[float] = (0.0, 0.1)) -> Task:
    """Move ``target`` by ``offset`` ([dx, dy] metres) from where it was seen."""
    return place_at_task(target, offset)
