"""What perception looks for: each object's colour, nominal size and kind.

A catalogue is the perception's object model (known objects, as a robot cell would have), not
the simulator's state: it says "the red cube is red and 4 cm wide", never where it is.
:data:`BUILTIN_OBJECTS` describes the objects of the built-in simulator's tasks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from skills.perception.vision import ColourRange

__all__ = ["BUILTIN_OBJECTS", "ObjectSpec"]


@dataclass(frozen=True, slots=True)
class ObjectSpec:
    """One known object.

    ``kind``: ``movable`` (can be picked: tracked, may be held), ``container`` (a support with
    walls: objects inside are ``in`` and ``on`` it). ``size``: nominal extent (x, y, z) in
    metres. ``yaw_period``: the object looks the same after this turn (a cube: 90 degrees).
    ``max_z``: points above this height are not this object (None: no limit). ``full_view``:
    the fraction of its projected area a clear, unoccluded view shows (shading, thin walls).
    """

    object_id: str
    colour: ColourRange
    size: tuple[float, float, float]
    kind: Literal["movable", "container"] = "movable"
    label: str = ""
    yaw_period: float = math.pi / 2
    max_z: float | None = None
    full_view: float = 0.8
    min_pixels: int = 8


_CUBE = (0.04, 0.04, 0.04)

#: The objects of the built-in simulator (cubes, the LEGO brick, the tray).
BUILTIN_OBJECTS: tuple[ObjectSpec, ...] = (
    ObjectSpec("red_cube", ColourRange(340.0, 15.0, 0.6, 1.0, 0.25, 1.0), _CUBE,
               label="red cube"),
    ObjectSpec("green_cube", ColourRange(90.0, 160.0, 0.6, 1.0, 0.2, 1.0), _CUBE,
               label="green cube"),
    ObjectSpec("blue_cube", ColourRange(200.0, 260.0, 0.6, 1.0, 0.25, 1.0), _CUBE,
               label="blue cube"),
    ObjectSpec("lego", ColourRange(40.0, 75.0, 0.45, 1.0, 0.4, 1.0), (0.032, 0.032, 0.023),
               label="LEGO brick"),
    ObjectSpec("tray", ColourRange(0.0, 360.0, 0.0, 0.25, 0.0, 0.58), (0.21, 0.21, 0.043),
               kind="container", label="tray", max_z=0.06, full_view=0.6, min_pixels=40),
)
