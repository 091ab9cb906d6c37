"""Executors: how each skill runs on the runtime side, one control step at a time, from
observations and the command's params only."""

from skills.executors.base import CONTROL_PERIOD_S, SegmentExecutor
from skills.executors.factory import EXECUTORS, executor_registry
from skills.executors.segments import (
    CartesianMove,
    Dwell,
    Fingers,
    JointMove,
    Segment,
    SegmentStep,
)
from skills.executors.skills import (
    ApproachExecutor,
    GraspExecutor,
    HomeExecutor,
    LiftExecutor,
    MoveEeToExecutor,
    PlaceExecutor,
    ReleaseExecutor,
)

__all__ = [
    "CONTROL_PERIOD_S",
    "EXECUTORS",
    "ApproachExecutor",
    "CartesianMove",
    "Dwell",
    "Fingers",
    "GraspExecutor",
    "HomeExecutor",
    "JointMove",
    "LiftExecutor",
    "MoveEeToExecutor",
    "PlaceExecutor",
    "ReleaseExecutor",
    "Segment",
    "SegmentExecutor",
    "SegmentStep",
    "executor_registry",
]
