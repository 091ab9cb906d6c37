"""The task format as pydantic models: :class:`TaskSpec` and its parts.

One neutral model for every format: the YAML reader, the BehaviorTree.CPP importer and the
Python builder all produce a :class:`TaskSpec`. It is a superset of the neutral dict form that
:func:`harness_bt.authoring.task_from_dict` accepts (a file in that form loads unchanged), adding
the instruction, metadata, blackboard defaults, named guards and inline ``when`` guards, reusable
subtrees and includes.

Trees stay plain dicts here (``{"type": ..., "name": ..., <params>, <child ports>}``, or the
``{"skill": ...}`` / ``{"subtree": ...}`` shorthands): their shape depends on the node types
and skills registered, so :mod:`harness_bt.authoring.nodes` builds their models from the
registries' manifests.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    WithJsonSchema,
    model_validator,
)

from harness_bt.param_spec import PARAM_TYPES, ParamSpec

__all__ = [
    "EVENTS",
    "PARAM_TYPES",
    "PLACEHOLDER_PATTERN",
    "AtomicSpec",
    "BudgetSpec",
    "CompoundSpec",
    "FinalSpec",
    "HistorySpec",
    "LibrarySpec",
    "NodeDict",
    "ParallelSpec",
    "ParamSpec",
    "PhaseSpecT",
    "TaskSpec",
    "TransitionSpec",
    "phase_tag",
]

#: The events a transition can wait for: a tree's outcome, or ``done`` (a compound or parallel
#: phase reached its final state).
EVENTS = ("succeeded", "failed", "unknown", "budget_exhausted", "done")
Event = Literal["succeeded", "failed", "unknown", "budget_exhausted", "done"]

#: A tree: a node dict, validated against the registries' manifests; in the JSON Schema a
#: reference to ``#/$defs/Node`` (the schema module puts it in place of the marker).
NODE_REF = "x-harness-node"
NodeDict = Annotated[dict[str, Any], WithJsonSchema({NODE_REF: True})]

_ID = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: ``{name}``: a task parameter or a subtree input standing for a value
PLACEHOLDER_PATTERN = r"^\{[A-Za-z_][A-Za-z0-9_]*\}$"


def _text_or_int(value: Any) -> Any:
    value = integral(value)
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def integral(value: Any) -> Any:
    """``3.0`` -> ``3``: a whole number written with a decimal point is still a whole number
    (as JSON Schema's ``integer`` has it)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: A whole number; ``3.0`` reads as 3.
Int = Annotated[int, BeforeValidator(integral)]


Version = Annotated[str, BeforeValidator(_text_or_int),
                    WithJsonSchema({"type": ["string", "integer"],
                                    "description": "the task's version (text or a number)"})]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class BudgetSpec(_Spec):
    """The task's total budget: every retry and recovery of every node draws on it."""

    max_retries: Annotated[int, Field(ge=0), BeforeValidator(integral)] | None = Field(
        None, description="retries + recoveries in all")
    max_time_s: float | None = Field(None, gt=0, description="seconds from the first tick")


class TransitionSpec(_Spec):
    """On ``event``, go to ``target`` if ``reason`` (when given) is the outcome's reason and
    the guard (a registered or document ``guard`` by name, or an inline ``when`` expression)
    holds. Transitions are tried in order."""

    event: Event = Field(description="succeeded | failed | unknown | budget_exhausted | done")
    target: str = Field(description="the phase to go to")
    reason: str | None = Field(None, description="only when the outcome has this reason")
    guard: str | None = Field(None, description="a guard by name (document or registry)")
    when: str | None = Field(None, description="an inline guard over outcome / bb / world")
    description: str = ""

    model_config = ConfigDict(json_schema_extra={"not": {
        "required": ["guard", "when"],
        "properties": {"guard": {"type": "string"}, "when": {"type": "string"}}}})

    @model_validator(mode="after")
    def _one_guard(self) -> TransitionSpec:
        if self.guard is not None and self.when is not None:
            raise ValueError("give a guard by name or an inline 'when', not both")
        return self


class _PhaseBase(_Spec):
    id: str = Field(pattern=_ID, description="unique phase id (letters, digits, _)")
    description: str = ""


class AtomicSpec(_PhaseBase):
    """A phase that ticks one behaviour tree."""

    kind: Literal["atomic"] = "atomic"
    tree: NodeDict
    transitions: list[TransitionSpec] = Field(default_factory=list)


class CompoundSpec(_PhaseBase):
    """Nested phases, one active at a time (``initial`` defaults to the first)."""

    kind: Literal["compound"] = "compound"
    initial: str | None = None
    phases: list[PhaseSpecT] = Field(min_length=1)
    transitions: list[TransitionSpec] = Field(default_factory=list)


class ParallelSpec(_PhaseBase):
    """Regions active side by side (atomic or compound phases)."""

    kind: Literal["parallel"] = "parallel"
    regions: list[PhaseSpecT] = Field(min_length=1)
    transitions: list[TransitionSpec] = Field(default_factory=list)


class FinalSpec(_PhaseBase):
    """A final state; at the top level its ``reason`` (default: its id) is ``done`` or
    ``aborted_<why>``."""

    model_config = ConfigDict(json_schema_extra={
        "anyOf": [{"required": ["kind"]}, {"required": ["final"]}]})

    kind: Literal["final"] = "final"
    final: Literal[True] = Field(True, description="the neutral form's marker of a final")
    reason: str | None = None


class HistorySpec(_PhaseBase):
    """A history pseudo-phase inside a compound phase: a transition that targets it re-enters
    the compound in the phase that was active when it was last left (``deep``: the innermost
    one, through nested compounds; ``shallow``: the compound's direct phase, from its own
    initial phase), else in ``default`` (default: the compound's initial phase)."""

    kind: Literal["history"] = Field(description="history (always given)")
    type: Literal["shallow", "deep"] = Field("shallow", description="shallow | deep")
    default: str | None = Field(None, description="the phase of the compound entered before "
                                "it was ever left (default: its initial phase)")


def phase_tag(value: Any) -> str | None:
    """Which kind of phase a dict is: its ``kind``, else inferred from its keys."""
    if isinstance(value, BaseModel):
        return getattr(value, "kind", None)
    if not isinstance(value, dict):
        return None
    kind = value.get("kind")
    if kind is not None:
        return kind if isinstance(kind, str) else repr(kind)
    if value.get("final") is not None:
        return "final"
    for key, tag in (("tree", "atomic"), ("phases", "compound"), ("regions", "parallel")):
        if key in value:
            return tag
    return None


PhaseSpecT = Annotated[
    Annotated[AtomicSpec, Tag("atomic")] | Annotated[CompoundSpec, Tag("compound")]
    | Annotated[ParallelSpec, Tag("parallel")] | Annotated[FinalSpec, Tag("final")]
    | Annotated[HistorySpec, Tag("history")],
    Discriminator(phase_tag, custom_error_type="phase_kind",
                  custom_error_message="a phase needs a tree (atomic), phases (compound), "
                  "regions (parallel), kind: final or kind: history"),
]

CompoundSpec.model_rebuild()
ParallelSpec.model_rebuild()


ParamName = Annotated[str, StringConstraints(pattern=_ID)]


class TaskSpec(_Spec):
    """A task document."""

    name: str = Field(min_length=1, description="the task's name (also its task id)")
    version: Version = "1"
    description: str = ""
    instruction: str = Field("", description="the intent in words")
    instructions: list[str] = Field(
        default_factory=list, description="the phrasings a planner matches to choose this "
        "task ('{name}' binds a parameter; default: the instruction alone)")
    metadata: dict[str, Any] = Field(default_factory=dict,
                                     description="free-form: author, tags, source, ...")
    scene: str | None = Field(None, min_length=1, description="the simulator scene this task "
                              "runs on: a scene's name or a scene file's path")
    params: dict[ParamName, ParamSpec] = Field(
        default_factory=dict, description="parameters: name -> declaration; '{name}' in a "
        "tree's values stands for the value",
        json_schema_extra={"propertyNames": {"pattern": _ID}})
    includes: list[str] = Field(
        default_factory=list, description="YAML files (their subtrees and guards) or "
        "BehaviorTree.CPP XML files (each BehaviorTree is a subtree), relative to this file")
    blackboard: dict[str, Any] = Field(default_factory=dict,
                                       description="defaults written before the first tick")
    budget: BudgetSpec | None = None
    guards: dict[str, str] = Field(default_factory=dict,
                                   description="named guards: name -> expression")
    subtrees: dict[str, NodeDict] = Field(default_factory=dict,
                                          description="reusable trees: name -> tree")
    initial: str | None = None
    phases: list[PhaseSpecT] = Field(min_length=1)

    def phase_ids(self) -> list[str]:
        out: list[str] = []
        stack: list[Any] = list(reversed(self.phases))
        while stack:
            p = stack.pop()
            out.append(p.id)
            stack.extend(reversed(getattr(p, "phases", ()) or getattr(p, "regions", ())))
        return out


class LibrarySpec(_Spec):
    """An included YAML file: subtrees and guards for the tasks that include it."""

    description: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    includes: list[str] = Field(default_factory=list)
    guards: dict[str, str] = Field(default_factory=dict)
    subtrees: dict[str, NodeDict] = Field(default_factory=dict)
