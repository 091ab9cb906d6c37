"""Budgets: per task (total time, total retries), per node (attempts, backoff with full jitter),
circuit breakers per skill / bridge (docs/architecture.md, "Budgets").

Retries, backoff and breakers are different mechanisms: a retry asks whether an operation may be
repeated; backoff limits how often; a breaker stops calling a failing service for a while. Every
retry also draws on the task's budget, so no retry loop outlives the task. Exhaustion is an
explicit outcome with a named reason (:class:`Exhaustion`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from harness_bt.errors import DefinitionError

__all__ = [
    "Backoff",
    "BreakerBoard",
    "BreakerState",
    "CircuitBreaker",
    "Exhaustion",
    "TaskBudget",
]


class Exhaustion(StrEnum):
    """Why a budget ran out. Used as the ``reason`` of a ``budget_exhausted`` outcome."""

    ATTEMPTS = "ATTEMPTS_EXHAUSTED"  # a node's own attempts
    TASK_RETRIES = "TASK_RETRIES_EXHAUSTED"  # the task's total retries
    TASK_TIME = "TASK_TIME_EXHAUSTED"  # the task's total time (or not enough left to back off)
    OBSERVATIONS = "OBSERVATIONS_EXHAUSTED"  # an evaluator's re-observation bound


def _positive(name: str, value: float | None, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not allow_zero):
        raise DefinitionError(
            "INVALID_BUDGET",
            f"{name}={value!r} must be a {'non-negative' if allow_zero else 'positive'} "
            "finite number",
            fix=f"set {name} to a number, or None for no limit",
        )


@dataclass(frozen=True, slots=True)
class Backoff:
    """Full-jitter exponential backoff: attempt ``n`` (1-based) waits a uniform draw from
    ``[0, min(cap_s, base_s * 2**(n-1))]``. ``base_s=0`` retries at once."""

    base_s: float = 0.1
    cap_s: float = 2.0

    def __post_init__(self) -> None:
        _positive("base_s", self.base_s, allow_zero=True)
        _positive("cap_s", self.cap_s, allow_zero=True)

    def ceiling(self, attempt: int) -> float:
        return min(self.cap_s, self.base_s * (2 ** max(0, attempt - 1)))

    def delay(self, attempt: int, rng: random.Random) -> float:
        return rng.uniform(0.0, self.ceiling(attempt))


class TaskBudget:
    """The task's total budget. ``max_retries`` counts every retry and recovery of every node;
    ``max_time_s`` runs from :meth:`start`. ``None`` means no limit.

    :meth:`draw_retry` is the only way to spend a retry; every draw is reported to the
    ``on_draw`` listener (the trace).
    """

    def __init__(self, *, max_retries: int | None = None, max_time_s: float | None = None):
        if max_retries is not None and (isinstance(max_retries, bool)
                                        or not isinstance(max_retries, int) or max_retries < 0):
            raise DefinitionError(
                "INVALID_BUDGET", f"max_retries={max_retries!r} must be an int >= 0 or None"
            )
        _positive("max_time_s", max_time_s)
        self.max_retries = max_retries
        self.max_time_s = max_time_s
        self.retries_used = 0
        self.started_at: float | None = None
        self.on_draw: Callable[[dict[str, Any]], None] | None = None

    def copy(self) -> TaskBudget:
        """A fresh budget with the same limits (one per run)."""
        return TaskBudget(max_retries=self.max_retries, max_time_s=self.max_time_s)

    def start(self, now: float) -> None:
        self.started_at = now
        self.retries_used = 0

    def time_left(self, now: float) -> float:
        if self.max_time_s is None or self.started_at is None:
            return math.inf
        return self.max_time_s - (now - self.started_at)

    def retries_left(self) -> float:
        return math.inf if self.max_retries is None else self.max_retries - self.retries_used

    def exhausted(self, now: float) -> Exhaustion | None:
        if self.time_left(now) <= 0:
            return Exhaustion.TASK_TIME
        return None

    def draw_retry(self, now: float, *, node_path: str, delay_s: float = 0.0,
                   kind: str = "retry") -> Exhaustion | None:
        """Spend one retry (after ``delay_s`` of backoff). Returns None when granted, else why
        not; nothing is spent when refused."""
        refused: Exhaustion | None = None
        if self.retries_left() < 1:
            refused = Exhaustion.TASK_RETRIES
        elif self.time_left(now) <= delay_s:
            refused = Exhaustion.TASK_TIME
        else:
            self.retries_used += 1
        if self.on_draw is not None:
            self.on_draw({
                "kind": kind,
                "node_path": node_path,
                "granted": refused is None,
                "refused": None if refused is None else refused.value,
                "delay_s": delay_s,
                "retries_used": self.retries_used,
                "retries_left": None if self.max_retries is None else self.retries_left(),
                "time_left_s": None if self.max_time_s is None else self.time_left(now),
            })
        return refused

    def to_dict(self) -> dict[str, Any]:
        return {"max_retries": self.max_retries, "max_time_s": self.max_time_s}


class BreakerState(StrEnum):
    CLOSED = "CLOSED"  # calls pass
    OPEN = "OPEN"  # calls refused until the cool-down ends
    HALF_OPEN = "HALF_OPEN"  # one trial call passes; its result closes or re-opens


class CircuitBreaker:
    """Opens after ``failure_threshold`` consecutive failures; after ``reset_after_s`` lets one
    trial call through (HALF_OPEN); a success closes it, a failure opens it again."""

    def __init__(self, name: str, *, failure_threshold: int = 3, reset_after_s: float = 10.0):
        if isinstance(failure_threshold, bool) or not isinstance(failure_threshold, int) \
                or failure_threshold < 1:
            raise DefinitionError(
                "INVALID_BUDGET", f"failure_threshold={failure_threshold!r} must be an int >= 1"
            )
        _positive("reset_after_s", reset_after_s)
        self.name = name
        self.failure_threshold = failure_threshold
        self.reset_after_s = reset_after_s
        self.failures = 0
        self.opened_at: float | None = None
        self._trial_out = False
        self.on_change: Callable[[CircuitBreaker, BreakerState, BreakerState], None] | None = None

    def state(self, now: float) -> BreakerState:
        if self.opened_at is None:
            return BreakerState.CLOSED
        if now - self.opened_at >= self.reset_after_s:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def allow(self, now: float) -> bool:
        """May a call go through now? In HALF_OPEN only one trial call is let through."""
        st = self.state(now)
        if st is BreakerState.CLOSED:
            return True
        if st is BreakerState.HALF_OPEN and not self._trial_out:
            self._trial_out = True
            return True
        return False

    def record(self, ok: bool, now: float) -> None:
        before = self.state(now)
        self._trial_out = False
        if ok:
            self.failures = 0
            self.opened_at = None
        else:
            self.failures += 1
            if before is BreakerState.HALF_OPEN or self.failures >= self.failure_threshold:
                self.opened_at = now
        after = self.state(now)
        if after is not before and self.on_change is not None:
            self.on_change(self, before, after)

    def retry_at(self) -> float | None:
        return None if self.opened_at is None else self.opened_at + self.reset_after_s


class BreakerBoard:
    """One breaker per key (``skill:<name>``, ``bridge``), created on first use."""

    def __init__(self, *, failure_threshold: int = 3, reset_after_s: float = 10.0):
        CircuitBreaker("probe", failure_threshold=failure_threshold, reset_after_s=reset_after_s)
        self.failure_threshold = failure_threshold
        self.reset_after_s = reset_after_s
        self._breakers: dict[str, CircuitBreaker] = {}
        self.on_change: Callable[[CircuitBreaker, BreakerState, BreakerState], None] | None = None

    def get(self, key: str) -> CircuitBreaker:
        br = self._breakers.get(key)
        if br is None:
            br = CircuitBreaker(key, failure_threshold=self.failure_threshold,
                                reset_after_s=self.reset_after_s)
            br.on_change = self._changed
            self._breakers[key] = br
        return br

    def _changed(self, br: CircuitBreaker, before: BreakerState, after: BreakerState) -> None:
        if self.on_change is not None:
            self.on_change(br, before, after)

    def states(self, now: float) -> dict[str, str]:
        return {k: b.state(now).value for k, b in sorted(self._breakers.items())}
