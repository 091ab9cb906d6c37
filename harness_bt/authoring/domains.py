"""What a ``for_each`` loops over when the document names no list: the task's scene, read when
the document is.

``over: {group: NAME}`` is the scene's group (the objects declaring ``group: NAME``), known
when the document is read; ``over: "<expression>"`` is evaluated when the loop starts, and may
yield any object of the scene: a body is made for each (those ``per_item`` gives values for,
when it is given), and what the scene declares of each (shape, colour, group) is shown on its
world view (:class:`~harness_bt.nodes.loops.Choice`). :class:`SceneFacts` is what the expansion
(:class:`~harness_bt.authoring.expand.Expander`) needs of a scene; :func:`scene_facts` reads
them for a task document.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_bt.authoring.scenes import check_scene
from harness_bt.errors import DefinitionError
from harness_bt.scene import find_scene

__all__ = ["SceneFacts", "facts_loader", "scene_facts"]


@dataclass(frozen=True)
class SceneFacts:
    """A scene's name, its objects (id -> what it declares: shape, colour, group) in file
    order, and its groups (name -> member ids, in file order). ``error``: why the task's scene
    could not be read (the facts are then empty)."""

    name: str
    objects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    groups: Mapping[str, list[str]] = field(default_factory=dict)
    error: str = ""


def _is_path(ref: str) -> bool:
    return "/" in ref or ref.lower().endswith((".yaml", ".yml", ".json"))


def scene_facts(ref: str, base: Path | None, params: Mapping[str, Any]) -> SceneFacts:
    """The facts of the scene ``ref`` (a name, or a path relative to ``base``: the task file's
    folder), its parameters bound from the task's ``params``."""
    if base is not None and _is_path(ref):
        ref = str((base / ref).resolve())
    try:
        scene, report = check_scene(find_scene(ref), params=params)
    except DefinitionError as exc:
        return SceneFacts(ref, error=exc.message)
    if scene is None:
        return SceneFacts(ref, error=f"it has {len(report.errors)} error(s) (harness validate "
                                     f"{ref})")
    objects = {oid: {"shape": o.shape, "colour": o.colour, "group": o.group}
               for oid, o in scene.spec.objects.items()}
    return SceneFacts(scene.name, objects, scene.groups())


def facts_loader(data: Any, path: Path | None, params: Mapping[str, Any],
                 scene: str | None = None) -> Callable[[], SceneFacts | None]:
    """A function reading, the first time it is called, the facts of the scene the task
    document ``data`` names (None when it names none), or of ``scene`` instead (the scene a
    run is given: a name, or a path from the working directory)."""
    ref = scene or (data.get("scene") if isinstance(data, dict) else None)
    if scene:
        path = None

    @functools.cache
    def load() -> SceneFacts | None:
        if not isinstance(ref, str) or not ref:
            return None
        return scene_facts(ref, path.parent if path is not None else None, dict(params))

    return load
