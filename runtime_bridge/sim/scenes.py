"""A scene document put to work in the simulator: a seeded layout, and after every step the
success condition evaluated on the simulator's own state (never on what a controller or the
harness reports).

:class:`SimScene` wraps a checked :class:`~harness_bt.scene.Scene`. Scenes without a success
condition are not judged: :meth:`SimScene.success` returns None and episodes end only by
timeout, with the verdict "not judged".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness_bt.authoring.scenes import load_scene
from harness_bt.errors import DefinitionError
from harness_bt.scene import Scene as SceneDoc
from harness_bt.scene.model import PlacementSpec
from runtime_bridge.sim.scene import SceneLayout, SimWorld, extents_of

__all__ = ["Progress", "SimScene", "load_sim_scenes"]

BIG_M = 0.06  # objects wider than this keep others off by their half width too


@dataclass
class Progress:
    """Per-episode bookkeeping between steps: how many consecutive steps the success condition
    has held, and the last value of each of its predicate calls (kept as evidence).
    ``hold_steps`` (when set) replaces the scene's own count (``SimConfig.success_hold_steps``)."""

    streak: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    hold_steps: int | None = None

    def held(self, own_hold_steps: int) -> bool:
        return self.streak >= (self.hold_steps or own_hold_steps)


class SimScene:
    """One scene as the simulator runs it (see the module docstring)."""

    def __init__(self, doc: SceneDoc) -> None:
        self.doc = doc
        self.name = doc.name
        self.objects = doc.spec.objects

    @property
    def instruction(self) -> str:
        return self.doc.instruction

    @property
    def target(self) -> str | None:
        return self.doc.target

    @property
    def judged(self) -> bool:
        return self.doc.judged

    # -- layout --------------------------------------------------------------------------
    def layout(self, rng: np.random.Generator) -> SceneLayout:
        """Non-overlapping (x, y, yaw) for every object of this episode, by rejection sampling
        from ``rng`` (deterministic for a given state); a layout with a goal of
        ``layout.goals`` too near another object is drawn again whole, so the layouts that
        keep their goals clear are the ones drawn without goals."""
        lay = self.doc.spec.layout
        names = list(self.objects)
        if lay.distractors is not None:
            d = lay.distractors
            k = int(rng.integers(d.count[0], d.count[1] + 1))
            chosen = set(rng.choice(len(d.objects), size=k, replace=False).tolist()) if k else set()
            left_out = {o for i, o in enumerate(d.objects) if i not in chosen}
            names = [n for n in names if n not in left_out]
        order = [n for n in lay.place if n in names] + [n for n in names if n not in lay.place]
        extra = {n: max(0.0, max(extents_of(self.objects[n])[:2]) / 2.0)
                 if max(extents_of(self.objects[n])[:2]) > BIG_M else 0.0 for n in names}
        for _ in range(100):
            poses: dict[str, tuple[float, float, float]] = {}
            for name in order:
                pose = self._sample(name, lay.place.get(name), poses, extra, rng)
                if pose is None:
                    break
                poses[name] = pose
            else:
                if self._goals_clear(poses, extra):
                    return SceneLayout(poses)
        goals = " with every layout goal clear" if self.doc.goals else ""
        raise DefinitionError("LAYOUT_FAILED", f"scene {self.name!r}: could not place "
                              f"{', '.join(order)} without overlap{goals}",
                              where=self.doc.source,
                              fix="widen the workspace or the regions, lower 'separation' (or "
                                  "a goal's 'clearance'), or lay out fewer objects")

    def _goals_clear(self, poses: Mapping[str, Sequence[float]],
                     extra: Mapping[str, float]) -> bool:
        """Whether every layout goal (``layout.goals``) keeps the other objects at least its
        clearance away (the goal of an object left out of the episode is not checked)."""
        for goal in self.doc.goals:
            if goal.object not in poses:
                continue
            gx, gy = goal.point(poses[goal.object][0], poses[goal.object][1])
            if any(np.hypot(gx - x, gy - y) < goal.clearance + extra[other]
                   for other, (x, y, _) in poses.items() if other != goal.object):
                return False
        return True

    def _sample(self, name: str, place: PlacementSpec | None, poses: Mapping[str, Sequence[float]],
                extra: Mapping[str, float], rng: np.random.Generator
                ) -> tuple[float, float, float] | None:
        lay = self.doc.spec.layout
        if place is not None and place.pose is not None:
            x, y, yaw = place.pose
            return (float(x), float(y), float(yaw))
        ws = lay.workspace
        for _ in range(200):
            x = _draw(place.x if place else None, ws.get("x", [0.40, 0.62]), rng)
            y = _draw(place.y if place else None, ws.get("y", [-0.22, 0.22]), rng)
            if place is not None and place.mirror_y and rng.random() < 0.5:
                y = -y
            if all(np.hypot(x - px, y - py) >= lay.separation + extra[name] + extra[other]
                   for other, (px, py, _) in poses.items()):
                yaw = _draw(place.yaw if place else None, ws.get("yaw", [-0.5, 0.5]), rng)
                return (x, y, yaw)
        return None

    # -- judging -------------------------------------------------------------------------
    def success(self, world: SimWorld, progress: Progress) -> float | None:
        """1.0 once the condition has held long enough, else 0.0; None: not judged."""
        condition = self.doc.condition
        if condition is None:
            return None
        ok, values = condition.evaluate(world)
        progress.streak = progress.streak + 1 if ok else 0
        progress.info = {"condition": condition.text, "holds": ok, "streak": progress.streak,
                         "calls": values}
        assert self.doc.spec.success is not None
        return 1.0 if progress.held(self.doc.spec.success.hold_steps) else 0.0

    def held_own(self, progress: Progress) -> bool:
        """Whether the condition has held the scene's own ``hold_steps`` (a longer hold set
        by the simulator only keeps a succeeding episode running: when the episode's steps run
        out first, the scene's own hold judges it)."""
        spec = self.doc.spec.success
        return spec is not None and progress.streak >= spec.hold_steps


def _draw(value: float | list[float] | None, default: list[float],
          rng: np.random.Generator) -> float:
    if isinstance(value, float):
        return value
    lo, hi = value if value is not None else default
    return float(rng.uniform(lo, hi))


def load_sim_scenes(refs: Sequence[str], params: Mapping[str, Any] | None = None
                    ) -> dict[str, SimScene]:
    """Each scene (by name or path) checked with ``params`` bound, keyed by its reference."""
    return {ref: SimScene(load_scene(ref, params=params)) for ref in refs}
