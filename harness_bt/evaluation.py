"""Three-valued evaluation with evidence (docs/architecture.md, "Evaluation").

An evaluator judges one postcondition from the latest observation and the world model, never
from the executor's report: ``evaluator(postcondition, observation, world) -> EvaluationResult``.
The verdict is SUCCEEDED, FAILED or UNKNOWN, always with evidence. UNKNOWN (occluded, stale, low
confidence) is neither success nor a reason to redo.

:class:`EvaluatorRegistry` is an instance, built with the built-ins below and filled from code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harness_bt.errors import DefinitionError
from harness_bt.ledger import Verdict
from harness_bt.plugins import Group, Origin, Registry
from harness_bt.runtime.observation import Observation
from harness_bt.skill import Postcondition
from harness_bt.world import Pose, Relation, WorldView

__all__ = [
    "EvaluationResult",
    "Evaluator",
    "EvaluatorRegistry",
    "combine",
    "ee_at",
    "gripper_open",
    "object_held",
    "object_on",
    "object_visible",
]


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """A verdict (SUCCEEDED / FAILED / UNKNOWN) and the evidence for it (JSON-ready items)."""

    verdict: Verdict
    evidence: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        v = Verdict(str(self.verdict))
        if v is Verdict.CANCELED:
            raise DefinitionError(
                "INVALID_VERDICT",
                "an evaluator answers SUCCEEDED, FAILED or UNKNOWN, not CANCELED",
            )
        object.__setattr__(self, "verdict", v)
        object.__setattr__(self, "evidence", tuple(self.evidence))

    @classmethod
    def succeeded(cls, *evidence: Any) -> EvaluationResult:
        return cls(Verdict.SUCCEEDED, evidence)

    @classmethod
    def failed(cls, *evidence: Any) -> EvaluationResult:
        return cls(Verdict.FAILED, evidence)

    @classmethod
    def unknown(cls, *evidence: Any) -> EvaluationResult:
        return cls(Verdict.UNKNOWN, evidence)


@runtime_checkable
class Evaluator(Protocol):
    def __call__(self, postcondition: Postcondition, observation: Observation,
                 world: WorldView) -> EvaluationResult: ...


def combine(results: Sequence[EvaluationResult]) -> EvaluationResult:
    """All postconditions must hold: any FAILED -> FAILED; else any UNKNOWN -> UNKNOWN; else
    SUCCEEDED. Evidence of every result is kept, in order."""
    evidence = tuple(e for r in results for e in r.evidence)
    verdicts = {r.verdict for r in results}
    if Verdict.FAILED in verdicts:
        return EvaluationResult(Verdict.FAILED, evidence)
    if Verdict.UNKNOWN in verdicts or not results:
        return EvaluationResult(Verdict.UNKNOWN, evidence or ("no postcondition to check",))
    return EvaluationResult(Verdict.SUCCEEDED, evidence)


def _param(post: Postcondition, name: str, default: Any = None) -> Any:
    if name in post.params:
        return post.params[name]
    if default is None:
        raise DefinitionError(
            "INVALID_POSTCONDITION",
            f"postcondition {post.evaluator!r} needs param {name!r}; got {sorted(post.params)}",
            fix=f"add {name!r} to the skill's postcondition params",
        )
    return default


def _seen(post: Postcondition, observation: Observation, world: WorldView, oid: str
          ) -> tuple[Any, EvaluationResult | None]:
    """The object as seen in *this* observation, or an UNKNOWN result saying why not."""
    min_conf = float(post.params.get("min_confidence", 0.5))
    obj = world.get(oid)
    if obj is None:
        return None, EvaluationResult.unknown(f"{oid} has never been observed")
    if obj.provenance.timestep != observation.timestep:
        return None, EvaluationResult.unknown(
            f"{oid} not seen in observation t={observation.timestep} (last seen at "
            f"t={obj.provenance.timestep}, {world.now - obj.provenance.observed_at:.3f} s ago)"
        )
    if obj.confidence < min_conf:
        return None, EvaluationResult.unknown(
            f"{oid} seen with confidence {obj.confidence:.2f} < {min_conf:.2f} "
            f"(camera {obj.provenance.camera or '?'}, t={obj.provenance.timestep}): occluded?"
        )
    return obj, None


def object_held(post: Postcondition, observation: Observation, world: WorldView
                ) -> EvaluationResult:
    """``object_id`` is held by ``by`` (default ``gripper``), seen in this observation with
    enough confidence. A closed gripper with nothing between the fingers (``min_width_m``,
    Panda only) is a second, independent piece of evidence of a miss."""
    oid = str(_param(post, "object_id"))
    by = str(post.params.get("by", "gripper"))
    obj, why = _seen(post, observation, world, oid)
    width = observation.gripper_width
    min_width = float(post.params.get("min_width_m", 0.002))
    if why is not None:
        return why
    held = obj.relations.get(Relation.HELD_BY)
    evidence: list[Any] = [
        f"{oid} at {[round(v, 3) for v in obj.pose.position]} conf {obj.confidence:.2f} "
        f"(camera {obj.provenance.camera or '?'}, t={obj.provenance.timestep})"
    ]
    if width is not None:
        evidence.append(f"gripper width {width:.4f} m")
    if held == by:
        if width is not None and width < min_width:
            return EvaluationResult.unknown(
                *evidence, f"scene says {oid} held by {by}, but the gripper is fully closed"
            )
        return EvaluationResult.succeeded(*evidence, f"{oid} held_by {by}")
    return EvaluationResult.failed(*evidence, f"{oid} is not held by {by} (held_by={held})")


def object_on(post: Postcondition, observation: Observation, world: WorldView
              ) -> EvaluationResult:
    """``object_id`` rests ``on`` ``target`` and is no longer held."""
    oid = str(_param(post, "object_id"))
    target = str(_param(post, "target"))
    obj, why = _seen(post, observation, world, oid)
    if why is not None:
        return why
    evidence = f"{oid} at {[round(v, 3) for v in obj.pose.position]} t={obj.provenance.timestep}"
    if obj.relations.get(Relation.ON) == target and Relation.HELD_BY not in obj.relations:
        return EvaluationResult.succeeded(evidence, f"{oid} on {target}")
    return EvaluationResult.failed(
        evidence, f"{oid} not on {target} (relations {dict(obj.relations)})"
    )


def ee_at(post: Postcondition, observation: Observation, world: WorldView) -> EvaluationResult:
    """The end effector (``arm`` index, default 0) is within ``tolerance_m`` of ``target``
    (3 or 7 numbers) in this observation."""
    target = Pose.of(_param(post, "target"))
    tol = float(post.params.get("tolerance_m", 0.02))
    arm = int(post.params.get("arm", 0))
    if arm >= len(observation.ee_poses):
        return EvaluationResult.unknown(f"observation has no end-effector pose for arm {arm}")
    pos = tuple(float(v) for v in observation.ee_poses[arm].position)
    if not all(math.isfinite(v) for v in pos):
        return EvaluationResult.unknown(f"end-effector position {pos} is not finite")
    err = math.dist(pos, target.position)
    evidence = f"ee at {[round(v, 3) for v in pos]}, target {list(target.position)}, " \
               f"error {err:.4f} m (tolerance {tol} m), t={observation.timestep}"
    if err <= tol:
        return EvaluationResult.succeeded(evidence)
    return EvaluationResult.failed(evidence)


def object_visible(post: Postcondition, observation: Observation, world: WorldView
                   ) -> EvaluationResult:
    """``object_id`` is seen in this observation with at least ``min_confidence``. Never FAILED
    on a single frame: not seeing something is UNKNOWN (it may be occluded)."""
    oid = str(_param(post, "object_id"))
    obj, why = _seen(post, observation, world, oid)
    if why is not None:
        return why
    return EvaluationResult.succeeded(
        f"{oid} seen at {[round(v, 3) for v in obj.pose.position]} conf {obj.confidence:.2f} "
        f"(camera {obj.provenance.camera or '?'}, t={obj.provenance.timestep})")


def gripper_open(post: Postcondition, observation: Observation, world: WorldView
                 ) -> EvaluationResult:
    """The fingers are at least ``min_width_m`` (default 0.07) apart (Panda joint positions)."""
    width = observation.gripper_width
    need = float(post.params.get("min_width_m", 0.07))
    if width is None:
        return EvaluationResult.unknown("observation has no gripper finger positions")
    evidence = f"gripper width {width:.4f} m (open at >= {need} m), t={observation.timestep}"
    if width >= need:
        return EvaluationResult.succeeded(evidence)
    return EvaluationResult.failed(evidence)


EvaluatorFn = Callable[[Postcondition, Observation, WorldView], EvaluationResult]


def _validate(name: str, item: Any) -> None:
    if not callable(item):
        raise DefinitionError(
            "INVALID_EVALUATOR",
            f"evaluator {name!r} is {type(item).__name__}, not a callable "
            "(postcondition, observation, world) -> EvaluationResult",
        )


class EvaluatorRegistry(Registry[EvaluatorFn]):
    """Evaluator name -> callable. Built with ``object_held``, ``object_on``,
    ``object_visible``, ``gripper_open`` and ``ee_at`` unless ``builtins=False``;
    ``entry_points=True`` also loads the ``harness_bt.evaluators`` group."""

    def __init__(self, *, builtins: bool = True, entry_points: bool = False) -> None:
        super().__init__("evaluator", validate=_validate)
        if builtins:
            for name, fn in (("object_held", object_held), ("object_on", object_on),
                             ("object_visible", object_visible), ("gripper_open", gripper_open),
                             ("ee_at", ee_at)):
                self.register(name, fn, origin=Origin("built in (harness_bt.evaluation)"))
        if entry_points:
            self.load(Group.EVALUATORS)

    def evaluate(self, postconditions: Sequence[Postcondition], observation: Observation,
                 world: WorldView) -> EvaluationResult:
        """Run every postcondition and :func:`combine` the results. An evaluator that raises is
        an UNKNOWN with the error as evidence (a broken evaluator proves nothing)."""
        results = []
        for post in postconditions:
            fn = self.get(post.evaluator)
            try:
                res = fn(post, observation, world)
            except DefinitionError:
                raise
            except Exception as exc:  # an evaluator bug must not look like a verdict
                res = EvaluationResult.unknown(
                    f"evaluator {post.evaluator!r} raised {type(exc).__name__}: {exc}"
                )
            if not isinstance(res, EvaluationResult):
                raise DefinitionError(
                    "INVALID_EVALUATOR",
                    f"evaluator {post.evaluator!r} returned {type(res).__name__}, "
                    "expected EvaluationResult",
                )
            results.append(res)
        return combine(results)
