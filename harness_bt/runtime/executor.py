"""The executor seam: how a runtime runs one command, one control step at a time.

Executors live on the runtime side (``skills`` provides them; a runtime is handed a factory).
Each control step the runtime gives every active executor the latest observation and merges
their :class:`ActionPart` into one simulator / robot action. An executor never blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Literal, Protocol, runtime_checkable

from harness_bt.ledger import Command
from harness_bt.runtime.observation import Observation

__all__ = [
    "ActionPart",
    "Executor",
    "ExecutorFactory",
    "ExecutorStatus",
    "ExecutorStep",
]

ControlType = Literal["ee_pose", "joint_position"]


class ExecutorStatus(str, Enum):
    RUNNING = "running"  # keep stepping
    CONTROL_DONE = "control_done"  # the control action finished (not a verdict on success)
    ABORTED = "aborted"  # gave up (IK failure, stall, unreachable): ``reason`` says why
    STOPPED = "stopped"  # a requested stop is complete: the arm holds

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class ActionPart:
    """An executor's share of one control step.

    ``arm``: for ``ee_pose`` a (dx, dy, dz, qw, qx, qy, qz) delta on the last commanded pose;
    for ``joint_position`` the arm's joint deltas. ``gripper``: absolute finger targets (Panda:
    two values, 0.04 open, 0.0 closed). None means "this executor does not drive that part";
    the runtime holds what nobody drives.
    """

    control_type: ControlType = "ee_pose"
    arm: tuple[float, ...] | None = None
    gripper: tuple[float, ...] | None = None


@dataclass(frozen=True, slots=True)
class ExecutorStep:
    """What one step of an executor produced: an action share, a status, and progress
    (the skill's contract says its unit, e.g. metres remaining)."""

    status: ExecutorStatus
    action: ActionPart | None = None
    progress: float | None = None
    reason: str = ""


@runtime_checkable
class Executor(Protocol):
    """Runs one command. ``step`` is called once per control step until it returns a status
    other than RUNNING. ``request_stop`` asks for a clean stop: subsequent steps hold, and a
    step returns STOPPED once the robot holds still."""

    command: Command

    def step(self, observation: Observation) -> ExecutorStep: ...

    def request_stop(self) -> None: ...


#: Builds the executor for a command; raises :class:`harness_bt.errors.CommandError` to refuse
#: it (unknown skill, params the runtime cannot execute).
ExecutorFactory = Callable[[Command], Executor]
