"""The task: its phases (a statechart), the chart rules every task source is held to, and the
:class:`Task` that compiles them into a python-statemachine chart class. Built from Python
objects only; documents (YAML, Python modules, BehaviorTree.CPP XML) are read, checked and
compiled into a Task by :mod:`harness_bt.authoring`, above this package."""

from harness_bt.task.phases import (
    Compound,
    Final,
    History,
    On,
    Parallel,
    Phase,
    PhaseSpec,
    TreeSource,
    children,
    on,
    walk,
)
from harness_bt.task.task import Task

__all__ = ["Compound", "Final", "History", "On", "Parallel", "Phase", "PhaseSpec", "Task",
           "TreeSource", "children", "on", "walk"]
