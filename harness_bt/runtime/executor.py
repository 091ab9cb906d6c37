"""The executor seam: how a runtime runs one command, one control step at a time.

Executors live on the runtime side: a skills package names one per skill in the
``harness_bt.executors`` entry-point group, and a runtime is handed a factory (an
:class:`ExecutorRegistry` of every installed one, by default).
Each control step the runtime gives every active executor the latest observation and merges
their :class:`ActionPart` into one simulator / robot action. An executor never blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from harness_bt.errors import CommandError, DefinitionError
from harness_bt.ledger import Command
from harness_bt.plugins import Group, Registry, did_you_mean, load_reference
from harness_bt.runtime.observation import Observation

__all__ = [
    "ActionPart",
    "Executor",
    "ExecutorFactory",
    "ExecutorRegistry",
    "ExecutorStatus",
    "ExecutorStep",
    "executable_skills",
    "load_executors",
]

ControlType = Literal["ee_pose", "joint_position"]


class ExecutorStatus(StrEnum):
    RUNNING = "running"  # keep stepping
    CONTROL_DONE = "control_done"  # the control action finished (not a verdict on success)
    ABORTED = "aborted"  # gave up (IK failure, stall, unreachable): ``reason`` says why
    STOPPED = "stopped"  # a requested stop is complete: the arm holds


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


def _validate(name: str, item: Any) -> None:
    if not callable(item):
        raise DefinitionError("INVALID_EXECUTOR", f"the executor of skill {name!r} is "
                              f"{type(item).__name__}, not a callable command -> executor",
                              fix="register an ExecutorFactory (a class or a function taking "
                                  "the command)")


class ExecutorRegistry(Registry[ExecutorFactory]):
    """Skill name -> the :data:`ExecutorFactory` that runs it; itself an executor factory:
    calling it with a command builds that command's executor, and refuses a skill it has no
    executor for (:class:`~harness_bt.errors.CommandError` ``UNKNOWN_SKILL``).

    ``entry_points=True`` loads the ``harness_bt.executors`` group, one entry point per skill,
    so two skills packages installed side by side both run."""

    def __init__(self, executors: Mapping[str, ExecutorFactory] | None = None, *,
                 entry_points: bool = False, origin: str = "code") -> None:
        super().__init__("executor", validate=_validate)
        for skill, factory in (executors or {}).items():
            self.register(skill, factory, origin=origin)
        if entry_points:
            self.load(Group.EXECUTORS)

    def __call__(self, command: Command) -> Executor:
        if command.skill not in self:
            known = self.names()
            raise CommandError(
                "UNKNOWN_SKILL", f"no executor for skill {command.skill!r}; this runtime runs "
                f"{', '.join(known) or '(none)'}{did_you_mean(command.skill, known)}",
                command_id=command.command_id,
                fix="send a skill this runtime knows, or install the package that executes it "
                    "where the runtime runs")
        return self.get(command.skill)(command)


def executable_skills(executors: ExecutorFactory) -> frozenset[str] | None:
    """The skills ``executors`` can run, when it can tell (an :class:`ExecutorRegistry`);
    None for a factory that does not say."""
    if isinstance(executors, ExecutorRegistry):
        return frozenset(executors.names())
    return None


def load_executors(reference: str | None = None) -> ExecutorFactory:
    """The executors a runtime hosts: ``package.module:attribute`` (an executor factory given
    explicitly), else every executor installed (the ``harness_bt.executors`` entry points)."""
    if reference:
        factory: ExecutorFactory = load_reference(reference, "executor factory",
                                                  example="tests.runtime_bridge.executors:factory")
        if not callable(factory):
            raise DefinitionError("INVALID_REFERENCE", f"executor factory {reference!r} is "
                                  f"{type(factory).__name__}, not callable",
                                  fix="name a function or class taking a command")
        return factory
    installed = ExecutorRegistry(entry_points=True)
    if not len(installed):
        raise DefinitionError(
            "NO_EXECUTORS", f"no executors are installed (the {Group.EXECUTORS} entry-point "
            "group is empty), so this runtime could run no command",
            fix="install a skills package (pip install -e . installs the built-in one), or "
                "pass --executors package.module:factory")
    return installed
