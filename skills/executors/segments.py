"""Motion segments: the pieces an executor chains (move the hand, move the joints, drive the
fingers, wait). Each is stepped once per control step with the newest observation and answers
with an action share, whether it is done or failed, and the distance it has left.

GenManip semantics (``GENMANIP_PROTOCOL.md``): ``ee_pose`` and ``joint_position`` arm actions
are deltas on the *last commanded* target, the fingers take absolute targets. A segment keeps
its own copy of the commanded target, starting from the measured state, and sends the deltas
that walk it to the goal; once the copy has arrived it watches the measured state settle. When
the arm stops following (the simulator's IK failed and it holds, or something blocks it) the
segment fails with ``NOT_FOLLOWING``; when it settles short of the goal it sends up to three
corrections before failing with ``STALLED``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness_bt.runtime.executor import ActionPart
from harness_bt.runtime.observation import Observation
from skills.geometry import qangle, qconj, qmul, qnormalize, qrotate_towards

__all__ = [
    "FINGER_OPEN_M",
    "CartesianMove",
    "Dwell",
    "Fingers",
    "JointMove",
    "Segment",
    "SegmentStep",
]

FINGER_OPEN_M = 0.04  # one Panda finger, fully open
STILL_M = 0.0005  # measured motion below this per step counts as standing still
SETTLE_STEPS = 8
MAX_CORRECTIONS = 3
NOT_FOLLOWING_STEPS = 5


@dataclass(frozen=True, slots=True)
class SegmentStep:
    """One step of a segment: the share of the action (None: drive nothing), the distance left
    (metres, or radians for joint moves), and done / failed (with a reason)."""

    action: ActionPart | None
    remaining: float
    done: bool = False
    failed: str = ""


class Segment:
    """Base: ``start`` once with the first observation, then ``step`` each control step.
    ``halt`` returns the share that stops the motion where it is (the cancel path)."""

    name = "segment"
    started = False

    def start(self, obs: Observation) -> None:
        self.started = True

    def step(self, obs: Observation) -> SegmentStep:
        raise NotImplementedError

    def halt(self, obs: Observation) -> ActionPart | None:
        return None

    def length(self) -> float:
        """Planned distance of the whole segment (for progress before it starts)."""
        return 0.0


class _Move(Segment):
    """What a move toward a goal keeps: the goal, its planned length, and the state of its
    arrival (arrived, lagging and settle counts, corrections made, the last measurement)."""

    def __init__(self, name: str, goal: np.ndarray, planned: float) -> None:
        self.name = name
        self.goal = np.asarray(goal, dtype=float)
        self._planned = planned
        self.arrived = False
        self.lagging = 0
        self.settle = 0
        self.corrections = 0
        self.last_m: np.ndarray | None = None

    def length(self) -> float:
        return self._planned

    def _settling(self, left: float, still: bool, where: Callable[[], str]
                  ) -> SegmentStep | None:
        """Past the commanded goal but not within tolerance: wait until the arm settles, then
        correct (None: send a correction now), at most ``MAX_CORRECTIONS`` times before the
        move fails STALLED (``where``: how far from its goal it settled)."""
        self.settle += 1
        if self.settle < SETTLE_STEPS or not still:
            return SegmentStep(None, left)
        if self.corrections >= MAX_CORRECTIONS:
            return SegmentStep(None, left, failed=f"STALLED: '{self.name}' settled {where()}")
        self.corrections += 1
        self.settle = 0
        return None


def _gripper(width: float | None) -> tuple[float, float] | None:
    if width is None:
        return None
    half = min(max(width / 2.0, 0.0), FINGER_OPEN_M)
    return (half, half)


class CartesianMove(_Move):
    """Move the TCP to ``goal`` (orientation ``goal_q``, or the one measured at the start) at
    ``step_m`` metres and ``step_rad`` radians per step; done within ``tolerance_m`` and
    ``tolerance_rad``. ``gripper`` (total finger width) is sent with every step when given.
    ``guard`` stops the move early, without failing, when the arm lags its command as if it
    met resistance (``contact`` is then True)."""

    def __init__(self, name: str, goal: np.ndarray, goal_q: np.ndarray | None, *,
                 step_m: float, step_rad: float = math.radians(3.0), tolerance_m: float = 0.01,
                 tolerance_rad: float = math.radians(3.0), gripper: float | None = None,
                 guard: bool = False, planned_from: np.ndarray | None = None) -> None:
        goal = np.asarray(goal, dtype=float)
        super().__init__(name, goal, 0.0 if planned_from is None else float(
            np.linalg.norm(goal - np.asarray(planned_from, dtype=float))))
        self.goal_q = None if goal_q is None else qnormalize(goal_q)
        self.step_m = float(step_m)
        self.step_rad = float(step_rad)
        self.tolerance_m = float(tolerance_m)
        self.tolerance_rad = float(tolerance_rad)
        self.fingers = _gripper(gripper)
        self.guard = guard
        self.contact = False
        self.p = np.zeros(3)
        self.q = np.array([1.0, 0.0, 0.0, 0.0])
        self.pressing = 0

    def start(self, obs: Observation) -> None:
        super().start(obs)
        self.p = np.asarray(obs.ee_pose.position, dtype=float).copy()
        self.q = qnormalize(obs.ee_pose.quaternion_wxyz)
        if self.goal_q is None:
            self.goal_q = self.q.copy()

    def _share(self, dp: np.ndarray, dq: np.ndarray) -> ActionPart:
        dq = qnormalize(dq)
        return ActionPart("ee_pose", (*(float(v) for v in dp), *(float(v) for v in dq)),
                          self.fingers)

    def step(self, obs: Observation) -> SegmentStep:
        assert self.goal_q is not None
        m = np.asarray(obs.ee_pose.position, dtype=float)
        mq = qnormalize(obs.ee_pose.quaternion_wxyz)
        left = float(np.linalg.norm(self.goal - m))
        still = self.last_m is not None and float(np.linalg.norm(m - self.last_m)) < STILL_M
        self.last_m = m.copy()
        lag = float(np.linalg.norm(self.p - m))
        if not self.arrived:
            self.lagging = self.lagging + 1 if lag > 2.0 * self.step_m + 0.02 else 0
            if self.lagging >= NOT_FOLLOWING_STEPS:
                return SegmentStep(None, left, failed=(
                    f"NOT_FOLLOWING: in '{self.name}' the arm stays {lag:.3f} m behind its "
                    f"command at {np.round(m, 3).tolist()} (inverse kinematics failed or "
                    "something blocks it)"))
            if self.guard:
                self.pressing = self.pressing + 1 if lag > 1.6 * self.step_m + 0.005 else 0
                if self.pressing >= 2:  # resistance: stop where the hand is
                    self.contact = True
                    dp = m - self.p
                    self.p = m.copy()
                    return SegmentStep(self._share(dp, np.array([1.0, 0, 0, 0])), 0.0, done=True)
            to_goal = self.goal - self.p
            dist = float(np.linalg.norm(to_goal))
            p_next = self.goal.copy() if dist <= self.step_m else \
                self.p + to_goal * (self.step_m / dist)
            q_next = qrotate_towards(self.q, self.goal_q, self.step_rad)
            dp = p_next - self.p
            dq = qmul(q_next, qconj(self.q))
            self.p, self.q = p_next, q_next
            self.arrived = float(np.linalg.norm(self.goal - self.p)) < 1e-9 and \
                qangle(self.q, self.goal_q) < 1e-6
            return SegmentStep(self._share(dp, dq), left)
        angle = qangle(mq, self.goal_q)
        if left <= self.tolerance_m and angle <= self.tolerance_rad:
            return SegmentStep(None, left, done=True)
        waiting = self._settling(left, still, lambda: (
            f"{left:.3f} m and {math.degrees(angle):.1f} deg from its goal "
            f"{np.round(self.goal, 3).tolist()} after {self.corrections} corrections "
            "(unreachable, or blocked)"))
        if waiting is not None:
            return waiting
        dp = self.goal - m
        n = float(np.linalg.norm(dp))
        if n > 0.03:
            dp *= 0.03 / n
        dq = qmul(self.goal_q, qconj(mq))
        self.p = m + dp
        self.q = self.goal_q.copy()
        return SegmentStep(self._share(dp, dq), left)

    def halt(self, obs: Observation) -> ActionPart | None:
        """Pull the commanded target back onto the measured pose: the arm stops there."""
        if not self.started or self.arrived:
            return None
        m = np.asarray(obs.ee_pose.position, dtype=float)
        dp = m - self.p
        self.p = m.copy()
        self.arrived = True
        return ActionPart("ee_pose", (*(float(v) for v in dp), 1.0, 0.0, 0.0, 0.0), None)


class JointMove(_Move):
    """Move the 7 arm joints to ``goal`` at ``step_rad`` per step (the largest joint sets the
    pace), with ``joint_position`` deltas; done within ``tolerance_rad`` on every joint."""

    def __init__(self, name: str, goal: np.ndarray, *, step_rad: float, tolerance_rad: float,
                 planned_from: np.ndarray | None = None) -> None:
        goal = np.asarray(goal, dtype=float)
        super().__init__(name, goal, 0.0 if planned_from is None else float(
            np.max(np.abs(goal - np.asarray(planned_from, dtype=float)[:7]))))
        self.step_rad = float(step_rad)
        self.tolerance_rad = float(tolerance_rad)
        self.j = np.zeros(7)

    def start(self, obs: Observation) -> None:
        super().start(obs)
        self.j = np.asarray(obs.joint_positions, dtype=float)[:7].copy()

    def step(self, obs: Observation) -> SegmentStep:
        m = np.asarray(obs.joint_positions, dtype=float)[:7]
        left = float(np.max(np.abs(self.goal - m)))
        still = self.last_m is not None and float(np.max(np.abs(m - self.last_m))) < 0.001
        self.last_m = m.copy()
        if not self.arrived:
            lag = float(np.max(np.abs(self.j - m)))
            self.lagging = self.lagging + 1 if lag > 3.0 * self.step_rad + 0.15 else 0
            if self.lagging >= NOT_FOLLOWING_STEPS:
                return SegmentStep(None, left, failed=(
                    f"NOT_FOLLOWING: in '{self.name}' the joints stay {lag:.3f} rad behind "
                    "their command (blocked?)"))
            to_goal = self.goal - self.j
            biggest = float(np.max(np.abs(to_goal)))
            delta = to_goal if biggest <= self.step_rad else to_goal * (self.step_rad / biggest)
            self.j = self.j + delta
            self.arrived = float(np.max(np.abs(self.goal - self.j))) < 1e-9
            return SegmentStep(ActionPart("joint_position", tuple(float(v) for v in delta)),
                               left)
        if left <= self.tolerance_rad:
            return SegmentStep(None, left, done=True)
        waiting = self._settling(left, still, lambda: (
            f"{left:.3f} rad from its goal after {self.corrections} corrections"))
        if waiting is not None:
            return waiting
        delta = self.goal - m
        self.j = m + delta
        return SegmentStep(ActionPart("joint_position", tuple(float(v) for v in delta)), left)

    def halt(self, obs: Observation) -> ActionPart | None:
        if not self.started or self.arrived:
            return None
        m = np.asarray(obs.joint_positions, dtype=float)[:7]
        delta = m - self.j
        self.j = m.copy()
        self.arrived = True
        return ActionPart("joint_position", tuple(float(v) for v in delta))


class Fingers(Segment):
    """Drive the fingers to a total ``width`` and wait until they get there or stop moving
    (closing on an object: they stop at its width). Fails when the observation has no finger
    joints. Gives up waiting after ``max_steps`` (done: the evaluator judges the result)."""

    def __init__(self, name: str, width: float, *, max_steps: int = 45,
                 planned_from: float | None = None) -> None:
        self.name = name
        self.width = float(width)
        self.max_steps = max_steps
        self._planned = 0.0 if planned_from is None else abs(self.width - planned_from)
        self.steps = 0
        self.still = 0
        self.last: float | None = None

    def length(self) -> float:
        return self._planned

    def step(self, obs: Observation) -> SegmentStep:
        width = obs.gripper_width
        if width is None:
            return SegmentStep(None, 0.0, failed="NO_FINGERS: the observation has no finger "
                               "joint positions (not a Panda hand?)")
        self.steps += 1
        left = abs(width - self.width)
        moved = None if self.last is None else abs(width - self.last)
        self.last = width
        self.still = self.still + 1 if moved is not None and moved < 0.0003 else 0
        done = (self.steps > 1 and left < 0.002) or (self.steps >= 4 and self.still >= 3) \
            or self.steps >= self.max_steps
        return SegmentStep(ActionPart("ee_pose", None, _gripper(self.width)), left, done=done)


class Dwell(Segment):
    """Drive nothing for ``steps`` steps (let things settle)."""

    def __init__(self, name: str, steps: int) -> None:
        self.name = name
        self.steps = max(0, int(steps))
        self.count = 0

    def step(self, obs: Observation) -> SegmentStep:
        self.count += 1
        return SegmentStep(None, 0.0, done=self.count >= self.steps)
