"""Skill contracts: what a command means, as the harness sees it (docs/architecture.md,
"Skills").

A skill has three contracts. The *syntax* contract is its pydantic params model. The *physical*
contract is :meth:`SkillContract.check` against the current world (frames, workspace, finite
values, reachability). The *lifecycle* contract (:class:`Lifecycle`) says how long it may take
to start and to run, how soon it must show progress, whether a retry is safe, whether it needs a
fresh observation, and what a cancel does. Postconditions name the evaluators that judge the
physical result from observations (never from the executor's report).

Contracts live harness-side; executors (how a skill runs step by step) live runtime-side. A
:class:`SkillRegistry` is an instance, filled from code and from the ``harness_bt.skills``
entry-point group.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from harness_bt.errors import DefinitionError
from harness_bt.plugins import Group, Registry

if TYPE_CHECKING:
    from harness_bt.world import WorldView

__all__ = [
    "CancelBehaviour",
    "Lifecycle",
    "NoParams",
    "Postcondition",
    "Skill",
    "SkillContract",
    "SkillRegistry",
    "Violation",
    "validate_params",
]


class CancelBehaviour(StrEnum):
    """What the executor does when asked to stop."""

    STOP_AND_HOLD = "stop_and_hold"  # decelerate, then hold position (arms, bases)
    STOP_AND_OPEN = "stop_and_open"  # stop and open the hand (a grasp that must not crush)
    RUN_TO_COMPLETION = "run_to_completion"  # cannot be interrupted; the stop waits for the end


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """The lifecycle contract of a skill.

    ``start_within_ms``: start budget from acceptance (never refreshed by a resend).
    ``execution_timeout_ms``: one execution, from its start. ``stop_timeout_ms``: how long a stop
    may take to be confirmed before the command becomes UNKNOWN. ``progress_timeout_ms``: the
    longest silence (no progress event) before the harness calls it NO_PROGRESS and cancels;
    ``None`` disables the check. ``retry_safe``: a failed attempt may be repeated without harm.
    ``needs_fresh_observation_ms``: the newest observation must be at most this old when the
    command is planned (``None``: no requirement).
    """

    start_within_ms: float = 1_000.0
    execution_timeout_ms: float = 30_000.0
    stop_timeout_ms: float = 1_000.0
    progress_timeout_ms: float | None = None
    retry_safe: bool = True
    needs_fresh_observation_ms: float | None = None
    cancel: CancelBehaviour = CancelBehaviour.STOP_AND_HOLD

    def problems(self) -> list[str]:
        out = []
        for name in ("start_within_ms", "execution_timeout_ms", "stop_timeout_ms"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                out.append(f"{name}={value!r} must be a positive finite number of milliseconds")
        for name in ("progress_timeout_ms", "needs_fresh_observation_ms"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                out.append(f"{name}={value!r} must be positive (or None to disable)")
        return out


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule of a contract: which field, what is wrong, the offending value, and a fix."""

    field: str
    message: str
    code: str = "CONTRACT_VIOLATION"
    value: Any = None
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.field}: {self.message}"
        if self.value is not None:
            text += f" (got {self.value!r})"
        if self.fix:
            text += f"; {self.fix}"
        return text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.field, "message": self.message, "code": self.code}
        if self.value is not None:
            out["value"] = self.value if isinstance(self.value, str | int | float) else repr(
                self.value
            )
        if self.fix:
            out["fix"] = self.fix
        return out


@dataclass(frozen=True, slots=True)
class Postcondition:
    """A fact an evaluator must confirm from observations: ``evaluator`` names an entry of the
    :class:`harness_bt.evaluation.EvaluatorRegistry`; ``params`` are its arguments."""

    evaluator: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"evaluator": self.evaluator, "params": dict(self.params)}


class NoParams(BaseModel):
    """The params model of a skill that takes none."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@runtime_checkable
class SkillContract(Protocol):
    """What the harness must know about a skill. :class:`Skill` is the ready-made implementation."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def params_model(self) -> type[BaseModel]: ...

    @property
    def resources(self) -> tuple[str, ...]: ...

    @property
    def lifecycle(self) -> Lifecycle: ...

    @property
    def description(self) -> str: ...

    def check(self, params: BaseModel, world: WorldView) -> list[Violation]:
        """The physical contract: every problem with these params in this world (empty: fine)."""
        ...

    def postconditions(self, params: BaseModel) -> list[Postcondition]:
        """What must hold after the control action, for an evaluator to judge."""
        ...


