"""A scene as a simulator runs it: :class:`Scene` (a checked scene document with its parameters
bound and its success condition compiled), the registry of named scenes and :func:`find_scene`.
Reading and checking scene documents is :mod:`harness_bt.authoring.scenes`'s."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.plugins import Group, Registry, did_you_mean
from harness_bt.problems import Report
from harness_bt.scene.condition import Condition
from harness_bt.scene.model import SceneSpec

__all__ = ["TABLE_XY", "LayoutGoal", "Scene", "SceneError", "find_scene", "scene_registry"]

#: The table top (x, y ranges, metres) objects may be laid on.
TABLE_XY = ((-0.25, 0.95), (-0.7, 0.7))


class SceneError(DefinitionError):
    """A scene document was refused; ``report`` holds every problem."""

    def __init__(self, what: str, report: Report) -> None:
        self.report = report
        errors = report.errors
        super().__init__(
            "INVALID_SCENE", f"{what}: {len(errors)} error(s):\n"
            + "\n".join(f"  {p}" for p in errors),
            fix="fix every problem listed (each names its place and a fix), then load again",
            details={"problems": [str(p) for p in errors]})


@dataclass(frozen=True)
class LayoutGoal:
    """A layout goal (:class:`~harness_bt.scene.model.GoalSpec`) with its parameters bound."""

    object: str
    offset: tuple[float, float]
    clearance: float

    def point(self, x: float, y: float) -> tuple[float, float]:
        """The goal for an object starting at (``x``, ``y``)."""
        return x + self.offset[0], y + self.offset[1]


@dataclass
class Scene:
    """A checked scene with its parameters bound (see the module docstring)."""

    spec: SceneSpec
    source: str
    params: dict[str, Any] = field(default_factory=dict)
    condition: Condition | None = None
    goals: list[LayoutGoal] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def judged(self) -> bool:
        """Whether the simulator judges episodes of this scene (it has a success condition)."""
        return self.condition is not None

    @property
    def instruction(self) -> str:
        labels = {k: (self.spec.objects[v].label or v.replace("_", " "))
                  if isinstance(v, str) and v in self.spec.objects else v
                  for k, v in self.params.items()}
        try:
            return self.spec.instruction.format(**labels)
        except (KeyError, IndexError, ValueError):
            return self.spec.instruction

    @property
    def target(self) -> str | None:
        """The object the scene is about: its ``target`` parameter, else its first object
        parameter (``top`` of a stack), else None."""
        names = ["target", *(n for n, p in self.spec.params.items() if p.type == "object")]
        return next((self.params[n] for n in names if isinstance(self.params.get(n), str)),
                    None)

    def groups(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for oid, obj in self.spec.objects.items():
            if obj.group:
                out.setdefault(obj.group, []).append(oid)
        return out


def scene_registry(*, entry_points: bool = False) -> Registry[Any]:
    """Scenes by name; with ``entry_points=True`` filled from the ``harness_bt.scenes`` entry
    points (paths, or functions returning one)."""
    registry: Registry[Any] = Registry("scene")
    if entry_points:
        registry.load(Group.SCENES)
    return registry


def find_scene(ref: str | os.PathLike[str], *, registry: Registry[Any] | None = None) -> Path:
    """The file of a scene given by name or path (a name is looked up first)."""
    text = os.fspath(ref)
    registry = registry if registry is not None else scene_registry(entry_points=True)
    if text in registry:
        value = registry.get(text)
        return Path(value() if callable(value) else value)
    path = Path(text)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or os.sep in text or "/" in text:
        if not path.is_file():
            raise DefinitionError("SCENE_NOT_FOUND", f"no scene file at {text!r}", where=text,
                                  fix="give the path of a scene file, or a scene name: "
                                      f"{', '.join(registry.names())}")
        return path
    known = registry.names()
    raise DefinitionError("UNKNOWN_SCENE", f"unknown scene {text!r}; known: "
                          f"{', '.join(known)}{did_you_mean(text, known)}", where=text,
                          fix="name a registered scene (harness scenes lists them) "
                              "or the path of a scene file")
