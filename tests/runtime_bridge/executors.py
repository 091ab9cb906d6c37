"""Tiny executors for host and transport tests (the real skills come from the skills package).

``factory`` builds them by skill name: ``move_to`` (params ``target`` [x, y, z], ``max_step``),
``wait`` (``steps``), ``never_stops`` (drives +x forever and ignores stop requests), ``grip``
(``width``), ``abort_after`` (``steps``, ``reason``), ``explode`` (raises while stepping).
Every executor's first step is counted in :data:`STARTS` (and the thread it ran on kept in
:data:`STEPPED_ON`) and, when the environment names a file in ``HBT_EXEC_LOG``, appended to it,
so a test can count executions across processes.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from typing import ClassVar

import numpy as np

from harness_bt.errors import CommandError
from harness_bt.ledger import Command
from harness_bt.runtime.executor import ActionPart, ExecutorStatus, ExecutorStep
from harness_bt.runtime.observation import Observation

STARTS: Counter[str] = Counter()
STEPPED_ON: dict[str, str] = {}  # command id -> the name of the thread its first step ran on
RUNNING, DONE, STOPPED, ABORTED = (ExecutorStatus.RUNNING, ExecutorStatus.CONTROL_DONE,
                                   ExecutorStatus.STOPPED, ExecutorStatus.ABORTED)


class _Base:
    skill: ClassVar[str]

    def __init__(self, command: Command) -> None:
        self.command = command
        self.steps = 0
        self.stop_requested = False

    def step(self, observation: Observation) -> ExecutorStep:
        if self.steps == 0:
            STARTS[self.command.command_id] += 1
            STEPPED_ON[self.command.command_id] = threading.current_thread().name
            path = os.environ.get("HBT_EXEC_LOG")
            if path:
                with open(path, "a", encoding="utf-8") as fh:
                    fh.write(self.command.command_id + "\n")
        self.steps += 1
        if self.stop_requested:
            return ExecutorStep(STOPPED)
        return self.next(observation)

    def next(self, observation: Observation) -> ExecutorStep:
        raise NotImplementedError

    def request_stop(self) -> None:
        self.stop_requested = True


class MoveTo(_Base):
    skill = "move_to"

    def next(self, observation: Observation) -> ExecutorStep:
        target = np.asarray(self.command.params["target"], dtype=float)
        max_step = float(self.command.params.get("max_step", 0.01))
        diff = target - observation.ee_pose.position
        dist = float(np.linalg.norm(diff))
        if dist <= 1e-9:
            return ExecutorStep(DONE, progress=0.0)
        delta = diff if dist <= max_step else diff * (max_step / dist)
        return ExecutorStep(RUNNING, ActionPart(arm=(*map(float, delta), 1.0, 0.0, 0.0, 0.0)),
                            progress=dist)


class Wait(_Base):
    skill = "wait"

    def next(self, observation: Observation) -> ExecutorStep:
        left = int(self.command.params.get("steps", 1)) - self.steps
        return ExecutorStep(DONE if left < 0 else RUNNING, progress=float(max(left, 0)))


class NeverStops(_Base):
    skill = "never_stops"

    def step(self, observation: Observation) -> ExecutorStep:
        self.steps += 1
        STARTS[self.command.command_id] += self.steps == 1
        return ExecutorStep(RUNNING, ActionPart(arm=(0.001, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)))


class Grip(_Base):
    skill = "grip"

    def next(self, observation: Observation) -> ExecutorStep:
        half = float(self.command.params.get("width", 0.0)) / 2
        return ExecutorStep(DONE, ActionPart(gripper=(half, half)))


class AbortAfter(_Base):
    skill = "abort_after"

    def next(self, observation: Observation) -> ExecutorStep:
        if self.steps > int(self.command.params.get("steps", 1)):
            return ExecutorStep(ABORTED, reason=str(self.command.params.get("reason", "IK_FAILED")))
        return ExecutorStep(RUNNING)


class Explode(_Base):
    skill = "explode"

    def next(self, observation: Observation) -> ExecutorStep:
        raise RuntimeError("boom")


EXECUTORS = {cls.skill: cls for cls in (MoveTo, Wait, NeverStops, Grip, AbortAfter, Explode)}


def factory(command: Command) -> _Base:
    cls = EXECUTORS.get(command.skill)
    if cls is None:
        raise CommandError(
            "UNKNOWN_SKILL",
            f"no executor for skill {command.skill!r}; known: {', '.join(sorted(EXECUTORS))}",
            command_id=command.command_id,
        )
    return cls(command)


def command(command_id: str, skill: str = "wait", *, resources: tuple[str, ...] = (),
            epoch: int = 0, start_within_ms: float = 5_000, execution_timeout_ms: float = 60_000,
            **params: object) -> Command:
    """A command for these executors."""
    return Command(command_id=command_id, skill=skill, params=dict(params), resources=resources,
                   epoch=epoch, start_within_ms=start_within_ms,
                   execution_timeout_ms=execution_timeout_ms)
