"""Decorators that spend budgets: :class:`Retry` (attempts + full-jitter backoff, drawing on the
task's budget) and the small pieces of the recovery idiom."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import py_trees
from py_trees.common import Status

from harness_bt.budget import Backoff, Exhaustion
from harness_bt.context import Outcome, OutcomeKind
from harness_bt.errors import DefinitionError
from harness_bt.events import TraceKind
from harness_bt.nodes.base import GatedDecorator, HarnessNode, NodeManifest, Port

__all__ = ["RecoveryDone", "RecoveryGate", "RecoveryGuard", "Retry"]


def _backoff(value: Backoff | Mapping[str, Any] | None) -> Backoff:
    if value is None:
        return Backoff()
    if isinstance(value, Backoff):
        return value
    return Backoff(**dict(value))


class Retry(GatedDecorator):
    """Run the child again when it fails, up to ``attempts`` runs in all.

    A failure is retried only when its outcome kind is in ``retry_on`` (default: ``failed``) and
    it is retryable (a skill that is not ``retry_safe``, an UNKNOWN command, a broken recovery:
    not). Before each retry the node waits a full-jitter backoff (seeded RNG: the run's seed and
    the node path, or ``rng``) and draws one retry from the task budget.

    - **RUNNING**: the child is running, or the node is waiting out a backoff.
    - **SUCCESS**: the child succeeded (on any attempt).
    - **FAILURE**: a failure that is not retried (its own outcome passes through), or the
      budget is spent: outcome ``budget_exhausted`` with reason ``ATTEMPTS_EXHAUSTED``,
      ``TASK_RETRIES_EXHAUSTED`` or ``TASK_TIME_EXHAUSTED`` and the last failure as its cause.
    """

    MANIFEST = NodeManifest(
        "retry", "decorator", "Retry a failed child with full-jitter backoff under budgets.",
        (
            Port("child", "tree", True),
            Port("attempts", "int", default=3, description="runs in all, the first included"),
            Port("backoff", "dict", description="{base_s, cap_s} (full jitter)"),
            Port("retry_on", "list", default=["failed"],
                 description="outcome kinds worth retrying"),
        ),
        {"SUCCESS": "the child succeeded",
         "FAILURE": "not retryable, or budget_exhausted (named reason)",
         "RUNNING": "child running or backing off"},
    )

    counter = "retries"  # which run counter a granted retry adds to

    def __init__(self, name: str, child: py_trees.behaviour.Behaviour, *, attempts: int = 3,
                 backoff: Backoff | Mapping[str, Any] | None = None,
                 retry_on: Sequence[str] = ("failed",), rng: random.Random | None = None
                 ) -> None:
        super().__init__(name=name, child=child)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise DefinitionError("INVALID_NODE",
                                  f"retry {name!r}: attempts={attempts!r} must be an int >= 1",
                                  node_path=name)
        try:
            self.retry_on = frozenset(OutcomeKind(k) for k in retry_on)
        except ValueError:
            raise DefinitionError(
                "INVALID_NODE", f"retry {name!r}: retry_on={list(retry_on)!r} must name outcome "
                f"kinds {[k.value for k in OutcomeKind if k is not OutcomeKind.SUCCEEDED]}",
                node_path=name) from None
        self.attempts = attempts
        self.backoff = _backoff(backoff)
        self._rng_given = rng
        self.rng = rng
        self.attempt = 1
        self._resume_at: float | None = None

    def params(self) -> dict[str, Any]:
        return {"attempts": self.attempts,
                "backoff": {"base_s": self.backoff.base_s, "cap_s": self.backoff.cap_s},
                "retry_on": sorted(k.value for k in self.retry_on)}

    def bind(self) -> None:
        if self._rng_given is None:
            self.rng = random.Random(f"{self.context.seed}/{self.scope.phase}/{self.path}")

    def initialise(self) -> None:
        self.attempt = 1
        self._resume_at = None

    def gate(self) -> Status | None:
        """RUNNING while the backoff before the next attempt lasts."""
        if self._resume_at is not None:
            if self.context.now < self._resume_at:
                return Status.RUNNING
            self._resume_at = None
        return None

    def update(self) -> Status:
        child = self.decorated.status
        if child is Status.SUCCESS:
            return Status.SUCCESS
        if child is not Status.FAILURE:
            return Status.RUNNING
        ctx = self.context
        last = self.scope.failure_this_tick() or Outcome(
            OutcomeKind.FAILED, "FAILED", self.decorated_path())
        if last.kind not in self.retry_on or not last.retryable:
            self.feedback_message = f"not retried: {last.kind.value} {last.reason}"
            self.scope.record(last, emit=False)  # pass the cause up unchanged
            return Status.FAILURE
        if self.attempt >= self.attempts:
            return self.fail(OutcomeKind.BUDGET_EXHAUSTED, Exhaustion.ATTEMPTS.value,
                             retryable=False, cause=last, attempts=self.attempts)
        assert self.rng is not None
        delay = self.backoff.delay(self.attempt, self.rng)
        refused = ctx.budget.draw_retry(ctx.now, node_path=self.path, delay_s=delay,
                                        kind=self.counter)
        if refused is not None:
            return self.fail(OutcomeKind.BUDGET_EXHAUSTED, refused.value, retryable=False,
                             cause=last, attempt=self.attempt)
        ctx.count(self.counter)
        self.attempt += 1
        self._resume_at = ctx.now + delay
        ctx.plan_version += 1
        self.feedback_message = f"attempt {self.attempt}/{self.attempts} in {delay:.3f} s " \
                                f"after {last.reason}"
        return Status.RUNNING

    def decorated_path(self) -> str:
        return getattr(self.decorated, "harness_path", self.decorated.name)


class RecoveryGate(HarnessNode):
    """First step of a recovery branch: lets the recovery run only after a plain failure.

    - **SUCCESS**: the attempt failed with outcome ``failed`` (a recovery may help).
    - **FAILURE**: it ended ``unknown`` or ``budget_exhausted`` (no recovery: UNKNOWN is not a
      reason to redo); the attempt's outcome is passed on, not retryable.
    """

    MANIFEST = NodeManifest(
        "recovery_gate", "condition", "Recover only from a plain failure.", (),
        {"SUCCESS": "the attempt failed plainly", "FAILURE": "it ended unknown/exhausted"},
        internal=True,
    )

    def update(self) -> Status:
        last = self.scope.failure_this_tick()
        if last is None or (last.kind is OutcomeKind.FAILED and last.retryable):
            return Status.SUCCESS
        self.scope.record(Outcome(last.kind, last.reason, last.node_path, False,
                                  last.command_id, last.details, last.cause))
        return Status.FAILURE


class RecoveryGuard(HarnessNode, py_trees.decorators.Decorator):
    """Wraps a recovery subtree: its failure ends the branch.

    - **SUCCESS** / **RUNNING**: as the recovery.
    - **FAILURE**: the recovery failed: outcome kept (``failed`` unless it was ``unknown``),
      reason ``RECOVERY_FAILED``, not retryable, with the recovery's failure as cause.
    """

    MANIFEST = NodeManifest(
        "recovery_guard", "decorator", "A failed recovery ends the branch.",
        (Port("child", "tree", True),),
        {"SUCCESS": "recovery done", "FAILURE": "recovery failed (not retried)",
         "RUNNING": "recovery running"},
        internal=True,
    )

    def update(self) -> Status:
        status = self.decorated.status
        if status is not Status.FAILURE:
            return status
        cause = self.scope.failure_this_tick()
        kind = cause.kind if cause is not None and cause.kind is OutcomeKind.UNKNOWN \
            else OutcomeKind.FAILED
        return self.fail(kind, "RECOVERY_FAILED", retryable=False, cause=cause)


class RecoveryDone(HarnessNode):
    """Last step of a recovery branch: the recovery finished, which is not the task's success.

    - **FAILURE** (always): outcome ``failed``, reason ``RECOVERED``, retryable, so the enclosing
      retry runs the attempt again under its budget.
    """

    MANIFEST = NodeManifest(
        "recovery_done", "action", "Hand control back to the attempt after a recovery.", (),
        {"FAILURE": "always: the attempt must run again"},
        internal=True,
    )

    def update(self) -> Status:
        self.context.emit(TraceKind.RECOVERY, phase=self.scope.phase, node_path=self.path)
        return self.fail(OutcomeKind.FAILED, "RECOVERED", retryable=True)
