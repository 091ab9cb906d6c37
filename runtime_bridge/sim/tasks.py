"""Simulator tasks: an instruction, a seeded layout, and a success metric from the simulator's
own state (never from what the controller reports). New tasks go in a :class:`Registry`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from harness_bt.errors import DefinitionError
from harness_bt.plugins import Registry
from runtime_bridge.sim.scene import CUBE_HALF, TRAY_FLOOR_Z, TRAY_HALF, Scene, SceneLayout

__all__ = ["PickAndPlace", "PickCube", "SimTask", "TaskProgress", "default_tasks"]

WORKSPACE_X = (0.40, 0.62)
WORKSPACE_Y = (-0.22, 0.22)
MIN_SEPARATION = 0.11


@dataclass
class TaskProgress:
    """Per-episode bookkeeping a task keeps between steps (consecutive-success count...).
    ``hold_steps`` (when set) replaces the task's own count of consecutive steps its success
    condition must hold (``SimConfig.success_hold_steps``)."""

    streak: int = 0
    info: dict[str, object] = field(default_factory=dict)
    hold_steps: int | None = None

    def held(self, task_hold_steps: int) -> bool:
        return self.streak >= (self.hold_steps or task_hold_steps)


class SimTask(Protocol):
    """A task: ``name``, ``instruction``, ``target`` (the object it is about), a layout from a
    seed, and ``success`` (0.0 .. 1.0) evaluated after every step."""

    name: str
    instruction: str
    target: str

    def layout(self, rng: np.random.Generator) -> SceneLayout: ...

    def success(self, scene: Scene, progress: TaskProgress) -> float: ...


def _place(rng: np.random.Generator, names: list[str], extra: dict[str, float],
           fixed: dict[str, tuple[float, float, float]] | None = None) -> SceneLayout:
    """Rejection-sample non-overlapping (x, y, yaw) in the workspace; ``extra`` widens the
    keep-out radius of big objects (the tray). Deterministic for a given ``rng`` state."""
    for _ in range(100):
        poses = dict(fixed or {})
        for name in names:
            for _ in range(200):
                x = float(rng.uniform(*WORKSPACE_X))
                y = float(rng.uniform(*WORKSPACE_Y))
                if all(np.hypot(x - px, y - py)
                       >= MIN_SEPARATION + extra.get(name, 0.0) + extra.get(other, 0.0)
                       for other, (px, py, _) in poses.items()):
                    poses[name] = (x, y, float(rng.uniform(-0.5, 0.5)))
                    break
            else:
                break
        else:
            return SceneLayout(poses)
    raise DefinitionError("LAYOUT_FAILED", f"could not place {names} without overlap",
                          fix="give the objects more room, or fewer objects")


class PickCube:
    """Pick up the red cube: success when it is lifted >= 5 cm and held by both fingers (for a
    few consecutive steps)."""

    name = "pick_cube"
    instruction = "pick up the red cube"
    target = "red_cube"
    lift = 0.05
    hold_steps = 3

    def layout(self, rng: np.random.Generator) -> SceneLayout:
        return _place(rng, ["red_cube", "green_cube", "blue_cube"], {})

    def success(self, scene: Scene, progress: TaskProgress) -> float:
        lifted = scene.position(self.target)[2] - scene.start[self.target][2]
        ok = lifted >= self.lift and scene.held(self.target)
        progress.streak = progress.streak + 1 if ok else 0
        progress.info["lifted_m"] = round(float(lifted), 4)
        return 1.0 if progress.held(self.hold_steps) else 0.0


class PickAndPlace:
    """Put the red cube on the tray: success when the cube rests inside the tray, released
    (no finger touches it) and nearly still, for a few consecutive steps."""

    name = "pick_and_place"
    instruction = "put the red cube on the tray"
    target = "red_cube"
    hold_steps = 5

    def layout(self, rng: np.random.Generator) -> SceneLayout:
        side = 1.0 if rng.random() < 0.5 else -1.0
        tray = (float(rng.uniform(0.45, 0.58)), side * float(rng.uniform(0.14, 0.2)), 0.0)
        return _place(rng, ["red_cube", "green_cube", "lego"], {"tray": TRAY_HALF},
                      fixed={"tray": tray})

    def success(self, scene: Scene, progress: TaskProgress) -> float:
        cube = scene.position(self.target)
        tray = scene.position("tray")
        inner = TRAY_HALF - 0.015 - CUBE_HALF * 0.5
        inside = abs(cube[0] - tray[0]) <= inner and abs(cube[1] - tray[1]) <= inner
        low = cube[2] <= TRAY_FLOOR_Z + CUBE_HALF * 3
        free = not any(scene.finger_contacts(self.target))
        velocity = scene.client.getBaseVelocity(scene.objects[self.target])[0]
        still = float(np.linalg.norm(velocity)) < 0.05
        ok = inside and low and free and still
        progress.streak = progress.streak + 1 if ok else 0
        progress.info["in_tray"] = bool(inside and low)
        return 1.0 if progress.held(self.hold_steps) else 0.0


def default_tasks() -> Registry[SimTask]:
    """A fresh registry holding the built-in tasks."""
    registry: Registry[SimTask] = Registry("sim task")
    registry.register(PickCube.name, PickCube(), origin="runtime_bridge.sim.tasks")
    registry.register(PickAndPlace.name, PickAndPlace(), origin="runtime_bridge.sim.tasks")
    return registry
