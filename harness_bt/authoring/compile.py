"""From a checked document to the core's :class:`~harness_bt.Task`, through the neutral dict
form of :func:`~harness_bt.authoring.neutral.task_from_dict`: shorthands and subtrees
expanded, guards compiled (named ones and inline ``when`` expressions), blackboard defaults
gathered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_bt.authoring.expand import Expander
from harness_bt.authoring.neutral import task_from_dict
from harness_bt.authoring.placeholders import PLACEHOLDER, render
from harness_bt.authoring.validate.check import Checked
from harness_bt.context import GuardContext
from harness_bt.errors import DefinitionError
from harness_bt.expr import Expression, compile_expr, run_env
from harness_bt.task import Task

__all__ = ["compile_guard", "compile_task", "to_neutral"]

GuardFn = Callable[[GuardContext], bool]


def compile_guard(text: str, name: str | None = None) -> GuardFn:
    """A transition guard from an expression over ``outcome``, ``bb`` and ``world``: named
    ``name`` (a document's named guard) or, without one, inline (``when:``)."""
    expression: Expression = compile_expr(text, roots=("outcome", "bb", "world"))

    def guard(ctx: GuardContext) -> bool:
        return expression.test(run_env(blackboard=ctx.blackboard, world=ctx.world,
                                       outcome=ctx.outcome))

    guard.__name__ = guard.__qualname__ = name or text
    guard.expression = text  # type: ignore[attr-defined]
    guard.inline = name is None  # type: ignore[attr-defined]
    return guard


def to_neutral(checked: Checked) -> tuple[dict[str, Any], dict[str, GuardFn]]:
    """The neutral dict form of a checked task, and the guards its transitions name."""
    spec = checked.spec
    if spec is None or not checked.report.ok:
        checked.report.raise_for_errors(checked.doc.file)  # nothing is built from a bad file
        raise DefinitionError("INVALID_TASK_FILE", f"{checked.doc.file}: no task to build")
    doc = checked.doc
    expander = Expander(checked.library, checked.registries.models,
                        params=dict(checked.params), scene=checked.scene)
    guards: dict[str, GuardFn] = dict(checked.registries.guards)
    for name, g in checked.library.guards.items():
        guards[name] = compile_guard(g.text, name)

    def fill(text: str) -> str:
        """``{param}`` in a guard or the instruction: the parameter's value, as text."""
        return PLACEHOLDER.sub(lambda m: render(checked.params[m.group(1)])
                               if m.group(1) in checked.params else m.group(0), text)

    def transitions(items: Any) -> list[dict[str, Any]]:
        out = []
        for t in items:
            entry: dict[str, Any] = {"event": t.event, "target": t.target}
            if t.reason is not None:
                entry["reason"] = t.reason
            if t.when is not None:
                when = fill(t.when)
                key = f"when: {when}"
                guards.setdefault(key, compile_guard(when))
                entry["guard"] = key
            elif t.guard is not None:
                entry["guard"] = t.guard
            if t.description:
                entry["description"] = t.description
            out.append(entry)
        return out

    def phase(p: Any, raw: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {"id": p.id, "kind": p.kind}
        if p.description:
            out["description"] = p.description
        if p.kind == "final":
            if p.reason is not None:
                out["reason"] = p.reason
            return out
        if p.kind == "history":
            out["type"] = p.type
            if p.default is not None:
                out["default"] = p.default
            return out
        if p.kind == "atomic":
            out["tree"] = expander.expand(raw["tree"], doc, (*path, "tree"))
        elif p.kind == "compound":
            if p.initial is not None:
                out["initial"] = p.initial
            out["phases"] = [phase(c, r, (*path, "phases", i))
                             for i, (c, r) in enumerate(zip(p.phases, raw["phases"],
                                                            strict=True))]
        else:
            out["regions"] = [phase(c, r, (*path, "regions", i))
                              for i, (c, r) in enumerate(zip(p.regions, raw["regions"],
                                                             strict=True))]
        if p.transitions:
            out["transitions"] = transitions(p.transitions)
        return out

    raw = doc.data
    phases = [phase(p, r, ("phases", i))
              for i, (p, r) in enumerate(zip(spec.phases, raw["phases"], strict=True))]
    neutral: dict[str, Any] = {"name": spec.name, "version": spec.version, "phases": phases}
    for key in ("description", "instruction", "scene"):
        if getattr(spec, key):
            neutral[key] = getattr(spec, key)
    if spec.instruction:
        neutral["instruction"] = fill(spec.instruction)
    if spec.scene and doc.path is not None and _is_path(spec.scene):
        neutral["scene"] = str((doc.path.parent / spec.scene).resolve())
    if checked.params:
        neutral["params"] = dict(checked.params)
    if spec.initial is not None:
        neutral["initial"] = spec.initial
    if spec.budget is not None:
        neutral["budget"] = spec.budget.model_dump()
    blackboard = {**expander.defaults, **spec.blackboard}
    if blackboard:
        neutral["blackboard"] = blackboard
    return neutral, guards


def _is_path(scene: str) -> bool:
    """A scene given as a file (relative to the task file) rather than by name."""
    return "/" in scene or scene.lower().endswith((".yaml", ".yml", ".json"))


def compile_task(checked: Checked) -> Task:
    """The task of a checked document (raises if it did not pass)."""
    neutral, guards = to_neutral(checked)
    return task_from_dict(neutral, nodes=checked.registries.nodes, guards=guards)

