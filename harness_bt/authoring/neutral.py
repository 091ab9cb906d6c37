"""Tasks from plain data: :func:`task_from_dict` reads the neutral dict form (what a YAML or JSON
file maps onto, after :mod:`~harness_bt.authoring.compile`), and :func:`new_task` builds a task from
Python phase objects whose trees may be node-spec dicts. Either way a dict tree becomes a
:class:`DictTree`, a recipe the core :class:`~harness_bt.task.Task` builds per run; it is held
to the same tree rules as a document's trees (:mod:`harness_bt.authoring.build`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import py_trees

from harness_bt.authoring.build import build_tree
from harness_bt.budget import TaskBudget
from harness_bt.context import GuardContext
from harness_bt.errors import DefinitionError
from harness_bt.nodes.base import NodeType
from harness_bt.nodes.registry import NodeRegistry
from harness_bt.plugins import Registry, did_you_mean
from harness_bt.task import (
    Compound,
    Final,
    History,
    On,
    Parallel,
    Phase,
    PhaseSpec,
    Task,
)

__all__ = ["DictTree", "new_task", "task_from_dict"]


class DictTree:
    """A node-spec dict as a tree recipe: checked and built per run by
    :func:`~harness_bt.authoring.build.build_tree`, every problem reported at once. ``spec``
    is the dict as written (a Python task reads back into its document form from it)."""

    __slots__ = ("spec", "where")

    def __init__(self, spec: Mapping[str, Any], where: str) -> None:
        self.spec = spec
        self.where = where

    def build(self, nodes: Registry[NodeType] | None, params: Mapping[str, Any]
              ) -> py_trees.behaviour.Behaviour:
        registry = nodes if nodes is not None else NodeRegistry(entry_points=True)
        return build_tree(self.spec, registry, where=self.where, params=params)

    def __repr__(self) -> str:
        return f"DictTree({self.where})"


def _recipe(tree: Any, phase_id: str) -> Any:
    return DictTree(tree, f"phase {phase_id}") if isinstance(tree, Mapping) else tree


def _compiled(spec: PhaseSpec) -> PhaseSpec:
    if isinstance(spec, Phase) and isinstance(spec.tree, Mapping):
        return Phase(spec.id, _recipe(spec.tree, spec.id), transitions=spec.transitions,
                     description=spec.description)
    if isinstance(spec, Compound):
        return Compound(spec.id, [_compiled(c) for c in spec.phases], initial=spec.initial,
                        transitions=spec.transitions, description=spec.description)
    if isinstance(spec, Parallel):
        return Parallel(spec.id, [_compiled(c) for c in spec.regions],
                        transitions=spec.transitions, description=spec.description)
    return spec


def new_task(name: str, phases: Sequence[PhaseSpec], **options: Any) -> Task:
    """A :class:`~harness_bt.task.Task` from Python phases whose trees may be node-spec dicts
    (``Phase("work", {"type": "observe", "name": "look", "objects": ["{target}"]})``); the
    options are :class:`~harness_bt.task.Task`'s (``initial``, ``budget``, ``params``, ...)."""
    return Task(name, [_compiled(p) for p in phases], **options)


def task_from_dict(data: Mapping[str, Any], *, nodes: Registry[NodeType] | None = None,
              guards: Mapping[str, Callable[[GuardContext], bool]] | None = None) -> Task:
    """Build a task from the neutral dict form (what a YAML / JSON file maps onto)::

        {"name": "fetch", "initial": "navigate", "budget": {"max_retries": 3},
         "phases": [
           {"id": "navigate", "tree": {<node spec>},
            "transitions": [{"event": "succeeded", "target": "done"},
                            {"event": "failed", "target": "aborted_nav",
                             "reason": "NO_PROGRESS", "guard": "<name in guards>"}]},
           {"id": "pick", "kind": "parallel", "regions": [...], "transitions": [...]},
           {"id": "deliver", "kind": "compound", "initial": "...", "phases": [...]},
           {"id": "done", "kind": "final", "reason": "done"}]}

    ``kind`` defaults from the keys (``tree``: atomic, ``phases``: compound, ``regions``:
    parallel). Every problem is reported at once, each with its place.
    """
    problems: list[str] = []
    guards = dict(guards or {})

    def transitions(items: Any, where: str) -> list[On]:
        out = []
        for i, t in enumerate(items or ()):
            here = f"{where}.transitions[{i}]"
            if not isinstance(t, Mapping) or "event" not in t or "target" not in t:
                problems.append(f"{here}: needs 'event' and 'target'")
                continue
            guard = None
            if t.get("guard") is not None:
                guard = guards.get(str(t["guard"]))
                if guard is None:
                    problems.append(f"{here}: unknown guard {t['guard']!r}; known: "
                                    f"{', '.join(sorted(guards)) or '(none)'}"
                                    f"{did_you_mean(str(t['guard']), list(guards))}")
            out.append(On(str(t["event"]), str(t["target"]), t.get("reason"), guard,
                          str(t.get("description", ""))))
        return out

    def phase(item: Any, where: str) -> PhaseSpec | None:
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            problems.append(f"{where}: a phase needs a string 'id'")
            return None
        where = f"{where} ({item['id']})"
        kind = item.get("kind") or ("final" if item.get("final") else
                                    "atomic" if "tree" in item else
                                    "compound" if "phases" in item else
                                    "parallel" if "regions" in item else None)
        trans = transitions(item.get("transitions"), where)
        desc = str(item.get("description", ""))
        if kind == "final":
            return Final(item["id"], reason=item.get("reason"), description=desc)
        if kind == "history":
            return History(item["id"], deep=item.get("type") == "deep",
                           default=item.get("default"), description=desc)
        if kind == "atomic":
            if "tree" not in item:
                problems.append(f"{where}: an atomic phase needs a 'tree'")
                return None
            return Phase(item["id"], _recipe(item["tree"], item["id"]), transitions=trans,
                     description=desc)
        if kind == "compound":
            kids = [phase(c, f"{where}.phases[{i}]")
                    for i, c in enumerate(item.get("phases") or ())]
            return Compound(item["id"], [k for k in kids if k is not None],
                            initial=item.get("initial"), transitions=trans,
                            description=desc)
        if kind == "parallel":
            kids = [phase(c, f"{where}.regions[{i}]")
                    for i, c in enumerate(item.get("regions") or ())]
            return Parallel(item["id"], [k for k in kids if k is not None],
                            transitions=trans, description=desc)
        problems.append(f"{where}: kind {kind!r} must be atomic, compound, parallel, "
                        "final or history (or give tree / phases / regions)")
        return None

    specs = [phase(p, f"phases[{i}]") for i, p in enumerate(data.get("phases") or ())]
    budget = data.get("budget")
    if budget is not None and not isinstance(budget, Mapping):
        problems.append("budget: expected {max_retries, max_time_s}")
        budget = None
    if not isinstance(data.get("blackboard") or {}, Mapping):
        problems.append("blackboard: expected a mapping of key -> default value")
    if problems:
        raise DefinitionError(
            "INVALID_TASK", f"task {data.get('name')!r}: {len(problems)} problem(s): "
            + "; ".join(problems), details={"problems": problems})
    return Task(str(data.get("name", "")), [s for s in specs if s is not None],
                initial=data.get("initial"),
                budget=TaskBudget(**budget) if budget else None,
                description=str(data.get("description", "")),
                version=str(data.get("version", "1")), nodes=nodes,
                instruction=str(data.get("instruction", "")),
                blackboard=data.get("blackboard"), scene=data.get("scene"),
                params=data.get("params"))
