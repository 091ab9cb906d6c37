"""Task phases as a statechart (python-statemachine), declared from plain data.

A :class:`Task` is a list of phases: :class:`Phase` (atomic, binds one behaviour tree),
:class:`Compound` (nested phases, one active at a time), :class:`Parallel` (regions active side by
side, e.g. a monitor tree beside the main one), :class:`Final` (a terminal reason: ``done`` or
``aborted_<why>`` at the top level) and :class:`History` (inside a compound: a transition to it
re-enters the compound where it was left, shallow or deep); they are declared in
:mod:`harness_bt.task.phases`. Transitions (:func:`on`) fire on tree outcomes: when a
phase's tree ends, the phase raises ``succeeded``, ``failed``, ``unknown`` or
``budget_exhausted``, scoped to that phase (``failed.<phase id>``). A transition declared on a
compound or parallel phase catches that outcome from any phase inside it; ``done`` fires when a
compound or parallel phase reaches its final state(s). A guard sees the :class:`Outcome` (kind,
reason, node path) and the run's blackboard and world.

The chart class is built with ``statemachine.io.create_machine_class_from_definition`` from the
neutral dict this module compiles, and validated as a whole (every problem reported at once)
before anything runs. Trees are built per run, from a factory or a node-spec dict.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import py_trees
from statemachine import StateChart
from statemachine.exceptions import InvalidDefinition
from statemachine.io import create_machine_class_from_definition

from harness_bt.budget import TaskBudget
from harness_bt.context import GuardContext, Outcome, OutcomeKind
from harness_bt.errors import DefinitionError
from harness_bt.nodes.base import NodeType, assign_paths
from harness_bt.nodes.registry import describe_tree
from harness_bt.nodes.skill_action import SkillAction
from harness_bt.plugins import Registry
from harness_bt.problems import Severity
from harness_bt.source import format_path
from harness_bt.task.phases import (
    Compound,
    Final,
    History,
    On,
    Parallel,
    Phase,
    PhaseSpec,
    TreeRecipe,
    atomic_ids,
    children,
    on,
    walk,
)
from harness_bt.task.rules import check_chart

__all__ = [
    "Compound",
    "Final",
    "History",
    "On",
    "Parallel",
    "Phase",
    "PhaseSpec",
    "Task",
    "on",
]


OUTCOME_EVENTS = tuple(k.value for k in OutcomeKind)
_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

def _cond(on_: On) -> Callable[..., bool]:
    """A transition guard as the chart engine calls it (kwargs injected by name)."""

    def cond(outcome: Outcome | None = None, guard_context: GuardContext | None = None,
             **_: Any) -> bool:
        if on_.reason is not None and (outcome is None or outcome.reason != on_.reason):
            return False
        if on_.guard is not None:
            return guard_context is not None and bool(on_.guard(guard_context))
        return True

    cond.__name__ = cond.__qualname__ = f"guard_{on_.event}_to_{on_.target}"
    return cond


class Task:
    """A task: phases, the initial one, a budget. Building it validates everything and compiles
    the chart class; nothing runs until a :class:`harness_bt.TaskRunner` ticks it.

    >>> import py_trees
    >>> t = Task("hello", [Phase("work", lambda: py_trees.behaviours.Success("ok"),
    ...                          transitions=[on("succeeded", "done"),
    ...                                       on("failed", "aborted_work")]),
    ...                    Final("done"), Final("aborted_work")])
    >>> [s.id for s in t.chart_class.states]
    ['work', 'done', 'aborted_work']
    """

    def __init__(self, name: str, phases: Sequence[PhaseSpec], *, initial: str | None = None,
                 budget: TaskBudget | None = None, description: str = "",
                 version: str = "1", nodes: Registry[NodeType] | None = None,
                 instruction: str = "", blackboard: Mapping[str, Any] | None = None,
                 scene: str | None = None, params: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.scene = scene  # the simulator scene it runs on (a name or a path), if it says
        self.params = dict(params or {})  # its parameters' values, name -> value
        self.phases = tuple(phases)
        self.initial = initial
        self.budget = budget or TaskBudget()
        self.description = description
        self.version = version
        self.nodes = nodes
        self.instruction = instruction  # the intent in words ("put the cup on the tray")
        self.blackboard = dict(blackboard or {})  # written before the first tick
        problems = self.problems()
        if problems:
            raise DefinitionError(
                "INVALID_TASK", f"task {name!r} has {len(problems)} problem(s): "
                + "; ".join(problems), where=f"task {name}", details={"problems": problems},
                fix="fix every problem listed, then build the task again",
            )
        self.specs: dict[str, PhaseSpec] = {s.id: s for s in walk(self.phases)}
        try:
            self.chart_class: type[StateChart] = create_machine_class_from_definition(
                _class_name(name), states=self._definition(), catch_errors_as_events=False,
            )
        except InvalidDefinition as exc:
            raise DefinitionError("INVALID_TASK", f"task {name!r}: the chart is invalid: {exc}",
                                  where=f"task {name}") from exc

    # ------------------------------------------------------------------ validation

    def problems(self) -> list[str]:
        """Every problem of this task: the shape of its Python objects, then the statechart
        rules every task source is held to (:mod:`harness_bt.task.rules`)."""
        out: list[str] = []
        if not isinstance(self.name, str) or not self.name.strip():
            out.append(f"task name {self.name!r} must be non-empty")
        for what, keys in (("blackboard defaults", self.blackboard), ("params", self.params)):
            if any(not isinstance(k, str) or not k for k in keys):
                out.append(f"{what} {sorted(map(str, keys))} need non-empty string keys")
        malformed: list[str] = []  # what the chart rules cannot read
        if not self.phases:
            malformed.append("a task needs at least one phase")
        for spec in walk(self.phases):
            if not isinstance(spec, PhaseSpec):
                malformed.append(f"{spec!r} is not a Phase, Compound, Parallel or Final")
                continue
            if not isinstance(spec.id, str) or not _ID.match(spec.id):
                out.append(f"phase id {spec.id!r} must be an identifier (letters, digits, _)")
            if isinstance(spec, Phase) and isinstance(spec.tree, Mapping):
                out.append(f"phase {spec.id!r}: its tree is a node-spec dict, which this class "
                           "does not read; build the task with harness_bt.authoring.new_task(...) "
                           "(it checks and compiles node-spec dicts), or give a tree factory")
            elif isinstance(spec, Phase) and not (callable(spec.tree)
                                                  or isinstance(spec.tree, TreeRecipe)):
                out.append(f"phase {spec.id!r}: tree must be a factory or a tree recipe")
            if isinstance(spec, Compound | Parallel) and not children(spec):
                malformed.append(f"{spec.kind} phase {spec.id!r} has no phases inside")
            for t in spec.transitions:
                if not isinstance(t, On):
                    malformed.append(f"phase {spec.id!r}: transition {t!r} is not an On "
                                     "(use on())")
        if malformed:
            return out + malformed

        chart = check_chart(self.phases, initial=self.initial,
                            where=lambda path: format_path(path) or "the task")
        return out + [f"{p.code}: {p.message} (at {p.where})" for p in chart
                      if p.severity is Severity.ERROR]

    # ------------------------------------------------------------------ compilation

    def _event(self, spec: PhaseSpec, event: str) -> str:
        if event in OUTCOME_EVENTS:
            return " ".join(f"{event}.{a}" for a in atomic_ids(spec))
        if event == "done":
            return f"done.state.{spec.id}"
        return event

    def _state(self, spec: PhaseSpec, initial: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"name": spec.id}
        if initial:
            out["initial"] = True
        if isinstance(spec, Final):
            out["final"] = True
        if isinstance(spec, Compound):
            first = spec.initial or spec.phases[0].id
            out["states"] = {c.id: self._state(c, c.id == first) for c in spec.phases
                             if not isinstance(c, History)}
            history = {h.id: {"type": h.type, "transitions": [{"target": h.default or first}]}
                       for h in spec.phases if isinstance(h, History)}
            if history:
                out["history"] = history
        if isinstance(spec, Parallel):
            out["parallel"] = True
            out["states"] = {c.id: self._state(c, False) for c in spec.regions}
        if spec.transitions:
            events: dict[str, list[dict[str, Any]]] = {}
            for t in spec.transitions:
                entry: dict[str, Any] = {"target": t.target}
                if t.reason is not None or t.guard is not None:
                    entry["cond"] = _cond(t)
                events.setdefault(self._event(spec, t.event), []).append(entry)
            out["on"] = events
        return out

    def _definition(self) -> dict[str, Any]:
        first = self.initial or self.phases[0].id
        return {s.id: self._state(s, s.id == first) for s in self.phases}

    # ------------------------------------------------------------------ per run

    def atomic_phases(self) -> list[Phase]:
        return [s for s in walk(self.phases) if isinstance(s, Phase)]

    def final_reason(self, state_id: str) -> str | None:
        spec = self.specs.get(state_id)
        return spec.reason if isinstance(spec, Final) else None

    def build_trees(self, nodes: Registry[NodeType] | None = None
                    ) -> dict[str, py_trees.behaviour.Behaviour]:
        """One fresh tree per atomic phase, paths assigned. Every problem is reported at once."""
        registry = nodes if nodes is not None else self.nodes
        trees: dict[str, py_trees.behaviour.Behaviour] = {}
        problems: list[str] = []
        for phase in self.atomic_phases():
            try:
                if isinstance(phase.tree, TreeRecipe):
                    root = phase.tree.build(registry, self.params)
                else:
                    assert phase.tree is not None
                    root = phase.tree()
                if not isinstance(root, py_trees.behaviour.Behaviour):
                    raise DefinitionError("INVALID_TREE", f"phase {phase.id!r}: the tree "
                                          f"factory returned {type(root).__name__}")
                assign_paths(root, where=f"phase {phase.id}")
                trees[phase.id] = root
            except DefinitionError as exc:
                problems.append(str(exc))
        if problems:
            raise DefinitionError("INVALID_TASK", f"task {self.name!r}: " + " | ".join(problems),
                                  details={"problems": problems})
        return trees

    def skill_names(self, nodes: Registry[NodeType] | None = None) -> set[str]:
        """The skills this task's trees command (read from freshly built trees)."""
        return {node.skill_name for root in self.build_trees(nodes).values()
                for node in root.iterate() if isinstance(node, SkillAction)}

    def structure(self, trees: Mapping[str, py_trees.behaviour.Behaviour] | None = None
                  ) -> dict[str, Any]:
        """The task as data: phases (nested), transitions, trees (node paths, kinds, params)."""
        def phase(spec: PhaseSpec) -> dict[str, Any]:
            out: dict[str, Any] = {"id": spec.id, "kind": spec.kind}
            if spec.description:
                out["description"] = spec.description
            if isinstance(spec, Final):
                out["reason"] = spec.reason
            if isinstance(spec, Compound):
                out["initial"] = spec.initial or spec.phases[0].id
            if isinstance(spec, History):
                out["type"] = spec.type
                if spec.default is not None:
                    out["default"] = spec.default
            kids = children(spec)
            if kids:
                out["phases"] = [phase(c) for c in kids]
            if spec.transitions:
                out["transitions"] = [t.to_dict() for t in spec.transitions]
            return out
        trees = trees if trees is not None else self.build_trees()
        return {
            "task": self.name,
            "version": self.version,
            "description": self.description,
            "instruction": self.instruction,
            "blackboard": dict(self.blackboard),
            "scene": self.scene,
            "params": dict(self.params),
            "initial": self.initial or self.phases[0].id,
            "budget": self.budget.to_dict(),
            "phases": [phase(s) for s in self.phases],
            "trees": {pid: describe_tree(root) for pid, root in trees.items()},
        }


def _class_name(name: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", name)
    text = "".join(p[:1].upper() + p[1:] for p in parts if p) or "Task"
    return text if text[0].isalpha() else f"Task{text}"
