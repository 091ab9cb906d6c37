"""What a planner is given and what it answers: the :class:`Candidate` tasks (each with its
templates, typed parameters and the objects of its scene), a :class:`PlanRequest` (the
instruction, the candidates, the attempts so far), and a :class:`Decision`: a :class:`Plan`
(task file and parameters) or a :class:`Refusal` (why, and what could have been meant), with
the digest of what the planner was asked and its answer, for the trace."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from harness_bt.authoring.model import ParamSpec
from harness_bt.errors import PlanningError

__all__ = [
    "Attempt",
    "Candidate",
    "Decision",
    "Plan",
    "PlanRequest",
    "Planner",
    "Refusal",
    "RefusalCode",
    "SceneObject",
    "digest",
]


@dataclass(frozen=True)
class SceneObject:
    """An object of a task's scene: its id and the words that name it (from its id, label,
    colour and shape: ``red_cube`` -> red, cube)."""

    id: str
    label: str = ""
    words: frozenset[str] = frozenset()
    #: its named colour, shape, group, and whether it is a container (a tray, a bowl)
    colour: str | None = None
    shape: str | None = None
    group: str | None = None
    container: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label}


@dataclass(frozen=True)
class Candidate:
    """A library task a planner may choose: its name and file, the templates it is asked
    by (``instructions:``, else its ``instruction``), its parameters, and its scene's
    objects (what an ``object`` parameter may name)."""

    name: str
    file: str
    templates: tuple[str, ...]
    params: Mapping[str, ParamSpec]
    scene: str | None = None
    objects: tuple[SceneObject, ...] = ()
    description: str = ""

    def object_ids(self) -> list[str]:
        return [o.id for o in self.objects]

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.name, "templates": list(self.templates),
                "params": {k: p.model_dump(exclude_defaults=True) for k, p in
                           self.params.items()},
                "scene": self.scene, "objects": [o.to_dict() for o in self.objects]}


@dataclass(frozen=True)
class Attempt:
    """A task run the planner chose before, and how it ended (its reason and the evidence
    of :func:`~harness_bt.run.why.why_not_done`)."""

    task: str
    params: Mapping[str, Any]
    outcome: str
    reason: str
    why: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "params": dict(self.params), "outcome": self.outcome,
                "reason": self.reason, "why": None if self.why is None else dict(self.why)}


@dataclass(frozen=True)
class PlanRequest:
    """What a planner is asked: the instruction, the tasks it may choose from, the attempts
    so far (empty on the first call; after an abort, what was run and why it ended), and the
    parameter values the user set."""

    instruction: str
    candidates: tuple[Candidate, ...]
    attempts: tuple[Attempt, ...] = ()
    #: values the user set (``--set NAME=VALUE``): they win over what the planner binds,
    #: and settle which object an ambiguous slot means
    given: Mapping[str, Any] = field(default_factory=dict)

    def candidate(self, name: str) -> Candidate | None:
        return next((c for c in self.candidates if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instruction": self.instruction,
                               "tasks": [c.to_dict() for c in self.candidates],
                               "attempts": [a.to_dict() for a in self.attempts]}
        if self.given:
            out["given"] = dict(self.given)
        return out


def digest(value: Any) -> str:
    """``sha256:<hex>`` of text, or of a value's canonical JSON."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str,
                                                            separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Plan:
    """The chosen task (its name and file) and its parameters (only those the instruction
    bound: the task's defaults stand for the others)."""

    task: str
    file: str
    params: Mapping[str, Any] = field(default_factory=dict)
    template: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"task": self.task, "file": self.file,
                               "params": dict(self.params)}
        if self.template is not None:
            out["template"] = self.template
        return out

    def describe(self) -> str:
        given = ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                          for k, v in self.params.items())
        return f"{self.task}" + (f" ({given})" if given else "")


class RefusalCode(StrEnum):
    """Why a planner gave no plan."""

    AMBIGUOUS = "PLAN_AMBIGUOUS"        # more than one task, binding or object fits
    NO_MATCH = "PLAN_NO_MATCH"          # no task is asked that way
    INVALID = "PLAN_INVALID"            # the answer names an unknown task, object, type
    MODEL_REFUSED = "PLAN_MODEL_REFUSED"  # the model said no task fits
    GAVE_UP = "PLAN_GAVE_UP"            # after an abort: nothing else to try
    UNREACHABLE = "PLANNER_UNREACHABLE"
    TIMEOUT = "PLANNER_TIMEOUT"
    HTTP = "PLANNER_HTTP_ERROR"
    BAD_ANSWER = "PLANNER_BAD_ANSWER"   # not JSON, or not the schema's shape


@dataclass(frozen=True)
class Refusal:
    """No plan: the code, every reason, and what could have been meant (``candidates``:
    one line per task or binding that nearly fit, or every task with its templates)."""

    code: RefusalCode
    reasons: tuple[str, ...]
    candidates: tuple[str, ...] = ()
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code.value, "reasons": list(self.reasons),
                "candidates": list(self.candidates), "fix": self.fix}

    def error(self, instruction: str, planner: str) -> PlanningError:
        lines = "".join(f"\n  {c}" for c in self.candidates)
        head = "; ".join(self.reasons)
        listed = {RefusalCode.AMBIGUOUS: "candidates", RefusalCode.GAVE_UP: "tried"}.get(
            self.code, "tasks")
        return PlanningError(
            self.code.value, f"planner {planner!r} gave no plan for {instruction!r}: {head}"
            + (f"\n{listed}:{lines}" if lines else ""),
            fix=self.fix or None,
            details={"instruction": instruction, "planner": planner, **self.to_dict()})


@dataclass(frozen=True)
class Decision:
    """One planner call: which planner, the digest of what it was asked (its prompt, or the
    request), its answer (raw text for a model), and the plan or the refusal."""

    planner: str
    prompt_digest: str
    answer: Any
    plan: Plan | None = None
    refusal: Refusal | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"planner": self.planner, "prompt_digest": self.prompt_digest,
                "answer": self.answer,
                "plan": None if self.plan is None else self.plan.to_dict(),
                "refusal": None if self.refusal is None else self.refusal.to_dict()}


class Planner(Protocol):
    """Chooses a task and its parameters for an instruction. ``plan`` never raises for a
    bad instruction or a failing model: it answers a :class:`Decision` with a refusal."""

    name: str

    def plan(self, request: PlanRequest) -> Decision: ...

    def close(self) -> None: ...
