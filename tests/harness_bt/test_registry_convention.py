"""Every registry is built the same way: its built-ins, and its entry points only when asked
(``entry_points=True``), whether it is a class or a function (docs/extending.md)."""

from __future__ import annotations

import inspect
from typing import Any

from harness_bt.evaluation import EvaluatorRegistry
from harness_bt.nodes.registry import NodeRegistry
from harness_bt.planner.registry import planner_registry
from harness_bt.runtime.backend import backend_registry
from harness_bt.runtime.episodes import runtime_registry
from harness_bt.runtime.executor import ExecutorRegistry
from harness_bt.scene import predicate_registry, scene_registry
from harness_bt.skill import SkillRegistry
from harness_bt.world import perception_registry
from policies.registry import policy_registry

BUILDERS: tuple[Any, ...] = (SkillRegistry, EvaluatorRegistry, ExecutorRegistry, NodeRegistry,
                             scene_registry, predicate_registry, perception_registry,
                             runtime_registry, backend_registry, planner_registry,
                             policy_registry)


def test_every_registry_loads_its_entry_points_only_when_asked() -> None:
    defaults = {b.__name__: inspect.signature(b).parameters["entry_points"].default
                for b in BUILDERS}
    assert defaults == dict.fromkeys(defaults, False)


def test_a_registry_function_built_in_code_holds_nothing_installed() -> None:
    assert scene_registry().names() == [] and predicate_registry().names() == []
    assert "pick_cube" in scene_registry(entry_points=True)
    assert "lifted" in predicate_registry(entry_points=True)
