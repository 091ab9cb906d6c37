"""Success conditions of scenes, in the one expression language (:mod:`harness_bt.expr`).

A scene's ``success.when`` is an expression whose calls are predicates over the simulator's
state and whose names are the scene's objects, groups (``group:`` of its objects) and
parameters::

    inside(target, tray) and released(target)
    count(inside(reds, tray)) >= 2 and not held(target)

This module only names that vocabulary: :func:`compile_success` hands the text, the predicates
and the scene's names to :func:`harness_bt.expr.compile_condition`, which parses, checks (every
problem at once, each an :class:`~harness_bt.expr.ExprError` with its code, column and fix) and
binds it; :meth:`Condition.evaluate` gives the verdict and the value of every predicate call,
which the simulator keeps as evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness_bt.expr import Condition, ExprError, Name, compile_condition
from harness_bt.scene.predicates import Predicate

__all__ = ["Condition", "compile_success", "scene_names"]


def scene_names(objects: Sequence[str], groups: Mapping[str, Sequence[str]] | None = None,
                params: Mapping[str, tuple[str, Any]] | None = None) -> dict[str, Name]:
    """What each name of a success condition stands for: an object, each object of a group,
    or a parameter's value (``params``: name -> (type, value)); a parameter hides an object
    or group of its name."""
    names = {oid: Name("object", oid) for oid in objects}
    names.update({g: Name("object", members=tuple(m)) for g, m in (groups or {}).items()})
    names.update({p: Name("number" if kind == "integer" else kind, value, parameter=True)
                  for p, (kind, value) in (params or {}).items()})
    return names


def compile_success(text: str, predicates: Mapping[str, Predicate], *,
                    objects: Sequence[str], groups: Mapping[str, Sequence[str]] | None = None,
                    params: Mapping[str, tuple[str, Any]] | None = None
                    ) -> tuple[Condition | None, list[ExprError]]:
    """Compile a success condition against the predicates and the scene's objects, groups and
    parameters. Returns the condition (None if any problem) and every problem found."""
    return compile_condition(text, predicates, scene_names(objects, groups, params))
