"""What a document is checked and built against: node types, skills and Python guards.

:class:`Registries` holds them, and the node models made from them (built once per node-type
registry and skill list: making them is the slow part of checking a tree)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness_bt.authoring.nodes import NodeModels
from harness_bt.context import GuardContext
from harness_bt.nodes.base import NodeType
from harness_bt.nodes.registry import NodeRegistry
from harness_bt.plugins import Registry
from harness_bt.skill import SkillRegistry

__all__ = ["GuardFn", "Registries"]

GuardFn = Callable[[GuardContext], bool]

_MODELS: weakref.WeakKeyDictionary[Registry[Any], dict[Any, NodeModels]] = \
    weakref.WeakKeyDictionary()


def node_models(nodes: Registry[NodeType], skills: list[str] | None) -> NodeModels:
    """The node models of ``nodes`` (skill names: ``skills``, None for any), made once per
    registry and contents."""
    key = (tuple(nodes.names()), None if skills is None else tuple(skills))
    cache = _MODELS.setdefault(nodes, {})
    if key not in cache:
        if len(cache) >= 4:  # a registry that keeps changing: drop the oldest models
            cache.pop(next(iter(cache)))
        cache[key] = NodeModels(nodes, skills)
    return cache[key]


@dataclass
class Registries:
    """Node types, skills and Python guards by name.

    ``nodes``: the node types (default: the built-ins and the ``harness_bt.nodes`` entry
    points). ``skills``: the skills a document may name, their params checked against their
    models; None leaves skill names and params unchecked (a tree built on its own: the run
    binds its skills later). :meth:`installed` fills both from the entry points."""

    nodes: Registry[NodeType] = field(default_factory=lambda: NodeRegistry(entry_points=True))
    skills: SkillRegistry | None = None
    guards: Mapping[str, GuardFn] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.guards = dict(self.guards)

    @classmethod
    def installed(cls, *, nodes: Registry[NodeType] | None = None,
                  skills: SkillRegistry | None = None,
                  guards: Mapping[str, GuardFn] | None = None) -> Registries:
        """What is installed, for every registry not given: the built-in node types and the
        ``harness_bt.nodes`` / ``harness_bt.skills`` entry points."""
        return cls(nodes=nodes if nodes is not None else NodeRegistry(entry_points=True),
                   skills=skills if skills is not None else SkillRegistry(entry_points=True),
                   guards=dict(guards or {}))

    @property
    def models(self) -> NodeModels:
        return node_models(self.nodes, None if self.skills is None else self.skills.names())
