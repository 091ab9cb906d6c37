"""The executor factory a runtime is handed: command -> executor, by skill name."""

from __future__ import annotations

from harness_bt.errors import CommandError
from harness_bt.ledger import Command
from skills.executors.base import CONTROL_PERIOD_S, SegmentExecutor
from skills.executors.skills import (
    ApproachExecutor,
    GraspExecutor,
    HomeExecutor,
    LiftExecutor,
    MoveEeToExecutor,
    PlaceExecutor,
    ReleaseExecutor,
)

__all__ = ["EXECUTORS", "SkillExecutors", "executor_factory"]

#: skill name -> executor class.
EXECUTORS: dict[str, type[SegmentExecutor]] = {cls.skill: cls for cls in (
    MoveEeToExecutor, ApproachExecutor, GraspExecutor, LiftExecutor, ReleaseExecutor,
    PlaceExecutor, HomeExecutor)}


class SkillExecutors:
    """An :data:`~harness_bt.runtime.executor.ExecutorFactory` for this package's skills, for a
    runtime stepping every ``control_period_s`` seconds. Refuses unknown skills and params it
    cannot execute with a :class:`~harness_bt.errors.CommandError`."""

    def __init__(self, control_period_s: float = CONTROL_PERIOD_S) -> None:
        if not control_period_s > 0:
            raise ValueError(f"control_period_s={control_period_s!r} must be positive")
        self.control_period_s = control_period_s

    def __call__(self, command: Command) -> SegmentExecutor:
        cls = EXECUTORS.get(command.skill)
        if cls is None:
            raise CommandError(
                "UNKNOWN_SKILL", f"no executor for skill {command.skill!r}; this runtime runs "
                f"{', '.join(sorted(EXECUTORS))}", command_id=command.command_id,
                fix="send a skill this runtime knows, or install the package that executes it")
        return cls(command, control_period_s=self.control_period_s)


#: The factory for a GenManip-paced runtime (1/30 s per step): the ``harness_bt.executors``
#: entry point ``skills``.
executor_factory = SkillExecutors()
