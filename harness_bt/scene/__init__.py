"""Scenes: what a simulator builds and how it judges an episode.

A scene document (YAML) declares objects, a seeded layout, cameras and a success condition over
predicates evaluated on the simulator's own state; tasks name the scene they run on
(``scene:``). Scenes and predicates are plug-ins (the ``harness_bt.scenes`` and
``harness_bt.predicates`` entry points). Scene documents are read and checked by
:mod:`harness_bt.authoring.scenes` (``load_scene``, ``check_scene``). See docs/scenes.md.
"""

from harness_bt.scene.condition import Condition, compile_success, scene_names
from harness_bt.scene.document import Scene, SceneError, find_scene, scene_registry
from harness_bt.scene.model import COLOURS, SHAPES, ObjectSpec, SceneSpec
from harness_bt.scene.predicates import Arg, Cavity, Predicate, SceneState, predicate_registry

__all__ = [
    "COLOURS",
    "SHAPES",
    "Arg",
    "Cavity",
    "Condition",
    "ObjectSpec",
    "Predicate",
    "Scene",
    "SceneError",
    "SceneSpec",
    "SceneState",
    "compile_success",
    "find_scene",
    "predicate_registry",
    "scene_names",
    "scene_registry",
]