CheckFn = Callable[[Any, "WorldView"], Sequence[Violation]]
PostFn = Callable[[Any], Sequence[Postcondition]]


@dataclass(frozen=True)
class Skill:
    """A skill contract from plain parts.

    >>> from pydantic import BaseModel
    >>> class GraspParams(BaseModel):
    ...     object_id: str
    >>> grasp = Skill("grasp", GraspParams, resources=("arm", "gripper"),
    ...               postconditions=lambda p: [Postcondition("object_held",
    ...                                                       {"object_id": p.object_id})])
    >>> grasp.postconditions(GraspParams(object_id="cup"))[0].evaluator
    'object_held'
    """

    name: str
    params_model: type[BaseModel] = NoParams
    resources: tuple[str, ...] = ()
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    check_fn: CheckFn | None = None
    postconditions_fn: PostFn | None = None
    description: str = ""
    version: str = "1"

    def __init__(
        self,
        name: str,
        params_model: type[BaseModel] = NoParams,
        *,
        resources: Sequence[str] = (),
        lifecycle: Lifecycle | None = None,
        check: CheckFn | None = None,
        postconditions: PostFn | None = None,
        description: str = "",
        version: str = "1",
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "params_model", params_model)
        object.__setattr__(self, "resources", tuple(resources))
        object.__setattr__(self, "lifecycle", lifecycle or Lifecycle())
        object.__setattr__(self, "check_fn", check)
        object.__setattr__(self, "postconditions_fn", postconditions)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "version", version)
        problems = self.definition_problems()
        if problems:
            raise DefinitionError(
                "INVALID_SKILL",
                f"skill {name!r}: " + "; ".join(problems),
                fix="fix the skill definition",
                details={"problems": problems},
            )

    def definition_problems(self) -> list[str]:
        out = list(self.lifecycle.problems())
        if not isinstance(self.name, str) or not self.name.strip():
            out.append(f"name {self.name!r} must be a non-empty string")
        if not (isinstance(self.params_model, type) and issubclass(self.params_model, BaseModel)):
            out.append(f"params_model {self.params_model!r} must be a pydantic model class")
        if len(set(self.resources)) != len(self.resources):
            out.append(f"resources {list(self.resources)} name a resource twice")
        return out

    def check(self, params: BaseModel, world: WorldView) -> list[Violation]:
        return [] if self.check_fn is None else list(self.check_fn(params, world))

    def postconditions(self, params: BaseModel) -> list[Postcondition]:
        return [] if self.postconditions_fn is None else list(self.postconditions_fn(params))


def validate_params(skill: SkillContract, params: Mapping[str, Any]) -> tuple[
    BaseModel | None, list[Violation]
]:
    """The syntax contract: ``(model, [])`` when ``params`` fit the skill's model, else
    ``(None, problems)`` with one problem per pydantic error."""
    try:
        return skill.params_model.model_validate(dict(params)), []
    except ValidationError as exc:
        problems = [
            Violation(
                field="params." + ".".join(str(p) for p in err["loc"]) if err["loc"] else "params",
                message=err["msg"],
                code="INVALID_PARAMS",
                value=err.get("input") if err["type"] != "missing" else None,
                fix=f"see skill {skill.name!r} params model {skill.params_model.__name__}",
            )
            for err in exc.errors()
        ]
        return None, problems


def _validate_skill(name: str, item: Any) -> None:
    if not isinstance(item, SkillContract):
        raise DefinitionError(
            "INVALID_SKILL",
            f"skill {name!r} ({type(item).__name__}) does not implement SkillContract "
            "(name, version, params_model, resources, lifecycle, description, check, "
            "postconditions)",
            fix="build it with harness_bt.skill.Skill or implement the protocol",
        )
    if item.name != name:
        raise DefinitionError(
            "INVALID_SKILL",
            f"skill registered as {name!r} calls itself {item.name!r}",
            fix="register it under its own name",
        )


class SkillRegistry(Registry[SkillContract]):
    """Skill name -> contract. Refuses duplicates; unknown names get a did-you-mean."""

    def __init__(self, skills: Sequence[SkillContract] = (), *, entry_points: bool = False):
        super().__init__("skill", validate=_validate_skill)
        for skill in skills:
            self.add(skill)
        if entry_points:
            self.load(Group.SKILLS)

    def add(self, skill: SkillContract, *, origin: str = "code") -> SkillContract:
        return self.register(skill.name, skill, origin=origin)
