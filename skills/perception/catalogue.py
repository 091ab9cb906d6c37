"""What perception looks for: each object's colour, nominal size and kind.

A catalogue is the perception's object model (known objects, as a robot cell would have), not
the simulator's state: it says "the red cube is red and 4 cm wide", never where it is.
:data:`BUILTIN_OBJECTS` describes the objects of the built-in simulator's tasks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from skills.perception.vision import ColourRange

__all__ = ["BUILTIN_OBJECTS", "KnownObject", "catalogue_for", "colour_range"]


@dataclass(frozen=True, slots=True)
class KnownObject:
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
BUILTIN_OBJECTS: tuple[KnownObject, ...] = (
    KnownObject("red_cube", ColourRange(340.0, 15.0, 0.6, 1.0, 0.25, 1.0), _CUBE,
               label="red cube"),
    KnownObject("green_cube", ColourRange(90.0, 160.0, 0.6, 1.0, 0.2, 1.0), _CUBE,
               label="green cube"),
    KnownObject("blue_cube", ColourRange(200.0, 260.0, 0.6, 1.0, 0.25, 1.0), _CUBE,
               label="blue cube"),
    KnownObject("lego", ColourRange(40.0, 75.0, 0.45, 1.0, 0.4, 1.0), (0.032, 0.032, 0.023),
               label="LEGO brick"),
    KnownObject("tray", ColourRange(0.0, 360.0, 0.0, 0.25, 0.0, 0.58), (0.21, 0.21, 0.043),
               kind="container", label="tray", max_z=0.06, full_view=0.6, min_pixels=40),
)


#: Colour ranges that hold under the simulator's lighting and shading, for the named colours
#: of scene documents (:data:`harness_bt.scene.COLOURS`).
NAMED_RANGES: dict[str, ColourRange] = {
    "red": ColourRange(340.0, 15.0, 0.6, 1.0, 0.25, 1.0),
    "orange": ColourRange(17.0, 38.0, 0.6, 1.0, 0.3, 1.0),
    "yellow": ColourRange(40.0, 75.0, 0.45, 1.0, 0.4, 1.0),
    "green": ColourRange(90.0, 160.0, 0.6, 1.0, 0.2, 1.0),
    "cyan": ColourRange(170.0, 195.0, 0.5, 1.0, 0.25, 1.0),
    "blue": ColourRange(200.0, 260.0, 0.6, 1.0, 0.25, 1.0),
    "purple": ColourRange(265.0, 320.0, 0.45, 1.0, 0.2, 1.0),
    "grey": ColourRange(0.0, 360.0, 0.0, 0.25, 0.0, 0.58),
    "white": ColourRange(0.0, 360.0, 0.0, 0.15, 0.62, 1.0),
    "black": ColourRange(0.0, 360.0, 0.0, 1.0, 0.0, 0.18),
}


def colour_range(colour: str | list[float] | tuple[float, ...]) -> ColourRange:
    """The HSV range that finds an object of this colour: a named colour's tuned range, or,
    for ``[r, g, b]``, its hue +-20 degrees (saturated colours) or its brightness (greys)."""
    if isinstance(colour, str):
        return NAMED_RANGES[colour]
    r, g, b = (float(c) for c in colour[:3])
    mx, mn = max(r, g, b), min(r, g, b)
    sat = 0.0 if mx <= 0 else (mx - mn) / mx
    if sat < 0.3:
        return ColourRange(0.0, 360.0, 0.0, 0.25, max(0.0, mx - 0.4), min(1.0, mx + 0.1))
    if mx == r:
        hue = (60.0 * (g - b) / (mx - mn)) % 360.0
    elif mx == g:
        hue = 60.0 * (b - r) / (mx - mn) + 120.0
    else:
        hue = 60.0 * (r - g) / (mx - mn) + 240.0
    return ColourRange((hue - 20.0) % 360.0, (hue + 20.0) % 360.0, 0.6 * sat, 1.0,
                       0.25 * mx, 1.0)


def catalogue_for(objects: Mapping[str, Any]) -> tuple[KnownObject, ...]:
    """A perception catalogue for the objects of a scene document (object id -> its
    :class:`harness_bt.scene.KnownObject`): each object's colour, nominal size and kind (trays
    and bowls are containers), never where it is. Objects of one colour are told apart blob by
    blob and tracked (:mod:`skills.perception.instances`)."""
    out: list[KnownObject] = []
    for oid, obj in objects.items():
        size = (obj.size,) * 3 if isinstance(obj.size, float) else tuple(obj.size)
        container = obj.shape in ("tray", "bowl")
        round_ = obj.shape in ("cylinder", "bowl")
        out.append(KnownObject(
            oid, colour_range(obj.colour), (float(size[0]), float(size[1]), float(size[2])),
            kind="container" if container else "movable",
            label=obj.label or oid.replace("_", " "),
            yaw_period=math.pi / 2 if (round_ or abs(size[0] - size[1]) < 1e-9) else math.pi,
            max_z=float(size[2]) + 0.017 if container else None,
            full_view=0.6 if container else 0.8, min_pixels=40 if container else 8))
    return tuple(out)
