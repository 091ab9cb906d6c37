"""An oracle pick / place controller for tests and benchmarks (not a skill).

It reads the target's position from the simulator's ground truth (which the harness never sees)
and emits GenManip ``ee_pose`` action messages: move above the object, descend, close, lift,
and (when told where) carry it over the place to let go, lower and open; one object after
another. It proves the simulator's grasping
works, independent of perception; the skills of the harness do the same from observations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ScriptedPicker"]

OPEN = [0.04, 0.04]
CLOSED = [0.0, 0.0]
IDENTITY = [1.0, 0.0, 0.0, 0.0]


def _up(dz: float) -> np.ndarray:
    return np.array([0.0, 0.0, dz])


@dataclass
class ScriptedPicker:
    """Waypoint controller over the commanded TCP position (tracked from its own deltas).

    Call :meth:`start` with the first observation's ``ee_pose_state`` and the ground truth,
    then :meth:`action` once per step. ``speed`` is metres per step (30 steps per second).
    """

    place: bool = False
    speed: float = 0.015
    approach_height: float = 0.12
    lift_height: float = 0.15
    _plan: list[tuple[np.ndarray, list[float], int]] = field(default_factory=list)
    _commanded: np.ndarray = field(default_factory=lambda: np.zeros(3))
    phase: int = 0
    _wait: int = 0

    def start(self, ee_pose_state: Any, truth: Mapping[str, Any],
              jobs: Sequence[tuple[str, Sequence[float | None]]] | None = None) -> None:
        """Plan from the ground truth. ``jobs``: objects to move in turn, each with the TCP
        position to let go at (None: pick the scene's target and, with ``place``, put it in
        the tray)."""
        self._commanded = np.asarray(ee_pose_state[0], dtype=np.float64).copy()
        if jobs is None:
            target = truth.get("target") or next(iter(truth["objects"]))
            jobs = [(target, [])]
            if self.place:
                tray = truth["objects"]["tray"]["position"]
                jobs = [(target, [tray[0], tray[1], None])]
        plan: list[tuple[np.ndarray, list[float], int]] = []
        for obj, release in jobs:
            grasp = np.asarray(truth["objects"][obj]["position"], dtype=np.float64) + _up(0.002)
            plan += [
                (grasp + _up(self.approach_height), OPEN, 0),
                (grasp, OPEN, 3),
                (grasp, CLOSED, 10),
                (grasp + _up(self.lift_height), CLOSED, 0),
            ]
            if not release:
                continue
            x, y = float(release[0] or 0.0), float(release[1] or 0.0)
            z = grasp[2] + 0.03 if release[2] is None else float(release[2])
            over = np.array([x, y, grasp[2] + self.lift_height])
            down = np.array([x, y, z])
            plan += [(over, CLOSED, 3), (down, CLOSED, 3), (down, OPEN, 10), (over, OPEN, 0)]
        self._plan = plan
        self.phase = 0
        self._wait = 0

    @property
    def finished(self) -> bool:
        return self.phase >= len(self._plan)

    def action(self) -> dict[str, Any]:
        """The next ``ee_pose`` action message."""
        if self.finished:
            return {"control_type": "ee_pose", "action": ([0.0] * 3, IDENTITY, self._plan[-1][1])}
        target, grip, dwell = self._plan[self.phase]
        delta = target - self._commanded
        dist = float(np.linalg.norm(delta))
        if dist > self.speed:
            delta = delta / dist * self.speed
        else:
            self._wait += 1
            if self._wait > dwell:
                self.phase += 1
                self._wait = 0
        self._commanded = self._commanded + delta
        return {"control_type": "ee_pose", "action": (delta.tolist(), IDENTITY, list(grip))}
