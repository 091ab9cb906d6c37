"""Backoff with full jitter, the task budget, circuit breakers."""

from __future__ import annotations

import random

import pytest

from harness_bt import Backoff, CircuitBreaker, DefinitionError, Exhaustion, TaskBudget
from harness_bt.budget import BreakerBoard, BreakerState


def test_full_jitter_stays_under_the_capped_exponential_and_is_seeded() -> None:
    b = Backoff(0.1, 1.0)
    assert [b.ceiling(n) for n in (1, 2, 3, 4, 5)] == [0.1, 0.2, 0.4, 0.8, 1.0]
    one = [b.delay(n, random.Random(5)) for n in range(1, 8)]
    two = [b.delay(n, random.Random(5)) for n in range(1, 8)]
    assert one == two
    draws = [b.delay(3, random.Random(i)) for i in range(200)]
    assert all(0 <= d <= 0.4 for d in draws) and max(draws) > 0.3 and min(draws) < 0.1
    with pytest.raises(DefinitionError, match="base_s=-1 must be a non-negative"):
        Backoff(-1)


def test_task_budget_counts_retries_and_time_and_reports_every_draw() -> None:
    seen: list[dict] = []
    b = TaskBudget(max_retries=2, max_time_s=10.0)
    b.on_draw = seen.append
    b.start(100.0)
    assert b.draw_retry(101.0, node_path="a") is None
    assert b.draw_retry(102.0, node_path="a", delay_s=9.0) is Exhaustion.TASK_TIME
    assert b.draw_retry(102.0, node_path="a") is None
    assert b.draw_retry(103.0, node_path="b") is Exhaustion.TASK_RETRIES
    assert b.retries_used == 2 and b.exhausted(110.0) is Exhaustion.TASK_TIME
    assert [(d["granted"], d["refused"]) for d in seen] == [
        (True, None), (False, "TASK_TIME_EXHAUSTED"), (True, None),
        (False, "TASK_RETRIES_EXHAUSTED")]
    with pytest.raises(DefinitionError, match="max_retries=-1"):
        TaskBudget(max_retries=-1)
    assert TaskBudget().time_left(5.0) == float("inf")


def test_breaker_opens_half_opens_with_one_trial_and_closes() -> None:
    changes: list[tuple[str, str]] = []
    br = CircuitBreaker("skill:grasp", failure_threshold=2, reset_after_s=5.0)
    br.on_change = lambda b, a, c: changes.append((a.value, c.value))
    br.record(False, 0.0)
    assert br.allow(0.0)
    br.record(False, 1.0)
    assert br.state(1.0) is BreakerState.OPEN and not br.allow(2.0)
    assert br.state(6.0) is BreakerState.HALF_OPEN
    assert br.allow(6.0) and not br.allow(6.1)  # one trial only
    br.record(False, 6.2)  # the trial failed: open again
    assert br.state(6.3) is BreakerState.OPEN and br.retry_at() == pytest.approx(11.2)
    assert br.allow(11.3)
    br.record(True, 11.4)
    assert br.state(11.4) is BreakerState.CLOSED
    assert changes == [("CLOSED", "OPEN"), ("HALF_OPEN", "OPEN"), ("HALF_OPEN", "CLOSED")]
    board = BreakerBoard(failure_threshold=1)
    board.get("bridge").record(False, 0.0)
    assert board.states(0.0) == {"bridge": "OPEN"}
