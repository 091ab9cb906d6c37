"""The scene document as pydantic models: :class:`SceneSpec` and its parts.

A scene is what a simulator builds and judges: its objects (shape, size, colour, mass), where
they start (fixed poses, sampled regions, optional distractors, all from the episode's seed),
its cameras, and the success condition evaluated on the simulator's own state (see
:mod:`harness_bt.scene.condition`). It says nothing about how a task goes about it.

Units: metres, kilograms, radians. Poses on the table are ``[x, y, yaw]``; the robot base
stands at the origin facing +x, the table top is z = 0.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from harness_bt.param_spec import ParamSpec

__all__ = [
    "COLOURS",
    "SHAPES",
    "DistractorSpec",
    "GoalSpec",
    "LayoutSpec",
    "ObjectSpec",
    "ParamSpec",
    "PlacementSpec",
    "SceneSpec",
    "SuccessSpec",
]

#: Named colours (RGB, 0..1) a scene object may be given instead of numbers.
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.1, 0.1),
    "green": (0.1, 0.7, 0.2),
    "blue": (0.15, 0.25, 0.9),
    "yellow": (0.9, 0.8, 0.1),
    "orange": (0.95, 0.45, 0.05),
    "purple": (0.55, 0.15, 0.75),
    "cyan": (0.1, 0.75, 0.8),
    "grey": (0.45, 0.45, 0.47),
    "white": (0.92, 0.92, 0.92),
    "black": (0.08, 0.08, 0.08),
}

#: The shapes the built-in simulator builds. ``cube``/``box``: a solid box; ``cylinder``: an
#: upright cylinder (size x = y = diameter); ``tray``: a flat container with low walls;
#: ``bowl``: a round container; ``urdf``: a model file from ``pybullet_data`` (``file``).
SHAPES = ("cube", "box", "cylinder", "tray", "bowl", "urdf")
CONTAINERS = ("tray", "bowl")

_ID = r"^[a-z][a-z0-9_]*$"


def _finite_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


Number = Annotated[float, BeforeValidator(_finite_float)]
Range = Annotated[list[Number], Field(min_length=2, max_length=2)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class ObjectSpec(_Spec):
    """One object. ``size``: edge (a number, for a cube) or ``[x, y, z]`` extents (for a
    cylinder or a bowl x = y = the diameter). ``mass`` 0 (the default of containers) fixes it
    in place."""

    shape: Literal["cube", "box", "cylinder", "tray", "bowl", "urdf"]
    size: Number | Annotated[list[Number], Field(min_length=3, max_length=3)]
    colour: str | Annotated[list[Number], Field(min_length=3, max_length=4)] = "grey"
    mass: Number | None = Field(None, ge=0.0, description="kg; 0 fixes the object in place")
    friction: Number = Field(1.5, gt=0.0)
    label: str = ""
    file: str | None = Field(None, description="urdf: the model file (pybullet_data)")
    scale: Number = Field(1.0, gt=0.0, description="urdf: the model's scale")
    group: str | None = Field(None, pattern=_ID, description="a group name (success "
                              "conditions may name the group to mean each of its objects)")


class PlacementSpec(_Spec):
    """Where one object starts: a fixed ``pose`` ``[x, y, yaw]``, or sampled in ``x`` / ``y``
    / ``yaw`` ranges (a number is fixed; missing ranges are the workspace's).
    ``mirror_y``: the sampled y is negated with probability one half (either side)."""

    pose: Annotated[list[Number], Field(min_length=3, max_length=3)] | None = None
    x: Number | Range | None = None
    y: Number | Range | None = None
    yaw: Number | Range | None = None
    mirror_y: bool = False


class DistractorSpec(_Spec):
    """Place only some of ``objects``: between ``count[0]`` and ``count[1]`` of them, chosen
    from the seed; the others are left out of the episode."""

    objects: list[str] = Field(min_length=1)
    count: Annotated[list[int], Field(min_length=2, max_length=2)]


class GoalSpec(_Spec):
    """Where the success condition sends an object: ``object`` (an object, or the name of an
    object parameter) to where it starts plus ``offset`` (``[dx, dy]`` metres in the world
    frame, or the name of a vector parameter). Layouts keep every other object at least
    ``clearance`` from that point (centre to centre, plus the half-size of big objects), so
    that no episode asks for an object to be put where another one stands."""

    object: str = Field(min_length=1)
    offset: str | Annotated[list[Number], Field(min_length=2, max_length=2)]
    clearance: Number = Field(0.07, gt=0.0)


def _workspace() -> dict[Literal["x", "y", "yaw"], list[float]]:
    return {"x": [0.40, 0.62], "y": [-0.22, 0.22], "yaw": [-0.5, 0.5]}


class LayoutSpec(_Spec):
    """The seeded layout: objects not under ``place`` are sampled in the ``workspace``,
    at least ``separation`` apart (centre to centre, plus the half-size of big objects);
    a layout that leaves one of the ``goals`` short of its clearance is drawn again."""

    workspace: dict[Literal["x", "y", "yaw"], Range] = Field(default_factory=_workspace)
    separation: Number = Field(0.11, ge=0.0)
    place: dict[str, PlacementSpec] = Field(default_factory=dict)
    distractors: DistractorSpec | None = None
    goals: list[GoalSpec] = Field(default_factory=list)


class SuccessSpec(_Spec):
    """The success condition: an expression over predicates (``when``), which must hold for
    ``hold_steps`` consecutive simulator steps."""

    when: str = Field(min_length=1)
    hold_steps: int = Field(3, ge=1)
    description: str = ""


class SceneSpec(_Spec):
    """A scene document."""

    name: str = Field(pattern=_ID, description="the scene's name")
    description: str = ""
    instruction: str = Field("", description="what the scene asks, in words ({param} allowed)")
    params: dict[str, ParamSpec] = Field(
        default_factory=dict, description="parameters (the same declaration as a task's): "
        "name -> declaration; a task's parameter of the same name sets it")
    objects: dict[str, ObjectSpec] = Field(min_length=1)
    layout: LayoutSpec = Field(default_factory=lambda: LayoutSpec.model_validate({}))
    cameras: list[str] = Field(default_factory=list, description="camera specs "
                               "(NAME[:WxH][:eye=x,y,z]...); empty: the runner's default")
    max_steps: int | None = Field(None, ge=1, description="simulator steps an episode of this "
                                  "scene may take (default: the simulator's, 600 = 20 s)")
    success: SuccessSpec | None = Field(None, description="none: the simulator does not judge "
                                        "episodes of this scene (verdict not judged)")
