"""Scenes as installed (the ``harness_bt.scenes`` entry points), described as data: objects
(shape, colour, size, mass, label, group), parameters, a summary of the seeded layout, cameras
and the success condition (or *not judged*). A scene that fails to load is listed with its
problems instead of taking the list down."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_bt.authoring.scenes import check_scene
from harness_bt.catalogue.entries import Source, source_of
from harness_bt.errors import DefinitionError
from harness_bt.plugins import Registry
from harness_bt.scene import find_scene, scene_registry
from harness_bt.scene.model import ObjectSpec, SceneSpec

__all__ = ["SceneEntry", "scene_entries", "size_text"]


def size_text(obj: ObjectSpec) -> str:
    """``4 cm cube`` / ``21 x 21 x 4.3 cm`` (centimetres read best on a table)."""
    if isinstance(obj.size, list):
        return " x ".join(f"{v * 100:g}" for v in obj.size) + " cm"
    return f"{obj.size * 100:g} cm"


def _colour(obj: ObjectSpec) -> str:
    return obj.colour if isinstance(obj.colour, str) else \
        "rgb(" + ", ".join(f"{v:g}" for v in obj.colour) + ")"


def _span(value: Any) -> str:
    if value is None:
        return "workspace"
    if isinstance(value, list):
        return f"{value[0]:g}..{value[1]:g}"
    return f"{value:g}"


def _layout(spec: SceneSpec) -> list[str]:
    layout = spec.layout
    lines = []
    for oid, place in layout.place.items():
        if place.pose is not None:
            where = "at [" + ", ".join(f"{v:g}" for v in place.pose) + "]"
        else:
            where = f"x {_span(place.x)}, y {_span(place.y)}, yaw {_span(place.yaw)}"
            if place.mirror_y:
                where += ", either side (y mirrored)"
        lines.append(f"{oid}: {where}")
    placed = set(layout.place)
    free = [oid for oid in spec.objects if oid not in placed]
    if free:
        ws = layout.workspace
        lines.append(f"{', '.join(free)}: sampled in x {_span(ws.get('x'))}, y "
                     f"{_span(ws.get('y'))}, yaw {_span(ws.get('yaw'))}, at least "
                     f"{layout.separation:g} m apart")
    if layout.distractors is not None:
        d = layout.distractors
        lines.append(f"distractors: {d.count[0]} to {d.count[1]} of {', '.join(d.objects)}")
    for goal in layout.goals:
        offset = goal.offset if isinstance(goal.offset, str) else \
            "[" + ", ".join(f"{v:g}" for v in goal.offset) + "]"
        lines.append(f"goal: {goal.object} moved by {offset} kept {goal.clearance:g} m clear "
                     "of the other objects")
    return lines


@dataclass(frozen=True)
class SceneEntry:
    name: str
    source: Source
    file: str
    spec: SceneSpec | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        return self.spec is not None and self.spec.success is not None

    def objects(self) -> list[dict[str, Any]]:
        if self.spec is None:
            return []
        return [{"id": oid, "shape": o.shape, "colour": _colour(o), "size": o.size,
                 "size_text": size_text(o), "mass_kg": o.mass, "label": o.label or None,
                 "group": o.group} for oid, o in self.spec.objects.items()]

    def layout(self) -> list[str]:
        return [] if self.spec is None else _layout(self.spec)

    def success_text(self) -> str:
        if self.spec is None:
            return "(does not load)"
        if self.spec.success is None:
            return "none: episodes are not judged"
        return f"{self.spec.success.when} (held {self.spec.success.hold_steps} steps)"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "source": self.source.to_dict(),
                               "file": self.file}
        if self.spec is None:
            out["problems"] = self.problems
            return out
        spec = self.spec
        success = spec.success
        out.update({
            "description": spec.description, "instruction": spec.instruction,
            "params": {k: p.model_dump() for k, p in spec.params.items()},
            "objects": self.objects(), "layout": self.layout(),
            "workspace": dict(spec.layout.workspace), "cameras": list(spec.cameras),
            "max_steps": spec.max_steps, "judged": success is not None,
            "success": None if success is None else success.model_dump(),
        })
        return out


def scene_entries(registry: Registry[Any] | None = None) -> list[SceneEntry]:
    """Every registered scene, loaded and checked (default: the installed ones)."""
    registry = registry if registry is not None else scene_registry(entry_points=True)
    out = []
    for name in registry.names():
        source = source_of(registry, name)
        try:
            path = find_scene(name, registry=registry)
        except (DefinitionError, OSError, TypeError) as exc:
            out.append(SceneEntry(name, source, "", problems=[str(exc)]))
            continue
        scene, report = check_scene(path)
        if scene is None:
            out.append(SceneEntry(name, source, str(path),
                                  problems=[str(p) for p in report.errors]))
        else:
            out.append(SceneEntry(name, source, _shown(path), scene.spec))
    return out


def _shown(path: Path) -> str:
    """The file as a path relative to the working directory when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
