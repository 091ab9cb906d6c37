"""The executor every skill shares: plan segments from the first observation, step them in
order, report progress (distance left), and stop cleanly on request.

Runtime-side: an executor sees only the observations the runtime hands it and its command's
params (object poses come from the harness's world model, in the params). It never blocks.

Stopping (``request_stop``): the next step pulls the commanded target back onto the measured
pose, so the arm holds where it is; the executor then reports STOPPED once the hand has stood
still for two steps (or after ``STOP_STEPS``, when the runtime's own hold takes over).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ValidationError

from harness_bt.errors import CommandError
from harness_bt.ledger import Command
from harness_bt.runtime.executor import ActionPart, ExecutorStatus, ExecutorStep
from harness_bt.runtime.observation import Observation
from skills.executors.segments import Segment

__all__ = ["CONTROL_PERIOD_S", "SegmentExecutor", "StopWatch"]

#: GenManip steps physics at 1/30 s per ``/step``; speeds in params are per second.
CONTROL_PERIOD_S = 1.0 / 30.0
STOP_STEPS = 30
HELD_STILL_M = 0.001  # the hand moved less than this in a step: it stands still


class StopWatch:
    """The end of a requested stop, one step at a time: STOPPED once the hand has stood still
    for two steps and the executor sends nothing more, or after ``STOP_STEPS`` steps (the
    runtime's own hold takes over)."""

    def __init__(self) -> None:
        self.steps = 0
        self._still = 0
        self._last: np.ndarray | None = None

    def step(self, obs: Observation, action: ActionPart | None = None) -> ExecutorStep:
        """This stop step's outcome; ``action``: what the executor still sends (a halt)."""
        self.steps += 1
        m = np.asarray(obs.ee_pose.position, dtype=float)
        moved = None if self._last is None else float(np.linalg.norm(m - self._last))
        self._last = m
        self._still = self._still + 1 if moved is not None and moved < HELD_STILL_M else 0
        if self._still >= 2 and action is None:
            return ExecutorStep(ExecutorStatus.STOPPED, None, None, "held still")
        if self.steps >= STOP_STEPS:
            return ExecutorStep(ExecutorStatus.STOPPED, None, None,
                                f"hand still moving after {STOP_STEPS} steps")
        return ExecutorStep(ExecutorStatus.RUNNING, action, None)


class SegmentExecutor:
    """Base of the skill executors. Subclasses set ``skill`` and ``params_model`` and build
    their segments in :meth:`plan`."""

    skill: ClassVar[str]
    params_model: ClassVar[type[BaseModel]]
    #: segments steer from joint states and the command's params, never from camera frames:
    #: a simulator rendering on demand need not render for them
    reads_frames: ClassVar[bool] = False

    def __init__(self, command: Command, *, control_period_s: float = CONTROL_PERIOD_S) -> None:
        self.command = command
        self.dt = control_period_s
        try:
            self.params = self.params_model.model_validate(command.params)
        except ValidationError as exc:
            raise CommandError(
                "INVALID_PARAMS", f"skill {self.skill!r}: the runtime cannot execute these "
                f"params: {exc.errors(include_url=False)}", command_id=command.command_id,
                fix=f"send params that fit {self.params_model.__name__}") from None
        self.segments: list[Segment] | None = None
        self.index = 0
        self.steps = 0
        self._stop = False
        self._stop_watch = StopWatch()

    # ------------------------------------------------------------------ to override

    def plan(self, obs: Observation) -> list[Segment]:
        raise NotImplementedError

    # ------------------------------------------------------------------ Executor protocol

    def request_stop(self) -> None:
        self._stop = True

    def step(self, observation: Observation) -> ExecutorStep:
        self.steps += 1
        if self._stop:
            return self._stopping(observation)
        if self.segments is None:
            self.segments = self.plan(observation)
        while self.index < len(self.segments):
            seg = self.segments[self.index]
            if not seg.started:
                seg.start(observation)
            out = seg.step(observation)
            later = sum(s.length() for s in self.segments[self.index + 1:])
            if out.failed:
                return ExecutorStep(ExecutorStatus.ABORTED, None, out.remaining + later,
                                    out.failed)
            if not out.done:
                return ExecutorStep(ExecutorStatus.RUNNING, out.action, out.remaining + later)
            self.index += 1
            if out.action is not None:
                if self.index >= len(self.segments):
                    return ExecutorStep(ExecutorStatus.CONTROL_DONE, out.action, 0.0)
                return ExecutorStep(ExecutorStatus.RUNNING, out.action, later)
        return ExecutorStep(ExecutorStatus.CONTROL_DONE, None, 0.0)

    def _stopping(self, obs: Observation) -> ExecutorStep:
        action: ActionPart | None = None
        if self._stop_watch.steps == 0 and self.segments is not None and \
                self.index < len(self.segments):
            action = self.segments[self.index].halt(obs)
        return self._stop_watch.step(obs, action)

    # ------------------------------------------------------------------ helpers

    def per_step(self, speed: float) -> float:
        """A speed (per second) as a distance per control step."""
        return speed * self.dt
