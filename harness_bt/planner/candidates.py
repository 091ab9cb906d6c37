"""The tasks a planner chooses from: every task document of a library directory (``trees/``
by default), each checked as a whole, with its templates, typed parameters and the objects
of the scene it names (scenes are data: :mod:`harness_bt.scene`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from harness_bt.authoring import load_spec
from harness_bt.authoring.locate import resolve_library
from harness_bt.authoring.model import TaskSpec
from harness_bt.authoring.scenes import check_scene
from harness_bt.errors import DefinitionError
from harness_bt.planner.model import Candidate, SceneObject
from harness_bt.planner.words import object_words
from harness_bt.plugins import Registry
from harness_bt.scene import find_scene, scene_registry
from harness_bt.scene.model import CONTAINERS, SceneSpec

__all__ = ["DEFAULT_LIBRARY", "candidate_of", "library_candidates", "scene_objects"]

#: the task library a planner chooses from when none is named
DEFAULT_LIBRARY = Path("trees")


def scene_objects(spec: SceneSpec) -> tuple[SceneObject, ...]:
    """The objects of a scene with the words that name them."""
    out = []
    for oid, obj in spec.objects.items():
        colour = obj.colour if isinstance(obj.colour, str) else None
        out.append(SceneObject(oid, obj.label or oid.replace("_", " "),
                               object_words(oid, label=obj.label or "", colour=colour,
                                            shape=obj.shape),
                               colour, obj.shape, obj.group, obj.shape in CONTAINERS))
    return tuple(out)


def _scene(spec: TaskSpec, file: Path, scenes: Registry[Any]) -> tuple[SceneObject, ...]:
    if spec.scene is None:
        return ()
    ref = spec.scene
    if ref not in scenes and ("/" in ref or ref.lower().endswith((".yaml", ".yml"))):
        ref = str((file.parent / ref).resolve())
    path = find_scene(ref, registry=scenes)
    scene, report = check_scene(path)
    if scene is None:
        raise DefinitionError("INVALID_SCENE", f"{file}: its scene {spec.scene!r} does not "
                              f"load: {report.render()}", where=str(file),
                              fix=f"fix the scene (harness scenes {spec.scene})")
    return scene_objects(scene.spec)


def candidate_of(file: str | os.PathLike[str], *, scenes: Registry[Any] | None = None
                 ) -> Candidate:
    """One task file as a candidate (it must pass its checks)."""
    path = Path(file)
    spec = load_spec(path)
    templates = tuple(spec.instructions) or ((spec.instruction,) if spec.instruction else ())
    return Candidate(spec.name, str(path), templates, dict(spec.params),
                     spec.scene, _scene(spec, path, scenes or scene_registry(entry_points=True)),
                     spec.description)


def _is_task(path: Path) -> bool:
    """A task document (an included library of subtrees has no ``phases:``)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return True  # load_spec reports what is wrong with it
    return isinstance(data, dict) and "phases" in data


def library_candidates(directory: str | os.PathLike[str] = DEFAULT_LIBRARY, *,
                       scenes: Registry[Any] | None = None) -> tuple[Candidate, ...]:
    """Every task document (``*.yaml``) of ``directory``, by name, as candidates."""
    root = resolve_library(directory)  # as given, else the installed library
    registry = scenes if scenes is not None else scene_registry(entry_points=True)
    files = sorted(p for p in root.glob("*.yaml") if _is_task(p))
    if not files:
        raise DefinitionError("LIBRARY_EMPTY", f"the task library {str(root)!r} holds no task "
                              "file (*.yaml with phases:)", where=str(root),
                              fix="pass --library DIR naming a directory of task files")
    return tuple(sorted((candidate_of(p, scenes=registry) for p in files),
                        key=lambda c: c.name))
