"""Predicates of scene success conditions, evaluated on a simulator's own state.

A :class:`Predicate` is a name, typed arguments (``object``, ``number``, ``vector``, with
defaults) and a function of a :class:`SceneState` (the simulator's ground truth: poses,
velocities, contacts) and the argument values. Predicates are plug-ins: the
``harness_bt.predicates`` entry-point group (the built-ins below are registered that way, in
``setup.cfg``); :func:`predicate_registry` loads them.

None of them reads what a controller or the harness reports: a success condition judges the
world, not the account of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from harness_bt.plugins import Group, Registry

__all__ = [
    "AT",
    "HELD",
    "INSIDE",
    "LIFTED",
    "MOVED_BY",
    "ON",
    "RELEASED",
    "STILL",
    "TOUCHING",
    "Arg",
    "Cavity",
    "Predicate",
    "SceneState",
    "predicate_registry",
]

ArgKind = Literal["object", "number", "vector"]


@dataclass(frozen=True, slots=True)
class Cavity:
    """The inside of a container, in world coordinates: its centre, yaw, inner half extents
    (a round container: ``half_x == half_y`` and ``round``), the floor's top and the rim."""

    centre_xy: tuple[float, float]
    yaw: float
    half_x: float
    half_y: float
    floor_z: float
    rim_z: float
    round: bool = False


class SceneState(Protocol):
    """What predicates may ask a simulator about its objects (ground truth)."""

    def position(self, name: str) -> np.ndarray: ...

    def start_position(self, name: str) -> np.ndarray: ...

    def velocity(self, name: str) -> np.ndarray: ...

    def yaw(self, name: str) -> float: ...

    def extents(self, name: str) -> tuple[float, float, float]: ...

    def finger_contacts(self, name: str) -> tuple[bool, bool]: ...

    def touching(self, a: str, b: str) -> bool: ...

    def on_table(self, name: str) -> bool: ...

    def cavity(self, name: str) -> Cavity | None: ...


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument: its name, kind, and default (None: required)."""

    name: str
    kind: ArgKind
    default: Any = None


@dataclass(frozen=True, slots=True)
class Predicate:
    """A named, typed test of a :class:`SceneState`."""

    name: str
    args: tuple[Arg, ...]
    test: Callable[..., bool]
    description: str = ""

    @property
    def min_args(self) -> int:
        return sum(a.default is None for a in self.args)

    def signature(self) -> str:
        parts = [a.name if a.default is None else f"{a.name}={a.default}" for a in self.args]
        return f"{self.name}({', '.join(parts)})"

    def __call__(self, state: SceneState, *values: Any) -> bool:
        filled = list(values) + [a.default for a in self.args[len(values):]]
        return bool(self.test(state, *filled))


def predicate_registry(*, entry_points: bool = False) -> Registry[Predicate]:
    """Predicates by name;
    with ``entry_points=True`` filled from the ``harness_bt.predicates`` entry points."""
    registry: Registry[Predicate] = Registry("predicate")
    if entry_points:
        registry.load(Group.PREDICATES)
    return registry


# -- the built-ins ---------------------------------------------------------------------------

def _bottom(state: SceneState, name: str) -> float:
    return float(state.position(name)[2]) - state.extents(name)[2] / 2.0


def _in_footprint(point: Any, centre: Any, yaw: float, half_x: float,
                  half_y: float, *, round_: bool = False) -> bool:
    dx, dy = point[0] - centre[0], point[1] - centre[1]
    if round_:
        return math.hypot(dx, dy) <= half_x
    c, s = math.cos(yaw), math.sin(yaw)
    return abs(dx * c + dy * s) <= half_x and abs(-dx * s + dy * c) <= half_y


def _lifted(state: SceneState, obj: str, height: float) -> bool:
    return float(state.position(obj)[2] - state.start_position(obj)[2]) >= height


def _held(state: SceneState, obj: str) -> bool:
    left, right = state.finger_contacts(obj)
    return left and right and not state.on_table(obj)


def _released(state: SceneState, obj: str) -> bool:
    return not any(state.finger_contacts(obj))


def _still(state: SceneState, obj: str, speed: float) -> bool:
    return float(np.linalg.norm(state.velocity(obj))) < speed


def _on(state: SceneState, obj: str, support: str, tol: float) -> bool:
    top = float(state.position(support)[2]) + state.extents(support)[2] / 2.0
    sx, sy, _ = state.extents(support)
    return (abs(_bottom(state, obj) - top) <= tol and state.touching(obj, support)
            and _in_footprint(state.position(obj), state.position(support), state.yaw(support),
                              sx / 2.0, sy / 2.0))


def _inside(state: SceneState, obj: str, container: str) -> bool:
    cavity = state.cavity(container)
    if cavity is None:
        return False
    ox, oy, oz = state.extents(obj)
    margin = min(ox, oy) / 4.0  # the object's centre well inside the walls
    bottom = _bottom(state, obj)
    return (_in_footprint(state.position(obj), cavity.centre_xy, cavity.yaw,
                          cavity.half_x - margin, cavity.half_y - margin, round_=cavity.round)
            and cavity.floor_z - 0.02 <= bottom <= cavity.floor_z + oz / 2.0)


def _at(state: SceneState, obj: str, pose: Sequence[float], tol: float) -> bool:
    p = state.position(obj)
    n = min(len(pose), 3)
    return float(np.linalg.norm(np.asarray(p[:n]) - np.asarray(pose[:n], dtype=float))) <= tol


def _moved_by(state: SceneState, obj: str, offset: Sequence[float], tol: float) -> bool:
    goal = state.start_position(obj)[: min(len(offset), 3)] + np.asarray(offset[:3], dtype=float)
    return _at(state, obj, goal.tolist(), tol)


def _touching(state: SceneState, a: str, b: str) -> bool:
    return state.touching(a, b)


LIFTED = Predicate("lifted", (Arg("obj", "object"), Arg("height", "number", 0.05)), _lifted,
                   "the object's centre is at least height metres above where it started")
HELD = Predicate("held", (Arg("obj", "object"),), _held,
                 "both fingers touch the object and it does not touch the table")
RELEASED = Predicate("released", (Arg("obj", "object"),), _released,
                     "no finger touches the object")
STILL = Predicate("still", (Arg("obj", "object"), Arg("speed", "number", 0.05)), _still,
                  "the object moves slower than speed (m/s)")
ON = Predicate("on", (Arg("obj", "object"), Arg("support", "object"), Arg("tol", "number", 0.015)),
               _on, "the object rests on the support's top face (touching it, its centre over "
               "the support, its bottom within tol of the support's top)")
INSIDE = Predicate("inside", (Arg("obj", "object"), Arg("container", "object")), _inside,
                   "the object rests in the container (tray or bowl): within its walls, near "
                   "its floor")
AT = Predicate("at", (Arg("obj", "object"), Arg("pose", "vector"), Arg("tol", "number", 0.02)),
               _at, "the object's centre is within tol of pose ([x, y] or [x, y, z])")
MOVED_BY = Predicate("moved_by", (Arg("obj", "object"), Arg("offset", "vector"),
                                  Arg("tol", "number", 0.02)), _moved_by,
                     "the object is within tol of where it started plus offset")
TOUCHING = Predicate("touching", (Arg("a", "object"), Arg("b", "object")), _touching,
                     "the two objects are in contact")
