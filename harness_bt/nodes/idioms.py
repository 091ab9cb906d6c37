"""Ready-made subtrees, as plain functions returning trees (the py_trees ``idioms`` habit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import py_trees

from harness_bt.budget import Backoff
from harness_bt.nodes.decorators import RecoveryDone, RecoveryGate, RecoveryGuard, Retry
from harness_bt.nodes.evaluate import Evaluate
from harness_bt.nodes.skill_action import SkillAction

__all__ = ["act_and_evaluate", "recover"]


class _RecoverRetry(Retry):
    counter = "recoveries"


def recover(
    attempt: py_trees.behaviour.Behaviour,
    recovery: py_trees.behaviour.Behaviour,
    budget: int = 2,
    *,
    name: str = "recover",
    backoff: Backoff | Mapping[str, Any] | None = None,
) -> py_trees.behaviour.Behaviour:
    """Run ``attempt``; when it fails, run ``recovery``; when the recovery succeeds, run the
    attempt again, at most ``budget`` runs of the attempt in all (each rerun draws one retry from
    the task budget and counts as a recovery).

    A recovery that succeeds never makes the branch succeed by itself: only the attempt can.
    An attempt that ends ``unknown`` (or ``budget_exhausted``) is not recovered from: UNKNOWN is
    not a reason to redo. A recovery that fails ends the branch (``RECOVERY_FAILED``). When the
    runs are spent the branch ends ``budget_exhausted`` (``ATTEMPTS_EXHAUSTED``).

    Shape::

        retry <name> (attempts=budget)
          selector <name>.try (memory)
            <attempt>
            sequence <name>.recovery (memory)
              recovery_gate <name>.gate     only after a plain failure
              recovery_guard <name>.guard   a failed recovery ends the branch
                <recovery>
              recovery_done <name>.again    FAILURE: back to the attempt
    """
    branch = py_trees.composites.Sequence(
        f"{name}.recovery", memory=True,
        children=[RecoveryGate(f"{name}.gate"), RecoveryGuard(f"{name}.guard", recovery),
                  RecoveryDone(f"{name}.again")],
    )
    try_ = py_trees.composites.Selector(f"{name}.try", memory=True, children=[attempt, branch])
    return _RecoverRetry(name, try_, attempts=budget,
                         backoff=backoff if backoff is not None else Backoff(0.0, 0.0))


def act_and_evaluate(
    name: str,
    skill: str,
    *,
    params: Mapping[str, Any] | None = None,
    inputs: Mapping[str, str] | None = None,
    objects: Mapping[str, str] | None = None,
    snapshot: str | None = None,
    premises: Sequence[str] = (),
    max_observations: int = 3,
) -> py_trees.behaviour.Behaviour:
    """``sequence <name> [skill_action <name>.act, evaluate <name>.check]``: run a skill, then
    judge it from observations (the command id travels on the blackboard as ``<name>.cmd``)."""
    return py_trees.composites.Sequence(name, memory=True, children=[
        SkillAction(f"{name}.act", skill, params=params, inputs=inputs, objects=objects,
                    snapshot=snapshot, premises=premises, output=f"{name}.cmd"),
        Evaluate(f"{name}.check", f"{name}.cmd", max_observations=max_observations),
    ])
