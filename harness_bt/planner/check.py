"""An answer (a task's name and parameter values, from a model or a user) checked like a
task file's parameters: the task must be a candidate, each parameter declared and of its
type (:func:`~harness_bt.authoring.params.check_value`), each ``object`` value an object of the
task's scene. Every problem is reported at once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness_bt.authoring.params import check_value, describe
from harness_bt.planner.model import Candidate, Plan, PlanRequest, Refusal, RefusalCode
from harness_bt.plugins import did_you_mean

__all__ = ["check_answer", "task_lines"]


def task_lines(candidates: tuple[Candidate, ...]) -> tuple[str, ...]:
    """One line per task: its name, templates and scene (what a refusal lists)."""
    return tuple(f"{c.name}: " + " | ".join(repr(t) for t in c.templates or ("(no template)",))
                 + (f" (scene {c.scene})" if c.scene else "") for c in candidates)


def check_answer(request: PlanRequest, task: Any, params: Any) -> Plan | Refusal:
    """The plan ``task`` with ``params`` stands for, or a refusal with every reason."""
    names = [c.name for c in request.candidates]
    if not isinstance(task, str) or request.candidate(task) is None:
        return Refusal(RefusalCode.INVALID, (
            f"the answer names task {task!r}, which is not in the library; known: "
            f"{', '.join(names)}{did_you_mean(str(task), names)}",),
            task_lines(request.candidates), fix="name one of the library's tasks")
    candidate = request.candidate(task)
    assert candidate is not None
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        return Refusal(RefusalCode.INVALID, (f"the parameters of {task} must be an object "
                                             f"(name -> value), got {params!r}",),
                       task_lines((candidate,)))
    reasons: list[str] = []
    refused: set[str] = set()  # given, but refused (reported once)
    out: dict[str, Any] = {}
    declared = sorted(candidate.params)
    objects = candidate.object_ids()
    for name, value in params.items():
        if value is None:
            continue  # left to the task's default
        decl = candidate.params.get(name)
        if decl is None:
            reasons.append(f"task {task} has no parameter {name!r}; its parameters: "
                           f"{', '.join(declared) or '(none)'}{did_you_mean(name, declared)}")
            continue
        try:
            checked = check_value(decl, value)
        except ValueError as exc:
            shown = json.dumps(value, default=str)
            refused.add(name)
            reasons.append(f"parameter {name!r} of {task} is {decl.type} ({describe(decl)}); "
                           f"got {shown}: {exc}")
            continue
        if decl.type == "object" and candidate.scene is not None and checked not in objects:
            refused.add(name)
            reasons.append(f"parameter {name!r} of {task} names object {checked!r}, which is "
                           f"not in scene {candidate.scene}; its objects: {', '.join(objects)}"
                           f"{did_you_mean(checked, objects)}")
            continue
        out[name] = checked
    for name, decl in candidate.params.items():
        if decl.required and name not in out and name not in refused:
            reasons.append(f"parameter {name!r} of {task} ({describe(decl)}) has no default "
                           "and the answer gives none")
    if reasons:
        return Refusal(RefusalCode.INVALID, tuple(reasons), task_lines((candidate,)),
                       fix="answer with the task's declared parameters, each of its type")
    return Plan(candidate.name, candidate.file, out)
